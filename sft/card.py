"""The dataset card (``README.md``) of a LlamaFactory dataset folder written by ``sft export``.

A folder may hold several datasets (``dataset_info.json`` is merged across exports): the card is
rebuilt after each export from every dataset of ``dataset_info.json`` that has its
``<name>.report.json`` there, so it always describes the whole folder. Per dataset it gives the
counts, why trajectories were dropped (by the export, and by ``interact_with_env filter`` when
the input came from it), the thresholds and the fields of a row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envscaler_core.rollout.filters import reason_label
from envscaler_core.store import read_json, write_text_atomic

CARD = "README.md"
META_FIELDS = (
    "`id` (trajectory), `scenario_id`, `env_id`, `mode` (task or user) and `reward` (the final "
    "reward) of the trajectory it comes from"
)
FIELDS = {
    "sharegpt": {
        "conversations": "the turns: `from` is `human`, `gpt`, `function_call` (a JSON call, or a JSON list "
        "of parallel calls) or `observation` (the tool results), `value` the text",
        "system": "the agent's system prompt",
        "tools": "the environment's tools as a JSON string of OpenAI function schemas",
        "meta": META_FIELDS + ", and `dropped_call_text` (turns whose text beside parallel calls was left out)",
    },
    "alpaca": {
        "instruction": "the user turn or the `<tool_response>` blocks this answer replies to",
        "input": "empty",
        "output": "the assistant's answer: an optional `<think>` block, text and `<tool_call>` blocks",
        "system": "the system prompt with the tools in Qwen3's `# Tools` block",
        "history": "the earlier `[instruction, output]` pairs of the dialogue (train with `mask_history: true`)",
        "meta": META_FIELDS + ", and `turn` (this answer's index in the dialogue)",
    },
}
COUNTS = (
    ("read", "trajectories read"),
    ("kept", "trajectories kept"),
    ("dropped", "trajectories dropped"),
    ("rows", "rows"),
    ("kept_below_reward_1", "kept with reward below 1"),
    ("kept_flagged", "kept with a flag"),
)


def write_card(folder: Path) -> Path:
    """(Re)writes ``folder/README.md`` for the datasets exported there; returns its path."""
    info_path = folder / "dataset_info.json"
    info = read_json(info_path) if info_path.exists() else {}
    sections = []
    for name, entry in info.items():
        report_path = folder / f"{name}.report.json"
        if report_path.exists():
            sections.append(_section(name, entry.get("file_name", f"{name}.json"), read_json(report_path)))
    lines = [
        "# EnvScaler SFT datasets",
        "",
        "LlamaFactory datasets written by `python -m sft export` from EnvScaler trajectories. "
        "`dataset_info.json` registers them: train with `dataset: <name>` and `dataset_dir: <this folder>`.",
        *sections,
    ]
    path = folder / CARD
    write_text_atomic(path, "\n".join(lines).rstrip() + "\n")
    return path


def _section(name: str, file_name: str, report: dict[str, Any]) -> str:
    fmt = report.get("format", "")
    lines = ["", f"## `{name}`", "", f"Format `{fmt}`, rows in `{file_name}`.", "", "| count | value |", "|---|---|"]
    lines += [f"| {label} | {report[key]} |" for key, label in COUNTS if key in report]
    lines += _reasons("Dropped by the export", report.get("drop_reasons", {}), report.get("dropped", 0))
    filtered = report.get("filtered")
    if filtered:
        lines += [
            "",
            f"The input was filtered by `interact_with_env filter` first: {filtered['kept']} of "
            f"{filtered['read']} rollout trajectories kept.",
        ]
        lines += _reasons(
            "Dropped by that filter", filtered.get("drop_reasons", {}), filtered["read"] - filtered["kept"]
        )
    thresholds = report.get("thresholds", {})
    if thresholds:
        lines += ["", "Thresholds: " + ", ".join(f"`{key}` {value}" for key, value in thresholds.items()) + "."]
    fields = FIELDS.get(fmt, {})
    if fields:
        lines += ["", "| field | meaning |", "|---|---|"]
        lines += [f"| `{field}` | {meaning} |" for field, meaning in fields.items()]
    return "\n".join(lines)


def _reasons(title: str, reasons: dict[str, int], dropped: int) -> list[str]:
    if not reasons:
        return ["", f"{title}: none."]
    several = "; one may have several reasons" if sum(reasons.values()) > dropped else ""
    lines = ["", f"{title} ({dropped} trajectories{several}):", "", "| reason | trajectories |", "|---|---|"]
    return lines + [f"| {reason_label(reason)} | {count} |" for reason, count in sorted(reasons.items())]
