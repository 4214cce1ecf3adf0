"""BFCL multi-turn data, loaded from the ``bfcl-eval`` package (which ships it).

``bfcl-eval`` writes ``result/``, ``score/`` and lock folders under ``BFCL_PROJECT_ROOT`` when it
is imported; :func:`bfcl` points that at a folder of ours before the first import so nothing is
written into site-packages.
"""

from __future__ import annotations

import ast
import copy
import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_core.cli import UserError

MULTI_TURN_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
INSTALL_HINT = "pip install bfcl-eval (see requirements-eval.txt)"


def bfcl(module: str, project_root: Path | None = None) -> Any:
    """Import ``bfcl_eval.<module>`` lazily, with a clear message when it is missing."""
    if "BFCL_PROJECT_ROOT" not in os.environ:
        root = Path(project_root or Path.home() / ".cache" / "envscaler" / "bfcl_project")
        root.mkdir(parents=True, exist_ok=True)
        os.environ["BFCL_PROJECT_ROOT"] = str(root)
    try:
        return importlib.import_module(f"bfcl_eval.{module}")
    except ImportError as exc:
        raise UserError(f"BFCL needs the bfcl-eval package ({exc}); install it with: {INSTALL_HINT}") from None


@dataclass
class BfclTask:
    """One BFCL multi-turn entry with its ground truth and OpenAI tool schemas."""

    id: str
    category: str
    entry: dict[str, Any]
    ground_truth: list[list[str]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    holdout_tools: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def turns(self) -> list[list[dict[str, Any]]]:
        return self.entry["question"]

    @property
    def all_tools(self) -> list[dict[str, Any]]:
        return self.tools + [t for tools in self.holdout_tools.values() for t in tools]


def _openai_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    utils = bfcl("model_handler.utils")
    mapping = bfcl("constants.type_mappings").GORILLA_TO_OPENAPI
    style = bfcl("constants.enums").ModelStyle.OPENAI_COMPLETIONS
    return utils.convert_to_tool(copy.deepcopy(functions), mapping, style)


def parse_categories(text: str) -> list[str]:
    """``"base,multi_turn_miss_func"`` -> full category names; ``multi_turn`` means all four."""
    names = []
    for raw in filter(None, (p.strip() for p in text.split(","))):
        if raw in ("multi_turn", "all"):
            names.extend(MULTI_TURN_CATEGORIES)
            continue
        name = raw if raw.startswith("multi_turn_") else f"multi_turn_{raw}"
        if name not in MULTI_TURN_CATEGORIES:
            raise UserError(
                f"unknown BFCL category {raw!r}; choose from {', '.join(MULTI_TURN_CATEGORIES)} or multi_turn"
            )
        names.append(name)
    if not names:
        raise UserError("no BFCL category given")
    return list(dict.fromkeys(names))


def load_tasks(categories: list[str], *, limit: int | None = None, ids: list[str] | None = None) -> list[BfclTask]:
    """Tasks of ``categories`` (first ``limit`` of each, or exactly ``ids``)."""
    utils = bfcl("utils")
    tasks = []
    for category in categories:
        truth = {e["id"]: e["ground_truth"] for e in utils.load_ground_truth_entry(category)}
        entries = utils.load_dataset_entry(category)
        if ids:
            entries = [e for e in entries if e["id"] in ids]
        elif limit is not None:
            entries = entries[:limit]
        for entry in entries:
            holdout = {int(turn): _openai_tools(funcs) for turn, funcs in (entry.get("missed_function") or {}).items()}
            tasks.append(
                BfclTask(entry["id"], category, entry, truth[entry["id"]], _openai_tools(entry["function"]), holdout)
            )
    if ids:
        missing = set(ids) - {t.id for t in tasks}
        if missing:
            raise UserError(f"BFCL task ids not found in {categories}: {sorted(missing)}")
    return tasks


def holdout_prompt() -> str:
    """BFCL's user message for a turn where held-out functions become available."""
    return bfcl("constants.default_prompts").DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC


def max_steps_per_turn() -> int:
    return bfcl("constants.default_prompts").MAXIMUM_STEP_LIMIT


def call_to_json(call: str, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """``"mv(source='a', destination='b')"`` -> ``("mv", {...})`` (positional args named by schema).

    Used to replay BFCL's ground truth through the model interface (tests, sanity checks).
    """
    node = ast.parse(call.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {call!r}")
    name = node.func.id
    schema = next((t["function"] for t in tools if t["function"]["name"] == name), None)
    order = list((schema or {}).get("parameters", {}).get("properties", {}))
    arguments = {order[i]: ast.literal_eval(arg) for i, arg in enumerate(node.args)}
    arguments.update({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords})
    return name, arguments
