"""The ``plan_first`` scenario mode: the solution first, then the task that asks for it.

The paper writes a task, then a checklist, then checkers, and hopes a reference solution exists;
a small model fails at each link (tasks needing tools the env lacks, checkers reading fields the
state does not have). Here the model proposes state-changing calls, the sandbox runs them and
keeps only those that succeed and change the state, the checkers are written from the executed
difference (:mod:`scen_generator.diff_checks`), and the model finally words the user's request,
which must mention every value the checkers require. The usual proof then runs unchanged.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from envscaler_core.artifacts import EnvSpec, ToolCall
from envscaler_core.llm.client import LLMClient, StructuredOutputError
from envscaler_core.prompts import render_prompt
from envscaler_core.runtime import Replay, Sandbox, state_hash
from scen_generator.config import ScenGeneratorConfig
from scen_generator.context import introduction, rules_text, state_text, tools_text
from scen_generator.diff_checks import DiffCheck, added_records, diff_checks, missing_values, volatile_paths
from scen_generator.lookups import Lookup, description, find_lookups, given_ids, hide_ids, leaves, touched_records
from scen_generator.probes import is_query_tool
from scen_generator.reference import reference_model
from scen_generator.tasks import task_drafts, task_problem


def changing_tools(env: EnvSpec, tools: list[dict]) -> list[dict]:
    return [t for t in tools if not is_query_tool(env, t["function"]["name"])]


def _plan_prompt(env: EnvSpec, state: dict, tools: list[dict], cfg: ScenGeneratorConfig, feedback: str) -> list[dict]:
    text = render_prompt(
        "scen_generator",
        "plan.md",
        introduction=introduction(env),
        rules=rules_text(env),
        tools=tools_text(tools),
        state=state_text(state),
        call_count=call_count_text(cfg.plan_min_calls, cfg.plan_max_calls),
        min_records=cfg.plan_min_records,
        feedback=f"\n# Your previous plan failed\n{feedback}\n" if feedback else "",
    )
    return [{"role": "user", "content": text}]


def call_count_text(min_calls: int, max_calls: int) -> str:
    """How many calls the plan prompt asks for: "exactly 1 call", "2 to 4 calls"."""
    if min_calls >= max_calls:
        return f"exactly {max_calls} call" + ("" if max_calls == 1 else "s")
    return f"{min_calls} to {max_calls} calls"


def successful_steps(replay: Replay) -> list[int]:
    """Indices of calls that succeeded and changed the state."""
    changing = set(replay.changing_steps)
    return [i for i, r in enumerate(replay.results) if r.ok and i in changing]


def plan_feedback(calls: list[ToolCall], replay: Replay) -> str:
    lines = list(replay.errors)
    kept = set(successful_steps(replay))
    lines += [
        f"step {i + 1} {c.name} changed nothing" for i, c in enumerate(calls) if i not in kept and replay.results[i].ok
    ]
    if len(kept) < len(calls) or not lines:
        lines.append("use more calls that each change a different record")
    return f"Your calls: {json.dumps([c.model_dump() for c in calls])[:1500]}\nProblems:\n" + "\n".join(
        f"- {line}" for line in lines[:12]
    )


def minimal_plan(calls: list[ToolCall], replay: Callable[[list[ToolCall]], Replay]) -> list[ToolCall]:
    """``calls`` without steps whose effect is overwritten or undone (same end state without them).

    Single steps are tried first, then pairs (a create undone by a delete). A redundant step would
    let a mutant of it score 1.0, since the checkers only look at what the whole plan changed.
    """
    return _minimal_replayed(calls, replay)[0]


def _minimal_replayed(
    calls: list[ToolCall], replay: Callable[[list[ToolCall]], Replay]
) -> tuple[list[ToolCall], Replay]:
    """:func:`minimal_plan`, with the replay of the calls it keeps (no need to replay them again)."""
    kept, kept_replay = list(calls), replay(calls)
    target = state_hash(kept_replay.final_state)
    for size in (1, 2):
        changed = True
        while changed and len(kept) > size:
            changed = False
            for drop in itertools.combinations(reversed(range(len(kept))), size):
                shorter = [c for i, c in enumerate(kept) if i not in drop]
                trial = replay(shorter)
                if not trial.errors and state_hash(trial.final_state) == target:
                    kept, kept_replay, changed = shorter, trial, True
                    break
    return kept, kept_replay


async def generate_plan(
    client: LLMClient,
    sandbox: Sandbox,
    env: EnvSpec,
    state: dict,
    tools: list[dict],
    cfg: ScenGeneratorConfig,
    label: str,
) -> tuple[list[ToolCall] | None, list[Lookup], list[str]]:
    """State-changing calls that all succeed from ``state``, and the ids the request will leave out.

    A plan is kept when at least ``plan_min_calls`` calls succeed and change the state, they
    change at least ``plan_min_records`` records, and ``plan_lookups`` of the existing records
    they work on can be found with a query tool. Failing or no-op calls are dropped without
    asking the model; the next sample sees the exact problems. Returns ``(None, [], problems)``
    when no sample qualifies.
    """
    usable = changing_tools(env, tools)
    if not usable:
        return None, [], ["the environment has no state-changing tool"]
    problems: list[str] = []
    feedback = ""
    salvaged: list[ToolCall] = []  # successful changing calls of earlier samples (plan_merge_samples)
    for attempt in range(cfg.plan_attempts):
        try:
            answer = await client.structured(
                _plan_prompt(env, state, usable, cfg, feedback),
                reference_model(usable),
                temperature=cfg.task_temperature,
                max_tokens=cfg.max_tokens,
                cache_salt=f"plan:{attempt}",
                label=label,
            )
        except StructuredOutputError as exc:
            problems.append(f"attempt {attempt + 1}: {str(exc)[:300]}")
            continue
        plan: Any = answer  # a model built from the tools at run time
        calls = [ToolCall(name=c.name, arguments=c.arguments) for c in plan.calls]
        replay = await sandbox.areplay(env, state, calls)
        # The whole plan runs, and the first plan_max_calls of its successful changing calls are
        # kept: a small model writes more calls than asked and its first is often the one that
        # fails. _qualify replays the kept calls on their own, so the reference is what they do.
        successful = [calls[i] for i in successful_steps(replay)]
        kept = successful[: cfg.plan_max_calls]
        undone = bool(kept) and await _ends_where_it_started(sandbox, env, state, kept, successful, replay)
        shortfall: list[Lookup] | str = ""
        if kept and not undone:
            kept, shortfall = await _qualify(sandbox, env, state, kept, tools, cfg)
            if isinstance(shortfall, list):
                return kept, shortfall, problems
            if cfg.plan_merge_samples:
                merged = salvaged + [c for c in kept if c not in salvaged]
                if len(merged) > len(kept):
                    merged, lookups = await _qualify(sandbox, env, state, merged, tools, cfg)
                    if isinstance(lookups, list):
                        problems.append(f"attempt {attempt + 1}: merged with the successful calls of earlier samples")
                        return merged, lookups, problems
                salvaged = merged
        feedback = plan_feedback(calls, replay)
        if undone:
            feedback += "\n- the calls undo each other: the final state equals the initial state"
            problems.append(f"attempt {attempt + 1}: the calls undo each other")
            continue
        if shortfall:
            feedback += f"\n- {shortfall}"
            problems.append(f"attempt {attempt + 1}: {shortfall}")
            continue
        problems.append(f"attempt {attempt + 1}: {len(kept)} of {len(calls)} calls succeeded and changed the state")
    return None, [], problems


async def _ends_where_it_started(
    sandbox: Sandbox, env: EnvSpec, state: dict, kept: list[ToolCall], successful: list[ToolCall], replay: Replay
) -> bool:
    """Whether the kept calls leave the state as it was. Asked of the kept calls, not the whole
    sample: the 0.5B wrote create, update, delete of one book in every sample of a state, and its
    first call alone is a plan of one change."""
    if len(kept) < len(successful):
        replay = await sandbox.areplay(env, state, kept)
    return state_hash(replay.final_state) == state_hash(replay.initial_state)


async def _qualify(
    sandbox: Sandbox, env: EnvSpec, state: dict, calls: list[ToolCall], tools: list[dict], cfg: ScenGeneratorConfig
) -> tuple[list[ToolCall], list[Lookup] | str]:
    """``calls`` without redundant steps (:func:`minimal_plan`), with their lookups when they make a
    rich enough plan, else with what they lack ("" when too few calls are left or succeed)."""
    kept, replay = await sandbox.in_thread(_minimal_replayed, calls, lambda c: sandbox.replay(env, state, c))
    if len(kept) < cfg.plan_min_calls or replay.errors or len(replay.changing_steps) < cfg.plan_min_calls:
        return kept, ""
    return kept, await sandbox.in_thread(_plan_shortfall, sandbox, env, state, kept, tools, replay, cfg)


def _plan_shortfall(
    sandbox: Sandbox,
    env: EnvSpec,
    state: dict,
    calls: list[ToolCall],
    tools: list[dict],
    replay: Replay,
    cfg: ScenGeneratorConfig,
) -> list[Lookup] | str:
    """The plan's lookups when it is rich enough, else what it lacks (as feedback)."""
    records = touched_records(replay.initial_state, replay.final_state)
    if records < cfg.plan_min_records:
        return f"the calls change only {records} record(s); change at least {cfg.plan_min_records} different records"
    lookups = find_lookups(sandbox, env, state, calls, tools, cfg.plan_lookups)
    if len(lookups) < cfg.plan_lookups:
        return (
            "work on at least one existing record of the state (pass its id) that has a name or title, "
            "not only on new records"
        )
    return lookups


