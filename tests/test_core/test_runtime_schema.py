"""Tool schemas derived from signatures, type hints and Google docstrings."""

from __future__ import annotations

import logging
import textwrap

import pytest

from envscaler_core.runtime import EnvLoadError, EnvSession, compute_schemas
from envscaler_core.runtime.wire.schema import parse_docstring

pytestmark = pytest.mark.timeout(30)

SHOP = textwrap.dedent('''
    from typing import Dict, List, Literal, Optional, TypedDict, Union

    class Item(TypedDict):
        sku: str
        qty: int

    class Shop:
        def __init__(self):
            self.orders = {}

        def place_order(self, user_id: str, items: List[Item], priority: Literal["low", "high"] = "low",
                        coupon: Optional[str] = None) -> dict:
            """Place an order.

            Longer explanation of ordering.

            Args:
                user_id (str): The user placing the order.
                items: Items to buy, each with
                    a sku and a quantity.
                priority: Shipping priority.
                coupon: Optional coupon code.

            Returns:
                dict: {"success": True, "data": order_id}
            """
            return {"success": True}

        def tag(self, labels: Dict[str, int], value: Union[int, str], when: "NoSuchType") -> dict:
            """Tag things.

            Args:
                labels: Label counts.
                value: Int or str.
                when: Unresolvable.
            """
            return {"success": True}

        def no_doc(self, x, y: float = 1.5): return {}

        def _private(self) -> dict:
            return {}

        def __len__(self):
            return 0

        @property
        def size(self):
            return 0

        def zeta(self) -> dict:
            """Last tool."""
            return {}
''')


@pytest.fixture(scope="module")
def schemas(sandbox_pool):
    return {s["function"]["name"]: s for s in compute_schemas(sandbox_pool, SHOP, "Shop")}


def test_order_and_exclusions(sandbox_pool):
    names = [s["function"]["name"] for s in compute_schemas(sandbox_pool, SHOP, "Shop")]
    assert names == ["place_order", "tag", "no_doc", "zeta"]


def test_openai_shape_and_descriptions(schemas):
    fn = schemas["place_order"]
    assert fn["type"] == "function"
    f = fn["function"]
    assert f["description"].startswith("Place an order.\n\nLonger explanation of ordering.")
    assert "Returns:" in f["description"]
    params = f["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["user_id", "items"]
    assert params["properties"]["user_id"] == {"type": "string", "description": "The user placing the order."}
    assert params["properties"]["items"]["description"] == "Items to buy, each with a sku and a quantity."


def test_typeddict_list_literal_optional(schemas):
    props = schemas["place_order"]["function"]["parameters"]["properties"]
    items = props["items"]
    assert items["type"] == "array"
    assert items["items"]["type"] == "object"
    assert items["items"]["properties"] == {"sku": {"type": "string"}, "qty": {"type": "integer"}}
    assert items["items"]["required"] == ["sku", "qty"]
    assert props["priority"]["enum"] == ["low", "high"] and props["priority"]["default"] == "low"
    assert props["coupon"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert "$defs" not in str(schemas) and "$ref" not in str(schemas)
    assert "'title'" not in str(props)


def test_dict_union_and_unresolvable(schemas):
    params = schemas["tag"]["function"]["parameters"]
    assert params["properties"]["labels"]["type"] == "object"
    assert params["properties"]["labels"]["additionalProperties"] == {"type": "integer"}
    assert params["properties"]["value"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert params["properties"]["when"] == {"description": "Unresolvable."}
    assert params["required"] == ["labels", "value", "when"]


def test_unresolvable_annotation_is_logged(sandbox_pool, caplog):
    with caplog.at_level(logging.WARNING):
        compute_schemas(sandbox_pool, SHOP, "Shop")
    assert any("NoSuchType" in r.getMessage() for r in caplog.records)


def test_unannotated_and_no_docstring(schemas):
    f = schemas["no_doc"]["function"]
    assert f["description"] == "no doc"
    assert f["parameters"]["properties"]["x"] == {}
    assert f["parameters"]["properties"]["y"] == {"type": "number", "default": 1.5}
    assert f["parameters"]["required"] == ["x"]
    assert schemas["zeta"]["function"]["parameters"]["properties"] == {}
    assert schemas["zeta"]["function"]["parameters"]["required"] == []


def test_validation_uses_the_same_model(sandbox_pool):
    with EnvSession(sandbox_pool, SHOP, "Shop") as s:
        ok = s.call("place_order", {"user_id": "u", "items": [{"sku": "a", "qty": 1}]})
        assert ok.ok
        bad = s.call("place_order", {"user_id": "u", "items": [{"sku": "a"}]})
        assert bad.error_type == "invalid_arguments" and "items.0.qty" in bad.observation["error"]
        bad = s.call("place_order", {"user_id": "u", "items": [], "priority": "urgent"})
        assert bad.error_type == "invalid_arguments" and "priority" in bad.observation["error"]
        assert s.call("tag", {"labels": {"a": 1}, "value": "v", "when": object.__name__}).ok


def test_schema_errors_are_load_errors(sandbox_pool):
    with pytest.raises(EnvLoadError) as info:
        compute_schemas(sandbox_pool, "class X(:", "X")
    assert info.value.error_type == "syntax_error"


@pytest.mark.unit
def test_parse_docstring():
    summary, args, returns = parse_docstring("""Do it.

        Args:
            a (int): First
                continued.
            b: Second.

        Returns:
            dict: result
        """)
    assert summary == "Do it."
    assert args == {"a": "First continued.", "b": "Second."}
    assert returns == "dict: result"
    assert parse_docstring(None) == ("", {}, "")
