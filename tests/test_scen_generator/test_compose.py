"""Composed plans (plan_source: compose): the sandbox builds each plan, no model is asked."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from envscaler_core.artifacts import EnvSpec, Operation, Scenario, ToolCall
from envscaler_core.store import JsonlStore
from scen_generator.__main__ import main
from scen_generator.compose import compose_plan
from scen_generator.config import ScenGeneratorConfig
from scen_generator.difficulty import links
from scen_generator.plan_first import minimal_plan

from .helpers import SHOP_STATE, shop_env

pytestmark = pytest.mark.timeout(300)
SHOP_TOOLS = [
    "list_products",
    "list_customers",
    "get_order",
    "add_product",
    "update_price",
    "restock",
    "set_product_status",
    "update_customer_email",
    "set_customer_tier",
    "place_order",
    "ship_order",
    "cancel_order",
    "recount_stock",
]


@pytest.fixture(scope="module")
def shop(sandbox):
    env = shop_env()
    return env, sandbox.tools(env)


def compose(sandbox, shop, slot="slot", seed=0, state=SHOP_STATE, **settings):
    env, tools = shop
    values = {"plan_min_records": 1, "plan_lookups": 0, **settings}
    return compose_plan(sandbox, env, state, tools, ScenGeneratorConfig(**values), slot, seed)


@pytest.mark.parametrize("k", range(1, 9))
def test_a_composed_plan_has_exactly_k_successful_state_changing_calls(sandbox, shop, k):
    calls, _, notes = compose(sandbox, shop, f"k{k}", plan_min_calls=k, plan_max_calls=k)
    assert calls is not None and len(calls) == k, notes
    env, _ = shop
    replay = sandbox.replay(env, SHOP_STATE, calls)
    assert not replay.errors and replay.changing_steps == list(range(k))
    # no call is redundant: a mutant dropping any one of them reaches another state
    assert minimal_plan(calls, lambda c: sandbox.replay(env, SHOP_STATE, c)) == calls


def test_links_lookups_and_distractors_are_composed_when_asked(sandbox, shop):
    env, tools = shop
    for slot in ("a", "b", "c"):
        calls, lookups, notes = compose(
            sandbox, shop, slot, plan_min_calls=4, plan_max_calls=4, plan_links=1, plan_lookups=1, plan_distractors=True
        )
        assert calls is not None, notes
        assert links(calls, sandbox.replay(env, SHOP_STATE, calls)) >= 1  # a call takes a key an earlier one made
        assert len(lookups) == 1
        lookup = lookups[0]
        assert lookup.key in {v for c in calls for v in c.arguments.values()}
        # the looked-up record has a namesake ("Blue Mug" / "Blue Mug XL", "Ada Park" / "Ada Parker", ...)
        names = [r.get(lookup.field) for k, r in SHOP_STATE[lookup.container].items() if k != lookup.key]
        assert any(lookup.value in str(n) or str(n) in lookup.value for n in names), (lookup, names)


def test_plans_are_deterministic_per_slot_and_seed_and_slots_differ(sandbox, shop):
    settings = {"plan_min_calls": 3, "plan_max_calls": 3}
    first = compose(sandbox, shop, "env-task_0", **settings)[0]
    assert compose(sandbox, shop, "env-task_0", **settings)[0] == first
    others = [compose(sandbox, shop, f"env-task_{i}", **settings)[0] for i in range(1, 5)]
    assert all(plan is not None for plan in others) and any(plan != first for plan in others)
    assert compose(sandbox, shop, "env-task_0", seed=7, **settings)[0] != first


def test_a_state_too_small_for_k_is_dropped_with_an_honest_reason(sandbox, shop):
    env, tools = shop
    # one product and only the tools that change an existing product (its status has no second
    # value in the state to take): two fields can change
    updates = ("update_price", "restock", "set_product_status")
    weights = {t["function"]["name"]: 0.0 for t in tools if t["function"]["name"] not in updates}
    tiny = {"products": {"P1": copy.deepcopy(SHOP_STATE["products"]["P1"])}, "customers": {}, "orders": {}}
    calls, _, problems = compose(
        sandbox, shop, "tiny", state=tiny, plan_min_calls=8, plan_max_calls=8, plan_tool_weights=weights
    )
    assert calls is None
    assert all("the state holds only 2 state-changing call(s)" in p and "(asked for 8)" in p for p in problems[:-1])


def test_a_tool_that_raises_is_replaced_and_named_when_nothing_else_is_left(sandbox, shop):
    env, tools = shop
    calls, _, notes = compose(sandbox, shop, "raises", plan_min_calls=2, plan_max_calls=2)
    assert calls is not None and "recount_stock" not in {c.name for c in calls}, notes
    only_raising = {t["function"]["name"]: 0.0 for t in tools if t["function"]["name"] != "recount_stock"}
    calls, _, problems = compose(
        sandbox, shop, "raises", plan_min_calls=1, plan_max_calls=1, plan_tool_weights=only_raising
    )
    assert calls is None and "the barcode scanner is offline" in problems[0]


def test_an_environment_without_a_state_changing_tool_is_reported(sandbox, shop):
    env, tools = shop
    queries = [t for t in tools if t["function"]["name"].startswith(("list_", "get_"))]
    calls, _, problems = compose_plan(sandbox, env, SHOP_STATE, queries, ScenGeneratorConfig(), "q", 0)
    assert calls is None and problems == ["the environment has no state-changing tool"]


def test_k_above_what_the_lookup_rules_allow_names_what_is_missing(sandbox, shop):
    calls, _, problems = compose(sandbox, shop, "lk", plan_min_calls=1, plan_max_calls=1, plan_lookups=3)
    assert calls is None and all("records to look up" in p for p in problems[:-1])


# ---------------------------------------------------------------- the stage, no model at all
def run_stage(tmp_path, *settings: str, states=(SHOP_STATE,) * 4, env=None) -> list[Scenario]:
    env = env or shop_env()
    tmp_path.mkdir(parents=True, exist_ok=True)
    envs = tmp_path / "envs.jsonl"
    envs.write_text(env.model_dump_json() + "\n")
    out = tmp_path / "out"
    out.mkdir()
    states = [
        Scenario(id=f"{env.env_id}-task_{i}", env_id=env.env_id, init_config=state, status="state")
        for i, state in enumerate(states)
    ]
    JsonlStore(out / "scen_states.jsonl", Scenario).rewrite(states)
    args = ["run", "--envs", str(envs), "--out", str(out), "--per-env", "0", "--set", "sandbox_workers=1"]
    for pair in ("scenario_mode=plan_first", "plan_source=compose", "plan_task_writer=template", *settings):
        args += ["--set", pair]
    assert main(args) == 0
    return JsonlStore(out / "scenarios.jsonl", Scenario).read_all()


def test_composed_scenarios_are_proven_with_a_difficulty_and_no_llm_call(tmp_path, scripted_env):
    scenarios = run_stage(tmp_path, "plan_min_calls=3", "plan_max_calls=3", "plan_links=1", "plan_lookups=1")
    assert not scripted_env.completion_requests  # templated requests, composed plans
    proven = [s for s in scenarios if s.status == "proven"]
    assert len(proven) == 4, [s.validation.reasons for s in scenarios]
    for s in proven:
        d = s.difficulty
        assert (d.calls, d.lookups, d.tools >= 2, d.links >= 1, d.records >= 2) == (3, 1, True, True, True)
        lookup = s.lookups[0]
        assert lookup.key not in s.task and lookup.value in s.task  # described, never given
        assert s.collateral_gate is not None and s.collateral_gate.paths
        probe = s.validation.collateral
        assert probe.reward == 0.0 and probe.caught_by in ("gate", "checklist") and probe.paths


def test_a_change_elsewhere_costs_the_reward_unless_the_paper_switch_is_on(tmp_path, sandbox):
    from envscaler_core.scoring import Scorer

    env = shop_env()
    extra = ToolCall(
        name="add_product", arguments={"product_id": "P99", "name": "Spare", "category": "x", "price": 1.0, "stock": 1}
    )
    for gate, expected in ((True, 0.0), (False, 1.0)):
        s = run_stage(tmp_path / str(gate), "plan_min_calls=2", "plan_max_calls=2", f"collateral_gate={gate}")[0]
        assert s.status == "proven"
        replay = sandbox.replay(env, s.init_config, [*s.reference_solution, extra])
        score = Scorer(sandbox).score(env, s, replay.initial_state, replay.final_state)
        assert (score.reward.final, score.reward.checklist) == (expected, 1.0)
        assert score.reward.collateral == (["products/P99"] if gate else [])
        reference = sandbox.replay(env, s.init_config, s.reference_solution)
        assert Scorer(sandbox).score(env, s, reference.initial_state, reference.final_state).reward.final == 1.0
        probe = s.validation.collateral
        assert probe.call is not None and probe.paths
        assert probe.reward == expected or probe.caught_by == "checklist"


def test_bad_input_gets_a_reason_per_slot_and_loses_nothing(tmp_path):
    tiny = {"products": {"P1": copy.deepcopy(SHOP_STATE["products"]["P1"])}, "customers": {}, "orders": {}}
    creating = "plan_tool_weights={add_product: 0, place_order: 0}"
    (proven,) = run_stage(tmp_path / "k", "plan_min_calls=8", "plan_max_calls=8", creating, states=(SHOP_STATE, tiny))
    assert proven.status == "proven" and proven.difficulty.calls == 8
    # the slot the state cannot hold ends in the tasks step's file, dropped with the reason
    tasks = JsonlStore(tmp_path / "k" / "out" / "scen_tasks.jsonl", Scenario).by_id()
    assert [tasks[f"env_shop-task_{i}"].status for i in (0, 1)] == ["task", "dropped"]
    reason = tasks["env_shop-task_1"].validation.reasons[0]
    assert reason.startswith("no executable plan: walk 1: the state holds only")
    queries_only = shop_env().model_copy(
        update={"operation_list": [Operation(operation_name=n, operation_type="query") for n in SHOP_TOOLS]}
    )
    assert run_stage(tmp_path / "q", states=(SHOP_STATE,), env=queries_only) == []
    (dropped,) = JsonlStore(tmp_path / "q" / "out" / "scen_tasks.jsonl", Scenario).read_all()
    assert dropped.validation.reasons == ["no executable plan: the environment has no state-changing tool"]


def test_every_change_of_a_long_plan_is_checked_whatever_the_checklist_cap(tmp_path):
    # max_checklist_items caps a model's checklist; cutting a diff check would leave a change a
    # drop mutant can skip
    scenarios = run_stage(tmp_path, "plan_min_calls=6", "plan_max_calls=6", "max_checklist_items=2")
    assert scenarios and all(s.status == "proven" for s in scenarios), [s.validation.reasons for s in scenarios]
    assert all(len(s.checklist_with_func) >= s.difficulty.records > 2 for s in scenarios)


def test_a_whole_record_argument_and_a_bare_id_parameter_are_composed(sandbox):
    # add_note(note={...}) takes the record as one object; move_note(id, folder) names its table by the tool
    source = (Path(__file__).parent / "fixtures" / "notes_env.py").read_text()
    env = EnvSpec(id="notes", env_class_name="Notes", env_class_code=source, status="accepted")
    state = {
        "notes": {
            k: {"note_id": k, "title": t, "folder": f}
            for k, t, f in (("n1", "Groceries", "home"), ("n2", "Taxes", "work"))
        }
    }
    tools = sandbox.tools(env)
    names = set()
    for slot in range(6):
        calls, _, notes = compose_plan(
            sandbox,
            env,
            state,
            tools,
            ScenGeneratorConfig(plan_min_calls=2, plan_max_calls=2, plan_lookups=0, plan_min_records=1),
            f"n{slot}",
            0,
        )
        assert calls is not None, notes
        names |= {c.name for c in calls}
        for call in calls:
            if call.name == "add_note":
                assert set(call.arguments["note"]) == {"note_id", "title", "folder"}
                assert call.arguments["note"]["note_id"] not in state["notes"]
            else:
                assert call.arguments["id"] in state["notes"] or call.arguments["id"].startswith("n")
    assert names == {"add_note", "move_note"}