def _argument_values(calls: list[ToolCall]) -> Iterator[Any]:
    for call in calls:
        yield from leaves(call.arguments)


def planned_checks(sandbox: Sandbox, env: EnvSpec, state: dict, calls: list[ToolCall]) -> list[DiffCheck]:
    """The checks of what ``calls`` change, from two replays (values that differ are volatile)."""
    first = sandbox.replay(env, state, calls)
    second = sandbox.replay(env, state, calls)
    return diff_checks(
        first.initial_state,
        first.final_state,
        volatile=volatile_paths(first.final_state, second.final_state),
        argument_values=list(_argument_values(calls)),
        created=records_as_created(first),
    )


def records_as_created(replay: Replay) -> dict[str, dict[str, dict]]:
    """``{container: {key: record}}`` of the records the replayed calls added, as each was added."""
    created: dict[str, dict[str, dict]] = {}
    for result in replay.results:
        for container, key, record in added_records(result.state_diff) if result.ok else []:
            created.setdefault(container, {}).setdefault(key, record)
    return created


# Phrases of our own re-ask that a small model copies into its "request" (measured on the 0.5B).
_FEEDBACK_ECHOES = ("never mentions", "rejected", "reject the request", "use these exact values")
# A request that only asks to look ("Check if 'Dune' has due date ...", written by the 0.5B for a
# due-date change) cannot be solved by any agent: it never asks for the change the checkers test.
_ONLY_CHECKS = re.compile(
    r"^\W*(?:(?:please|can you|could you|kindly)\W+)?"
    r"(?:check|verify|confirm|determine|see|find out|make sure)\W+(?:if|whether|that)\b",
    re.I,
)


