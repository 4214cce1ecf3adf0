"""``python -m sft export``: trajectories -> a LlamaFactory dataset directory or a Hub dataset.

LlamaFactory formats (``sharegpt``, ``alpaca``) write ``<name>.json`` (the rows),
``dataset_info.json`` (merged with an existing one, so several exports can share a directory),
``<name>.report.json`` (kept, dropped and why) and ``README.md``, the folder's dataset card
(:mod:`sft.card`). ``--format hf`` writes the release's SFT
trajectory layout (``traj_type``, ``task_info``, ``tools``, ``messages``, ``user_messages``,
``steps``) as Parquet plus a dataset card that ``datasets.load_dataset`` reads, and
``--push-to-hub REPO`` uploads it when a Hugging Face token is configured.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from envscaler_core import hub
from envscaler_core.artifacts import Trajectory
from envscaler_core.cli import UserError
from envscaler_core.config import StageConfig, add_config_arguments, config_from_args
from envscaler_core.progress import print_table
from envscaler_core.release_layout import TRAJECTORY_FIELDS, trajectory_row
from envscaler_core.rollout.filters import completed, filter_report, filter_report_path, reason_label
from envscaler_core.runner import StageContext, update_manifest
from envscaler_core.runtime import hash_jsonable
from envscaler_core.store import ArtifactError, JsonlStore, read_json, write_json_atomic
from sft.card import write_card
from sft.dialogue import DropSample, to_dialogue
from sft.formats import to_alpaca, to_sharegpt

SHAREGPT_INFO = {
    "formatting": "sharegpt",
    "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
    "tags": {
        "role_tag": "from",
        "content_tag": "value",
        "user_tag": "human",
        "assistant_tag": "gpt",
        "observation_tag": "observation",
        "function_tag": "function_call",
    },
}
ALPACA_INFO = {
    "formatting": "alpaca",
    "columns": {
        "prompt": "instruction",
        "query": "input",
        "response": "output",
        "history": "history",
        "system": "system",
    },
}


class ExportConfig(StageConfig):
    """Settings of ``sft export`` (section ``sft`` of a config file).

    By default a row comes only from a finished, unflagged trajectory with reward 1.0: a dataset
    is what a model is trained to imitate. ``min_reward`` 0 keeps every reward;
    ``keep_unfinished`` / ``keep_flagged`` keep those episodes too (the export says how many rows
    it then kept below reward 1 or flagged).
    """

    format: Literal["sharegpt", "alpaca", "hf"] = "sharegpt"
    min_reward: float = 1.0
    keep_unfinished: bool = False
    keep_flagged: bool = False
    dataset_name: str | None = None
    system_prompt: str | None = None

    def name(self) -> str:
        return self.dataset_name or f"envscaler_sft_{self.format}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trajectories",
        nargs="+",
        type=Path,
        required=True,
        help="trajectories.jsonl files (envscaler_core Trajectory records)",
    )
    parser.add_argument(
        "--format",
        choices=["sharegpt", "alpaca", "hf"],
        help="sharegpt (LlamaFactory tool format, default), alpaca (original) or "
        "hf (the release's Hub layout: Parquet + dataset card)",
    )
    parser.add_argument(
        "--push-to-hub", metavar="REPO", help="with --format hf: upload the dataset to this Hub repo (needs a token)"
    )
    parser.add_argument(
        "--min-reward", type=float, help="keep trajectories with reward >= R (default 1.0; 0 keeps all)"
    )
    parser.add_argument(
        "--keep-unfinished",
        action="store_true",
        help="keep episodes that did not finish (max steps, 'Task Failed', no stop)",
    )
    parser.add_argument("--keep-flagged", action="store_true", help="keep flagged episodes")
    parser.add_argument("--dataset-name", help="name in dataset_info.json")
    parser.add_argument("--system-prompt", help="replace every trajectory's system prompt")
    add_config_arguments(parser)


def read_trajectories(paths: Iterable[Path]) -> list[Trajectory]:
    """All records of ``paths``; a record seen twice (same id, mode and messages: a file given
    twice) is kept once. Task- and user-mode runs of one scenario share ids (``scenario#sample``),
    so the id alone is no identity: keyed on it, the demo's user-mode rows were dropped."""
    seen: dict[tuple[str, str, str], Trajectory] = {}
    for path in paths:
        if not path.exists():
            raise UserError(f"trajectories file not found: {path}")
        try:
            for record in JsonlStore(path, Trajectory).read():
                seen.setdefault((record.id, record.mode, hash_jsonable(record.messages)), record)
        except ArtifactError as exc:
            raise UserError(str(exc)) from None
    return list(seen.values())


def _drop_reasons(trajectory: Trajectory, config: ExportConfig) -> list[str]:
    """Why the default export leaves ``trajectory`` out (the reason names of the SFT filter)."""
    reasons = []
    if not config.keep_unfinished and not completed(trajectory):
        reasons.append("incomplete")
    if trajectory.reward.final < config.min_reward:
        reasons.append("low_reward")
    if not config.keep_flagged:
        reasons += [f"flag:{flag}" for flag in trajectory.flags]
    return reasons


def convert(trajectories: list[Trajectory], config: ExportConfig) -> tuple[list[dict], dict]:
    """Convert and filter; return ``(rows, report)``."""
    rows: list[dict[str, Any]] = []
    reasons: Counter[str] = Counter()
    dropped: list[dict[str, str]] = []
    kept: list[Trajectory] = []
    for trajectory in trajectories:
        try:
            if why := _drop_reasons(trajectory, config):
                raise DropSample(", ".join(why))
            dialogue = to_dialogue(trajectory, config.system_prompt)
        except DropSample as exc:
            for reason in str(exc).split(", "):
                reasons[reason] += 1
            dropped.append({"id": trajectory.id, "reason": str(exc)})
            continue
        meta = {
            "id": trajectory.id,
            "scenario_id": trajectory.scenario_id,
            "env_id": trajectory.env_id,
            "mode": trajectory.mode,
            "reward": trajectory.reward.final,
        }
        if config.format == "hf":
            rows.append(trajectory_row(trajectory))
        elif config.format == "sharegpt":
            rows.append(to_sharegpt(dialogue, meta))
        else:
            rows.extend(to_alpaca(dialogue, meta))
        kept.append(trajectory)
    report = {
        "format": config.format,
        **filter_report(len(trajectories), kept, dict(reasons)),
        "rows": len(rows),
        "thresholds": {
            "min_reward": config.min_reward,
            "keep_unfinished": config.keep_unfinished,
            "keep_flagged": config.keep_flagged,
        },
        "dropped_ids": dropped,
    }
    return rows, report


def upstream_reports(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The reports ``interact_with_env filter`` left next to the input files it wrote."""
    found = []
    for path in paths:
        report_path = filter_report_path(path)
        if report_path.exists():
            found.append(read_json(report_path))
    return found


def with_upstream(report: dict[str, Any], upstream: list[dict[str, Any]]) -> dict[str, Any]:
    """The export's report, plus what the rollouts held before the filter that fed it: the
    trajectories it read and its drops by reason (``filtered``), and its RL scenarios."""
    if not upstream:
        return report
    reasons: Counter[str] = Counter()
    for part in upstream:
        reasons.update(part.get("drop_reasons", {}))
    report = dict(report)
    report["filtered"] = {
        "read": sum(p.get("read", 0) for p in upstream),
        "kept": sum(p.get("kept", 0) for p in upstream),
        "drop_reasons": dict(sorted(reasons.items())),
        "inputs": [i for p in upstream for i in p.get("inputs", [])],
    }
    rl = [p["rl"] for p in upstream if p.get("rl")]
    if rl:
        report["rl"] = rl[0] if len(rl) == 1 else rl
    return report


def write_dataset(out: Path, name: str, fmt: str, rows: list[dict], report: dict) -> Path:
    """Write rows, the dataset_info.json entry and the report; return the rows' path."""
    out.mkdir(parents=True, exist_ok=True)
    data_path = out / f"{name}.json"
    write_json_atomic(data_path, rows)
    info_path = out / "dataset_info.json"
    info = read_json(info_path) if info_path.exists() else {}
    info[name] = {"file_name": data_path.name, **(SHAREGPT_INFO if fmt == "sharegpt" else ALPACA_INFO)}
    write_json_atomic(info_path, info)
    write_json_atomic(out / f"{name}.report.json", report)
    write_card(out)
    return data_path


def write_hub_dataset(out: Path, rows: list[dict], report: dict) -> Path:
    """The release's SFT trajectory layout as a Hub dataset folder; returns its card."""
    summary = (
        f"SFT trajectories exported by EnvScaler ({report['kept']} kept of {report['read']} "
        f"read; dropped: {report['drop_reasons'] or 'none'})."
    )
    config = hub.HubConfig("default", rows, "One row per trajectory, in the release's field names.", TRAJECTORY_FIELDS)
    return hub.write_dataset(out, "EnvScaler SFT trajectories", summary, [config])


def run(args: argparse.Namespace) -> int:
    config = config_from_args(
        ExportConfig,
        "sft",
        args,
        format=args.format,
        min_reward=args.min_reward,
        dataset_name=args.dataset_name,
        system_prompt=args.system_prompt,
        keep_unfinished=args.keep_unfinished or None,
        keep_flagged=args.keep_flagged or None,
    )
    if args.push_to_hub and config.format != "hf":
        raise UserError("--push-to-hub needs --format hf")
    trajectories = read_trajectories(args.trajectories)
    rows, report = convert(trajectories, config)
    report = with_upstream(report, upstream_reports(args.trajectories))
    if config.format == "hf":
        if not rows:  # a Hub dataset of no rows is no dataset: say so, write nothing
            print(_empty_message(report, config))
            return 0
        path = write_hub_dataset(Path(config.out), rows, report)
    else:
        path = write_dataset(Path(config.out), config.name(), config.format, rows, report)
    ctx = StageContext("sft_export", config)
    update_manifest(ctx, {k: report[k] for k in ("read", "kept", "dropped", "rows")})
    _print_report(path, report, config)
    print(json.dumps({"dataset": config.name(), "dataset_dir": str(Path(config.out))}))
    if args.push_to_hub:
        print(f"pushed: {hub.push_to_hub(Path(config.out), args.push_to_hub)}")
    return 0


def _print_report(path: Path, report: dict[str, Any], config: ExportConfig) -> None:
    table: list[tuple[str, Any]] = []
    if "filtered" in report:
        table += [("rollout trajectories", report["filtered"]["read"])]
        table += [(f"filtered out: {reason_label(r)}", n) for r, n in report["filtered"]["drop_reasons"].items()]
    table += [(k, report[k]) for k in ("read", "kept", "dropped", "rows")]
    table += [(f"dropped: {reason_label(r)}", n) for r, n in sorted(report["drop_reasons"].items())]
    print_table(f"sft export ({config.format}) -> {path}", table, ["", "count"])
    if report["kept_below_reward_1"]:
        print(
            f"NOTE: kept {report['kept_below_reward_1']} trajectories with reward below 1.0 "
            f"(--min-reward {config.min_reward:g})"
        )
    if report["kept_flagged"]:
        print(f"NOTE: kept {report['kept_flagged']} flagged trajectories")
    if not report["kept"]:
        print(_empty_message(report, config))


def _empty_message(report: dict[str, Any], config: ExportConfig) -> str:
    reasons = ", ".join(f"{reason_label(r)} {n}" for r, n in sorted(report["drop_reasons"].items())) or "no input"
    return (
        f"The SFT dataset is empty: none of the {report['read']} trajectories read is a finished, "
        f"unflagged episode with reward >= {config.min_reward:g} (dropped: {reasons}). "
        "Export weaker data explicitly with --min-reward 0, --keep-unfinished or --keep-flagged."
    )
