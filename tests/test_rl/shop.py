"""A small shop environment with two checked scenarios, written as our JSONL artifacts."""

from __future__ import annotations

from pathlib import Path

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario, ToolCall
from envscaler_core.toolformat import render_call

SHOP_CODE = '''
class ShopOrders:
    def __init__(self, init_config: dict):
        self.orders = {}

    def get_order(self, order_id: str) -> dict:
        """Look up an order.

        Args:
            order_id: The order id, e.g. "A1".
        """
        if order_id not in self.orders:
            return {"success": False, "error": f"no order {order_id}"}
        return {"success": True, "data": self.orders[order_id]}

    def cancel_order(self, order_id: str) -> dict:
        """Cancel a pending order.

        Args:
            order_id: The order to cancel.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": f"no order {order_id}"}
        if order["status"] != "pending":
            return {"success": False, "error": f"order {order_id} is {order['status']}"}
        order["status"] = "cancelled"
        return {"success": True, "message": f"order {order_id} cancelled"}
'''

STATE = {
    "orders": {
        "A1": {"order_id": "A1", "status": "pending"},
        "B2": {"order_id": "B2", "status": "pending"},
        "C3": {"order_id": "C3", "status": "shipped"},
    }
}


def check(order_id: str, status: str) -> ChecklistItem:
    return ChecklistItem(
        check_item=f"{order_id} is {status}",
        check_func=(
            f"def check_func(final_state):\n    return final_state['orders']['{order_id}']['status'] == '{status}'"
        ),
    )


def scenarios() -> list[Scenario]:
    return [
        Scenario(
            id="cancel-a1",
            env_id="shop",
            env_class_name="ShopOrders",
            init_config=STATE,
            task="Cancel order A1.",
            checklist_with_func=[check("A1", "cancelled"), check("B2", "pending")],
            reference_solution=[ToolCall(name="cancel_order", arguments={"order_id": "A1"})],
            status="proven",
        ),
        Scenario(
            id="cancel-both",
            env_id="shop",
            env_class_name="ShopOrders",
            init_config=STATE,
            task="Cancel orders A1 and B2.",
            checklist_with_func=[check("A1", "cancelled"), check("B2", "cancelled")],
            status="proven",
        ),
    ]


def env() -> EnvSpec:
    return EnvSpec(
        id="shop",
        env_id="shop",
        environment_introduction="Orders of a small web shop.",
        env_class_name="ShopOrders",
        env_class_code=SHOP_CODE,
        status="accepted",
    )


def write_fixture(folder: Path) -> dict[str, str]:
    """Write envs.jsonl and scenarios.jsonl; return the env_config paths."""
    folder.mkdir(parents=True, exist_ok=True)
    envs, scens = folder / "envs.jsonl", folder / "scenarios.jsonl"
    envs.write_text(env().model_dump_json() + "\n")
    scens.write_text("".join(s.model_dump_json() + "\n" for s in scenarios()))
    return {"envs_path": str(envs), "scenarios_path": str(scens)}


def call(name: str, **arguments) -> str:
    """The text a policy writes to call ``name``."""
    return render_call(name, arguments)