def _task_problems(
    task: str, checks: list[DiffCheck], min_words: int, lookups: Sequence[Lookup] = ()
) -> tuple[list[str], list[str]]:
    """(problems, what to do about each) for a drafted request (``checks`` with ids hidden)."""
    problems, fixes = [], []
    if p := task_problem(task, min_words):
        problems.append(p)
        fixes.append("make it longer: add who the user is and why they need this")
    if any(phrase in task.lower() for phrase in _FEEDBACK_ECHOES):
        problems.append("the request repeats our rejection message")
        fixes.append("write what the user wants done, not the rejection")
    if _ONLY_CHECKS.search(task):
        problems.append("the request asks to check, not to make the changes")
        fixes.append("ask for the changes themselves, e.g. 'Please set ... to ...'")
    missing = missing_values(task, checks)
    if missing:
        shown = ", ".join(repr(v) for v in missing[:8])
        problems.append(f"the request never mentions {shown}")
        fixes.append(f"mention {shown} exactly as written")
    for lookup in given_ids(task, list(lookups)):
        problems.append(f"the request gives the id '{lookup.key}', which the user does not know")
        fixes.append(f"call it {description(lookup)} and never write '{lookup.key}'")
    return problems, fixes


def _lookup_note(lookups: list[Lookup]) -> str:
    if not lookups:
        return ""
    named = "; ".join(description(lk) for lk in lookups)
    return (
        "\n4. The user does not know the ids of these records and describes them instead: "
        + named
        + ". Describe each the same way and never write its id; the assistant will look it up."
    )


