"""A hand-written library scenario and checker sources used across the tests."""

from __future__ import annotations

from pathlib import Path

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario, ToolCall
from envscaler_core.original_format import load_envs

DATA = Path(__file__).resolve().parents[2] / "scen_generator" / "data"
ENVS_FILE = DATA / "library_env.jsonl"

STATE = {
    "books": {
        "B1": {"book_id": "B1", "title": "Dune", "author": "Frank Herbert", "status": "available"},
        "B2": {"book_id": "B2", "title": "Emma", "author": "Jane Austen", "status": "on_loan"},
    },
    "members": {
        "M1": {"member_id": "M1", "name": "Ada Park", "max_loans": 3, "fines": 2.5},
        "M2": {"member_id": "M2", "name": "Bo Lin", "max_loans": 2, "fines": 0.0},
    },
    "loans": {
        "L001": {"loan_id": "L001", "book_id": "B2", "member_id": "M2", "due_date": "2026-12-01", "returned": False}
    },
}
TASK = (
    "Member M1 (Ada Park) wants to borrow Dune (B1) until 2026-12-20. She still owes fines, so "
    "settle her whole balance first, then lend her the book. Also close the open loan of Emma "
    "for member M2, who brought it back today, so that the book is available again for "
    "the next reader on the waiting list."
)
REFERENCE = [
    ToolCall(name="pay_fine", arguments={"member_id": "M1", "amount": 2.5}),
    ToolCall(name="checkout_book", arguments={"book_id": "B1", "member_id": "M1", "due_date": "2026-12-20"}),
    ToolCall(name="return_book", arguments={"loan_id": "L001"}),
]

GOOD = {
    "Has the fines of M1 been set to 0?": "def check_func(final_state, initial_state):\n"
    "    return final_state['members']['M1']['fines'] == 0\n",
    "Has B1 been lent to M1?": "def check_func(final_state, initial_state):\n"
    "    return any(l['book_id'] == 'B1' and l['member_id'] == 'M1' and not l['returned']\n"
    "               and l['due_date'] == '2026-12-20' for l in final_state['loans'].values())\n",
    "Has loan L001 been returned?": "def check_func(final_state):\n"  # the original one-argument form
    "    return final_state['loans']['L001']['returned'] is True "
    "and initial_state['loans']['L001']['returned'] is False\n",
}
ALWAYS_TRUE = "def check_func(final_state, initial_state):\n    return True\n"
NEVER_TRUE = "def check_func(final_state, initial_state):\n    return False\n"
CRASHES = "def check_func(final_state, initial_state):\n    return final_state['members']['M9']['fines'] == 0\n"
MUTATES = (
    "def check_func(final_state, initial_state):\n    final_state['members']['M1']['fines'] = 0\n    return True\n"
)
LOOPS = "def check_func(final_state, initial_state):\n    while True:\n        pass\n"
READS_FILES = "def check_func(final_state, initial_state):\n    return open('/etc/hostname').read() != ''\n"
NOT_BOOL = "def check_func(final_state, initial_state):\n    return final_state['members']['M1']['fines']\n"


def library_env() -> EnvSpec:
    return load_envs(ENVS_FILE)["env_library"]


def scenario(checkers: dict[str, str] | None = None, reference=None) -> Scenario:
    checkers = GOOD if checkers is None else checkers
    return Scenario(
        id="env_library-task_0",
        env_id="env_library",
        env_class_name="LibraryLoanSystem",
        init_config=STATE,
        task=TASK,
        status="checked",
        checklist_with_func=[ChecklistItem(check_item=k, check_func=v) for k, v in checkers.items()],
        reference_solution=list(REFERENCE if reference is None else reference),
    )


SHOP_SOURCE = Path(__file__).resolve().parent / "fixtures" / "shop_env.py"
SHOP_STATE = {
    "products": {
        "P1": {
            "product_id": "P1",
            "name": "Blue Mug",
            "category": "kitchen",
            "price": 8.5,
            "stock": 40,
            "status": "active",
        },
        "P2": {
            "product_id": "P2",
            "name": "Blue Mug XL",
            "category": "kitchen",
            "price": 11.0,
            "stock": 12,
            "status": "active",
        },
        "P3": {
            "product_id": "P3",
            "name": "Red Kettle",
            "category": "kitchen",
            "price": 35.0,
            "stock": 6,
            "status": "active",
        },
        "P4": {
            "product_id": "P4",
            "name": "Oak Desk",
            "category": "office",
            "price": 240.0,
            "stock": 3,
            "status": "active",
        },
        "P5": {
            "product_id": "P5",
            "name": "Oak Desk Lamp",
            "category": "office",
            "price": 45.0,
            "stock": 9,
            "status": "discontinued",
        },
        "P6": {
            "product_id": "P6",
            "name": "Steel Chair",
            "category": "office",
            "price": 89.0,
            "stock": 15,
            "status": "active",
        },
    },
    "customers": {
        "C1": {"customer_id": "C1", "name": "Ada Park", "email": "ada@park.example", "tier": "gold"},
        "C2": {"customer_id": "C2", "name": "Ada Parker", "email": "aparker@mail.example", "tier": "silver"},
        "C3": {"customer_id": "C3", "name": "Bo Lin", "email": "bo@lin.example", "tier": "bronze"},
        "C4": {"customer_id": "C4", "name": "Cy Moss", "email": "cy@moss.example", "tier": "silver"},
    },
    "orders": {
        "O001": {"order_id": "O001", "customer_id": "C3", "product_id": "P3", "quantity": 1, "status": "placed"},
        "O002": {"order_id": "O002", "customer_id": "C1", "product_id": "P6", "quantity": 2, "status": "shipped"},
    },
}


def shop_env() -> EnvSpec:
    """The shop environment (many state-changing tools, records with namesakes, one tool that raises)."""
    return EnvSpec(
        id="env_shop",
        environment_introduction="A small shop: products, customers and their orders.",
        env_class_name="ShopSystem",
        env_class_code=SHOP_SOURCE.read_text(),
        status="accepted",
    )
