"""A small dataset in the layout of the EnvScaler release on the Hub, written from its field list.

No released row is copied: the environment is our library fixture class, and the rows follow the
field list of the reference (``../shared/reference/envscaler-original.md`` §3.3, §3.4, §4.5):
env records keyed by ``env_id`` (``env_12_sft``, ``env_148_rl``) with ``tools`` and
``env_func_details`` as JSON strings and attributes comma-joined; scenario ids
``<env_id>-task_<n>``; ``init_config`` and ``checklist_with_func`` as JSON strings; one-argument
checkers, one of which reads the global ``initial_state``. The same content is also written in
its decoded "dict form", which is what the release-layout files must behave like.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

CODE = (Path(__file__).parents[1] / "test_interact_with_env" / "fixtures" / "library_env.py").read_text()
CLASS = "LibraryLoanSystem"
STATE = {
    "books": {
        "B1": {"book_id": "B1", "title": "Dune", "status": "available"},
        "B2": {"book_id": "B2", "title": "Emma", "status": "on_loan"},
    },
    "members": {"M1": {"name": "Ann"}, "M2": {"name": "Bob"}},
    "loans": {"L1": {"loan_id": "L1", "book_id": "B2", "member_id": "M2"}},
}
CHECKOUT_TASK = "Lend the book B1 (Dune) to member M1."
RETURN_TASK = "Member M2 brought back Emma (B2): record the return."
CHECKS = {
    CHECKOUT_TASK: [
        (
            "Has B1 been put on loan?",
            "def check_func(final_state):\n    return final_state['books']['B1']['status'] == 'on_loan'",
        ),
        (
            "Has a loan of B1 to M1 been recorded?",
            "def check_func(final_state):\n    return any(l['book_id'] == 'B1' and l['member_id'] == 'M1'"
            " for l in final_state['loans'].values())",
        ),
    ],
    RETURN_TASK: [
        (
            "Has B2 been marked available?",
            "def check_func(final_state):\n    return final_state['books']['B2']['status'] == 'available'",
        ),
        (
            "Has B1 been left as it was?",  # reads the global the original runtime provides
            "def check_func(final_state):\n    return final_state['books']['B1'] == initial_state['books']['B1']",
        ),
    ],
}
JSON_STRING_ENV_FIELDS = ("tools", "env_func_details")
JSON_STRING_SCENARIO_FIELDS = ("init_config", "checklist_with_func")
TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object", "list": "array"}


def _methods():
    cls = next(n for n in ast.parse(CODE).body if isinstance(n, ast.ClassDef) and n.name == CLASS)
    return [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name != "__init__"]


def _tools():
    """OpenAI schemas the way the release derives them: whole docstring, types only, all required."""
    tools = []
    for method in _methods():
        params = [a for a in method.args.args if a.arg != "self"]
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": method.name,
                    "description": ast.get_docstring(method),
                    "parameters": {
                        "type": "object",
                        "properties": {a.arg: {"type": TYPES[ast.unparse(a.annotation)]} for a in params},
                        "required": [a.arg for a in params],
                    },
                },
            }
        )
    return tools


def _func_details():
    return {
        m.name: {
            "signature": {
                "parameters": [
                    {"name": a.arg, "type": ast.unparse(a.annotation), "default": None, "kind": "positional-or-keyword"}
                    for a in m.args.args
                    if a.arg != "self"
                ],
                "return": ast.unparse(m.returns),
            },
            "doc": ast.get_docstring(m),
            "source_code": ast.get_source_segment(CODE, m),
        }
        for m in _methods()
    }


def env_record(env_id: str) -> dict:
    """One environment in dict form (nested values decoded)."""
    return {
        "env_id": env_id,
        "environment_summary": "A small library loan system",
        "environment_introduction": "Books can be lent to members and returned.",
        "state_space_definition": [
            {"entity": "Book", "attributes": "book_id, title, status", "description": "a book"},
            {"entity": "Loan", "attributes": "loan_id, book_id, member_id", "description": "a loan"},
        ],
        "constraints_rules": ["A book on loan cannot be lent again."],
        "operation_list": [
            {"operation_name": "get_book", "operation_description": "look up a book", "operation_type": "query"},
            {
                "operation_name": "checkout_book",
                "operation_description": "lend a book",
                "operation_type": "state_change",
            },
            {"operation_name": "return_book", "operation_description": "take a book back", "operation_type": "modify"},
        ],  # the release README's name for state_change
        "env_class_name": CLASS,
        "env_class_code": CODE,
        "env_class_def": CODE[: CODE.index("    def list_books")],
        "env_func_details": _func_details(),
        "tools": _tools(),
    }


def scenario_record(env_id: str, number: int, task: str, with_checkers: bool) -> dict:
    row = {
        "env_id": env_id,
        "env_class_name": CLASS,
        "task_id": f"{env_id}-task_{number}",
        "init_config": STATE,
        "task": task,
    }
    if with_checkers:
        row["checklist_with_func"] = [{"check_item": i, "check_func": f} for i, f in CHECKS[task]]
    return row


def _as_release(row: dict, fields: tuple[str, ...]) -> dict:
    return {k: json.dumps(v) if k in fields else v for k, v in row.items()}


def write(folder: Path) -> dict[str, Path]:
    """Write the release-layout files and their dict forms; return the paths by name."""
    folder.mkdir(parents=True, exist_ok=True)
    envs = [env_record("env_12_sft"), env_record("env_148_rl")]
    sft = [scenario_record("env_12_sft", 1, CHECKOUT_TASK, False), scenario_record("env_12_sft", 3, RETURN_TASK, False)]
    rl = [scenario_record("env_148_rl", 1, CHECKOUT_TASK, True), scenario_record("env_148_rl", 2, RETURN_TASK, True)]
    release_envs = [_as_release(e, JSON_STRING_ENV_FIELDS) for e in envs]
    release_rl = [_as_release(s, JSON_STRING_SCENARIO_FIELDS) for s in rl]
    files = {
        "envs_dict": {e["env_id"]: e for e in release_envs},  # 191_env_metadata.json
        "envs_list": release_envs,  # the Hub rows
        "sft": [_as_release(s, JSON_STRING_SCENARIO_FIELDS) for s in sft],
        "rl": release_rl,
        "rl_dict": {s["task_id"]: s for s in release_rl},
        "envs_decoded": {e["env_id"]: e for e in envs},
        "sft_decoded": sft,
        "rl_decoded": rl,
    }
    paths = {}
    for name, data in files.items():
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(data, indent=1))
    paths["envs_jsonl"] = folder / "envs_rows.jsonl"  # the Hub's JSON-lines download
    paths["envs_jsonl"].write_text("".join(json.dumps(e) + "\n" for e in release_envs))
    return paths