async def generate_planned_task(
    client: LLMClient,
    env: EnvSpec,
    state: dict,
    checks: list[DiffCheck],
    cfg: ScenGeneratorConfig,
    label: str,
    lookups: Sequence[Lookup] = (),
) -> tuple[str | None, list[str]]:
    """The user's request for the planned change; it must name every value the checkers need,
    except the ids of ``lookups``, which it must describe instead (and never give).

    With ``plan_task_writer: template`` the request is :func:`templated_task` and no model is asked.
    """
    checks = hide_ids(checks, list(lookups))
    if cfg.plan_task_writer == "template":
        return templated_task(checks), ["the request is the plan's changes, templated"]
    changes = "\n".join(f"- {c.change or c.item}" for c in checks)
    prompt = render_prompt(
        "scen_generator",
        "task_from_plan.md",
        introduction=introduction(env),
        state=state_text(state),
        changes=changes,
        min_words=cfg.plan_task_min_words,
        lookups=_lookup_note(list(lookups)),
        feedback="",
    )
    problems: list[str] = []
    last = ""
    async for attempt in task_drafts(client, prompt, cfg, "plantask", label, problems):
        found, fixes = _task_problems(attempt.task, checks, cfg.plan_task_min_words, lookups)
        if not found:
            return attempt.task, problems
        if not any(p.startswith(("the request repeats", "the request gives the id")) for p in found):
            last = attempt.task  # a candidate for ``append``: only values missing
        problems.append(f"attempt {attempt.number}: " + "; ".join(found))
        attempt.reask = (
            f"Rejected: {'; '.join(found)}. Write the request again ({'; '.join(fixes)}), as the same JSON object."
        )
    if cfg.plan_missing_values == "append" and last:
        return with_values_appended(last, checks), problems + ["the missing values were appended"]
    return None, problems


def templated_task(checks: list[DiffCheck]) -> str:
    """The request as ``prompts/task_template.md`` words it: each change as a plain instruction
    (ids already replaced by descriptions where the agent must look them up)."""
    changes = " ".join(c.instruction for c in checks)
    return render_prompt("scen_generator", "task_template.md", changes=changes).strip()


def with_values_appended(task: str, checks: list[DiffCheck]) -> str:
    """``task`` plus the values the checkers need that it does not mention (``append`` mode)."""
    missing = missing_values(task, checks)
    if not missing:
        return task
    values = ", ".join(f"'{v}'" if isinstance(v, str) else str(v) for v in missing)
    return f"{task.rstrip()} Use these exact values: {values}."
