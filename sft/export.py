"""``python -m sft export``: trajectories -> a LlamaFactory dataset directory or a Hub dataset.

LlamaFactory formats (``sharegpt``, ``alpaca``) write ``<name>.json`` (the rows),
``dataset_info.json`` (merged with an existing one, so several exports can share a directory) and
``<name>.report.json`` (kept, dropped and why). ``--format hf`` writes the release's SFT
trajectory layout (``traj_type``, ``task_info``, ``tools``, ``messages``, ``user_messages``,
``steps``) as Parquet plus a dataset card that ``datasets.load_dataset`` reads, and
``--push-to-hub REPO`` uploads it when a Hugging Face token is configured.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Literal, Optional

from envscaler_core.artifacts import Trajectory
from envscaler_core.cli import UserError
from envscaler_core.config import StageConfig, add_config_arguments, config_from_args
from envscaler_core import hub
from envscaler_core.release_layout import TRAJECTORY_FIELDS, trajectory_row
from envscaler_core.progress import print_table
from envscaler_core.runner import StageContext, update_manifest
from envscaler_core.runtime import hash_jsonable
from envscaler_core.store import ArtifactError, JsonlStore, read_json, write_json_atomic
from sft.dialogue import DropSample, to_dialogue
from sft.formats import to_alpaca, to_sharegpt

SHAREGPT_INFO = {
    "formatting": "sharegpt",
    "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
    "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human",
             "assistant_tag": "gpt", "observation_tag": "observation",
             "function_tag": "function_call"},
}
ALPACA_INFO = {
    "formatting": "alpaca",
    "columns": {"prompt": "instruction", "query": "input", "response": "output",
                "history": "history", "system": "system"},
}


class ExportConfig(StageConfig):
    """Settings of ``sft export`` (section ``sft`` of a config file)."""

    format: Literal["sharegpt", "alpaca", "hf"] = "sharegpt"
    min_reward: Optional[float] = None
    dataset_name: Optional[str] = None
    system_prompt: Optional[str] = None

    def name(self) -> str:
        return self.dataset_name or f"envscaler_sft_{self.format}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trajectories", nargs="+", type=Path, required=True,
                        help="trajectories.jsonl files (envscaler_core Trajectory records)")
    parser.add_argument("--format", choices=["sharegpt", "alpaca", "hf"],
                        help="sharegpt (LlamaFactory tool format, default), alpaca (original) or "
                             "hf (the release's Hub layout: Parquet + dataset card)")
    parser.add_argument("--push-to-hub", metavar="REPO",
                        help="with --format hf: upload the dataset to this Hub repo (needs a token)")
    parser.add_argument("--min-reward", type=float, help="keep trajectories with reward >= R")
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


def convert(trajectories: list[Trajectory], config: ExportConfig) -> tuple[list[dict], dict]:
    """Convert and filter; return ``(rows, report)``."""
    rows: list[dict[str, Any]] = []
    reasons: Counter[str] = Counter()
    dropped: list[dict[str, str]] = []
    kept = 0
    for trajectory in trajectories:
        try:
            if config.min_reward is not None and trajectory.reward.final < config.min_reward:
                raise DropSample(f"reward below {config.min_reward:g}")
            dialogue = to_dialogue(trajectory, config.system_prompt)
        except DropSample as exc:
            reasons[str(exc)] += 1
            dropped.append({"id": trajectory.id, "reason": str(exc)})
            continue
        meta = {"id": trajectory.id, "scenario_id": trajectory.scenario_id,
                "env_id": trajectory.env_id, "mode": trajectory.mode,
                "reward": trajectory.reward.final}
        if config.format == "hf":
            rows.append(trajectory_row(trajectory))
        elif config.format == "sharegpt":
            rows.append(to_sharegpt(dialogue, meta))
        else:
            rows.extend(to_alpaca(dialogue, meta))
        kept += 1
    report = {"format": config.format, "read": len(trajectories), "kept": kept,
              "dropped": len(dropped), "rows": len(rows), "drop_reasons": dict(reasons),
              "dropped_ids": dropped}
    return rows, report


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
    return data_path


def write_hub_dataset(out: Path, rows: list[dict], report: dict) -> Path:
    """The release's SFT trajectory layout as a Hub dataset folder; returns its card."""
    summary = (f"SFT trajectories exported by EnvScaler ({report['kept']} kept of {report['read']} "
               f"read; dropped: {report['drop_reasons'] or 'none'}).")
    config = hub.HubConfig("default", rows, "One row per trajectory, in the release's field names.",
                       TRAJECTORY_FIELDS)
    return hub.write_dataset(out, "EnvScaler SFT trajectories", summary, [config])


def run(args: argparse.Namespace) -> int:
    config = config_from_args(ExportConfig, "sft", args, format=args.format,
                              min_reward=args.min_reward, dataset_name=args.dataset_name,
                              system_prompt=args.system_prompt)
    if args.push_to_hub and config.format != "hf":
        raise UserError("--push-to-hub needs --format hf")
    trajectories = read_trajectories(args.trajectories)
    rows, report = convert(trajectories, config)
    if not rows:
        raise UserError(f"no trajectory survived the export filters: {report['drop_reasons']}")
    if config.format == "hf":
        path = write_hub_dataset(Path(config.out), rows, report)
    else:
        path = write_dataset(Path(config.out), config.name(), config.format, rows, report)
    ctx = StageContext("sft_export", config)
    update_manifest(ctx, {k: report[k] for k in ("read", "kept", "dropped", "rows")})
    table = [(k, report[k]) for k in ("read", "kept", "dropped", "rows")]
    table += [(f"dropped: {reason}", n) for reason, n in sorted(report["drop_reasons"].items())]
    print_table(f"sft export ({config.format}) -> {path}", table, ["", "count"])
    print(json.dumps({"dataset": config.name(), "dataset_dir": str(Path(config.out))}))
    if args.push_to_hub:
        print(f"pushed: {hub.push_to_hub(Path(config.out), args.push_to_hub)}")
    return 0
