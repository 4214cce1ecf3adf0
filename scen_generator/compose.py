"""Composed plans (``plan_source: compose``): the sandbox builds each plan; no model decides it.

A seeded walk over the environment's state-changing tools. Each step picks a tool (tools not used
yet first, scaled by ``plan_tool_weights``), proposes its arguments from the state the earlier
steps left (:mod:`scen_generator.arguments`), and runs it in a sandbox session. The call is kept
when it succeeds, changes something, and leaves every earlier call needed: a call that sets a
field an earlier one set, or removes a record the plan created, would leave a mutant without the
earlier call at 1.0. Anything else is replaced by the next proposal. **Links** are data flow:
with ``plan_links`` a step prefers the key of a record an earlier step created (return the loan
that the checkout made). **Lookups** and
**distractors** steer which existing records the walk works on: records a query tool can find by
a unique name come first, and among them those with a namesake in the state.

The walk then holds the plan to the rules of every ``plan_first`` plan: no redundant step
(:func:`~scen_generator.plan_first.minimal_plan`), ``plan_min_records`` records changed,
``plan_lookups`` ids a query tool shows next to their description, and checks from its diff that
pass the proof (:mod:`scen_generator.proof`; the validate step proves it again, unchanged). A walk that falls short is
restarted with the next random stream (up to ``4 * plan_attempts`` walks); the slot is dropped
with what was missing. The random stream is seeded by the slot's id and the LLM seed: slots differ, and a
re-run composes the same plans.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario, ToolCall
from envscaler_core.collateral import state_changes
from envscaler_core.runtime import EnvSession, Sandbox, call_error, format_arguments, state_hash
from scen_generator.arguments import ArgumentProposer, Draft, StateIndex, is_creating, namesake
from scen_generator.config import ScenGeneratorConfig
from scen_generator.lookups import Lookup, descriptions, find_lookups, touched_records
from scen_generator.plan_first import changing_tools, minimal_plan, planned_checks
from scen_generator.proof import prove

TRIALS_PER_STEP = 40
"""Proposals tried before a step is given up (each is one call in a sandbox session)."""
WALKS_PER_ATTEMPT = 4
"""Walks per ``plan_attempts`` (a walk costs milliseconds of sandbox time, a model sample seconds)."""


@dataclass
class Goal:
    """What one walk aims for."""

    calls: int
    lookups: int
    links: int
    distractors: bool


@dataclass
class Walk:
    """A walk in progress: the kept calls and what they changed."""

    initial: dict
    state: dict
    calls: list[ToolCall] = field(default_factory=list)
    call_paths: list[set[str]] = field(default_factory=list)
    """What each kept call changed (``books/B1/title``; ``books/B7`` for a record added or removed)."""
    call_changes: list[set[str]] = field(default_factory=list)
    """The same without the records each call added (whose fields a later call may still set)."""
    links: int = 0
    draft: Draft = field(default_factory=Draft)
    rejections: list[str] = field(default_factory=list)


def seeded_random(*parts: Any) -> random.Random:
    """A random stream fixed by ``parts`` (string seeding is stable across processes)."""
    return random.Random("\x1f".join(map(str, parts)))


def choose_goal(cfg: ScenGeneratorConfig, rng: random.Random) -> Goal:
    """The slot's number of calls (in ``plan_min_calls..plan_max_calls``) and skills.

    ``plan_lookups`` and ``plan_links`` are floors; ``plan_skill_weights`` asks for one more of a
    skill with that probability (how the arena leans towards an agent's weak skills). Each walk
    draws its own goal, so a skill the state cannot hold costs walks, not the slot.
    """
    weights = cfg.plan_skill_weights
    calls = rng.randint(cfg.plan_min_calls, max(cfg.plan_min_calls, cfg.plan_max_calls))
    lookups = cfg.plan_lookups + (rng.random() < weights.get("lookups", 0.0))
    links = cfg.plan_links + (rng.random() < weights.get("links", 0.0))
    distractors = cfg.plan_distractors or rng.random() < weights.get("distractors", 0.0)
    return Goal(calls, lookups, min(links, max(calls - 1, 0)), distractors)


def preferred_records(state: dict, goal: Goal, rng: random.Random) -> list[tuple[str, str]]:
    """Existing records to work on first: ones a unique text names (so they can be looked up),
    those with a namesake first when distractors are wanted; none when no lookup is wanted."""
    if goal.lookups <= 0:
        return []
    found = []
    for container, table in StateIndex.of(state).tables.items():
        for key in table:
            names = descriptions(table, key)
            if names:
                field_name, value = names[0]
                others = [str(r.get(field_name)) for k, r in table.items() if k != key]
                found.append((container, key, namesake(value, others)))
    rng.shuffle(found)
    if goal.distractors:
        found.sort(key=lambda item: not item[2])
    return [(c, k) for c, k, _ in found]


def _pick_tool(
    usable: list[dict], walk: Walk, failures: Counter, weights: dict[str, float], rng: random.Random
) -> dict:
    """A tool for the next step: unused ones first, failing ones less, and while a link is wanted,
    a creating tool until a record is created, then a tool that takes such a record's key."""
    uses = Counter(c.name for c in walk.calls)
    scores = []
    for tool in usable:
        name = tool["function"]["name"]
        score = weights.get(name, 1.0) / (1 + uses[name]) * 0.5 ** failures[name]
        if walk.draft.link_wanted:
            score *= 20.0 if _serves_link(tool, walk) else 1.0
        scores.append(score)
    return rng.choices(usable, weights=scores if sum(scores) > 0 else None)[0]


def _serves_link(tool: dict, walk: Walk) -> bool:
    fn = tool["function"]
    if not walk.draft.created:
        return is_creating(fn["name"])
    params = set((fn.get("parameters") or {}).get("properties") or {})
    index = StateIndex.of(walk.state)
    return any(index.id_fields.get(c) in params for c in walk.draft.created) and not is_creating(fn["name"])


def _overlap(first: set[str], second: set[str]) -> bool:
    return any(a == b or a.startswith(b + "/") or b.startswith(a + "/") for a in first for b in second)


def _fits(walk: Walk, changed: set[str], paths: set[str], redundant: Callable[[int], bool]) -> str:
    """Why a call's changes cannot join the plan ("" when they can): it removes a record the plan
    created, it changes only what earlier calls changed (a field set twice, stock raised twice:
    one call would do), or it makes an earlier call redundant (the plan without that call ends in
    the same state). A call that also touches what an earlier one changed is otherwise kept:
    returning the book a checkout lent needs the checkout (a link)."""
    for path in sorted(paths):
        container, _, key = path.partition("/")
        if key and "/" not in key and key in walk.draft.created.get(container, []):
            return f"it removes {path}, which the plan created"
    earlier_changes = set().union(*walk.call_changes) if walk.call_changes else set()
    if changed and all(any(p == q or p.startswith(q + "/") for q in earlier_changes) for p in paths):
        return "it changes only what earlier calls changed"
    for index, earlier in enumerate(walk.call_paths):
        if _overlap(earlier, paths) and redundant(index):
            return f"it leaves call {index + 1} ({walk.calls[index].name}) without effect"
    return ""


def _step(
    sandbox: Sandbox,
    env: EnvSpec,
    session: EnvSession,
    usable: list[dict],
    walk: Walk,
    goal: Goal,
    cfg: ScenGeneratorConfig,
    rng: random.Random,
) -> bool:
    """Adds one call to ``walk``; False when ``TRIALS_PER_STEP`` proposals all failed."""
    failures: Counter = Counter()
    walk.draft.link_wanted = walk.links < goal.links
    proposer = ArgumentProposer(StateIndex.of(walk.state), rng)
    for _ in range(TRIALS_PER_STEP):
        tool = _pick_tool(usable, walk, failures, cfg.plan_tool_weights, rng)
        call = proposer.propose(tool, walk.draft)
        if call is None:
            failures[tool["function"]["name"]] += 1
            continue
        result = session.call(call.name, call.arguments)
        after = session.snapshot() if result.state_diff else walk.state
        changed, added = state_changes(walk.state, after)
        paths = changed | {f"{c}/{k}" for c, keys in added.items() for k in keys}
        problem = "" if result.ok and paths else (call_error(result) if not result.ok else "no change")

        def redundant(index: int, call: ToolCall = call, after: dict = after) -> bool:
            rest = walk.calls[:index] + walk.calls[index + 1 :] + [call]
            replay = sandbox.replay(env, walk.initial, rest)
            return not replay.errors and state_hash(replay.final_state) == state_hash(after)

        problem = problem or _fits(walk, changed, paths, redundant)
        if problem:
            failures[call.name] += 1
            walk.rejections.append(f"{call.name}({format_arguments(call.arguments)}): {problem}"[:300])
            if result.state_diff:
                session.restore(walk.state)
            continue
        _keep(walk, call, after, paths, added)
        return True
    return False


def _keep(walk: Walk, call: ToolCall, after: dict, paths: set[str], added: dict[str, set[str]]) -> None:
    created = {k for keys in walk.draft.created.values() for k in keys}
    if any(isinstance(v, str) and v in created for v in call.arguments.values()):
        walk.links += 1
    walk.calls.append(call)
    walk.call_paths.append(paths)
    walk.call_changes.append(paths - {f"{c}/{k}" for c, keys in added.items() for k in keys})
    for path in paths:
        container, _, key = path.partition("/")
        if key and "/" not in key and key not in added.get(container, set()):
            walk.draft.removed.add((container, key))
    for container, keys in added.items():
        walk.draft.created.setdefault(container, []).extend(sorted(keys))
    walk.state = after


def walk_plan(
    sandbox: Sandbox,
    env: EnvSpec,
    state: dict,
    usable: list[dict],
    goal: Goal,
    cfg: ScenGeneratorConfig,
    rng: random.Random,
) -> tuple[Walk, str]:
    """One walk of ``goal.calls`` steps from ``state``; ``(walk, "")`` or the walk so far and why it stopped."""
    walk = Walk(initial=state, state=state)
    walk.draft.preferred = preferred_records(state, goal, rng)
    with sandbox.open(env, state) as session:
        walk.state = session.snapshot()
        for _ in range(goal.calls):
            if not _step(sandbox, env, session, usable, walk, goal, cfg, rng):
                shown = "; ".join(walk.rejections[-3:]) or "no tool could be given arguments from the state"
                return walk, (
                    f"the state holds only {len(walk.calls)} state-changing call(s) that change different records "
                    f"(asked for {goal.calls}): after step {len(walk.calls)}, {TRIALS_PER_STEP} calls failed; "
                    f"last: {shown}"
                )
    return walk, ""


def _qualify(
    sandbox: Sandbox,
    env: EnvSpec,
    state: dict,
    walk: Walk,
    tools: list[dict],
    goal: Goal,
    cfg: ScenGeneratorConfig,
) -> tuple[list[Lookup], str]:
    """The plan's lookups, or why the walk does not make a plan."""
    replay = sandbox.replay(env, state, walk.calls)
    if replay.errors or len(replay.changing_steps) != len(walk.calls):
        return [], "its calls do not replay the same way from the state: " + "; ".join(replay.errors)[:300]
    if len(minimal_plan(walk.calls, lambda c: sandbox.replay(env, state, c))) < len(walk.calls):
        return [], "a call's change is overwritten or undone by a later one"
    if walk.links < goal.links:
        return (
            [],
            f"{walk.links} of the {goal.links} links: no call could take the key of a record an earlier call created",
        )
    records = touched_records(replay.initial_state, replay.final_state)
    if records < cfg.plan_min_records:
        return [], f"the calls change {records} record(s); plan_min_records is {cfg.plan_min_records}"
    lookups = find_lookups(sandbox, env, state, walk.calls, tools, goal.lookups)
    if len(lookups) < goal.lookups:
        return [], (
            f"{len(lookups)} of the {goal.lookups} records to look up: no other existing record it works on has a "
            "unique name that a query tool shows next to its id"
        )
    return lookups, _unprovable(sandbox, env, state, walk.calls, cfg)


def _unprovable(sandbox: Sandbox, env: EnvSpec, state: dict, calls: list[ToolCall], cfg: ScenGeneratorConfig) -> str:
    """Why the plan's diff checks would fail the proof ("" when they pass it), so that another walk
    is tried now: two records made alike (a booking cancelled, then the same booking made again)
    let a mutant without the second satisfy the check written for it."""
    checks = planned_checks(sandbox, env, state, calls)
    if not checks:
        return "the plan changes nothing a checker can compare (only volatile values)"
    scenario = Scenario(
        id="composed",
        env_id=env.env_id,
        init_config=state,
        reference_solution=calls,
        checklist_with_func=[ChecklistItem(check_item=c.item, check_func=c.source) for c in checks],
    )
    proof = prove(
        sandbox,
        env,
        scenario,
        null_bound=cfg.null_reward_bound,
        max_mutants=cfg.max_mutants,
        args_must_fail=cfg.arg_mutants_must_fail,
    )
    return "" if proof.proven else "its checks would not pass the proof: " + proof.failures[0].line()[:300]


def compose_plan(
    sandbox: Sandbox,
    env: EnvSpec,
    state: dict,
    tools: list[dict],
    cfg: ScenGeneratorConfig,
    slot: str,
    seed: int,
) -> tuple[list[ToolCall] | None, list[Lookup], list[str]]:
    """A plan for ``state`` composed without a model, as :func:`~scen_generator.plan_first.generate_plan`
    returns one: ``(calls, lookups, notes)``, or ``(None, [], problems)`` when every walk fell short.

    Runs sandbox sessions synchronously: call it on a thread (``sandbox.in_thread``).
    """
    usable = changing_tools(env, tools)
    if not usable:
        return None, [], ["the environment has no state-changing tool"]
    problems: list[str] = []
    for attempt in range(WALKS_PER_ATTEMPT * max(1, cfg.plan_attempts)):
        rng = seeded_random("compose", seed, slot, attempt)
        goal = choose_goal(cfg, rng)
        walk, problem = walk_plan(sandbox, env, state, usable, goal, cfg, rng)
        if problem and len(walk.calls) >= cfg.plan_min_calls:
            goal.calls, problem = len(walk.calls), ""  # fewer calls than drawn, still within the range
        lookups: list[Lookup] = []
        if not problem:
            lookups, problem = _qualify(sandbox, env, state, walk, tools, goal, cfg)
        if not problem:
            notes = [
                f"composed: {goal.calls} calls, {walk.links} link(s), {len(lookups)} lookup(s) (walk {attempt + 1})"
            ]
            return walk.calls, lookups, notes
        problems.append(f"walk {attempt + 1}: {problem}")
    shown = problems[:3]
    return None, [], shown + ([f"and {len(problems) - len(shown)} more walks"] if len(problems) > len(shown) else [])
