"""Synthesis of one environment: state -> skeleton -> test state -> rule predicates ->
operations -> methods (each gated by running it) -> assembly -> tool schemas from the runtime.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from envscaler_core.artifacts import BuildLog, EnvDescription, EnvSpec, Operation, StateEntity, StateSchema, content_id
from envscaler_core.llm import LLMClient, StructuredOutputError
from envscaler_core.runtime import EnvLoadError, Sandbox
from skel_builder import llm_steps
from skel_builder.answers import OperationAnswer, StateAnswer, snake
from skel_builder.config import SkelBuilderConfig
from skel_builder.crud import example_methods, routine_methods
from skel_builder.methods import MethodContext, produce_method
from skel_builder.predicates import example_predicate, parse_predicates, prove_predicates
from skel_builder.skeleton import assemble, container_of, normalize_state, render_skeleton
from skel_builder.testdata import fallback_state, normalize_test_state

Emit = Callable[[str, Any], None]


def _quiet(step: str, payload: Any) -> None:
    pass


async def _test_state(
    client: LLMClient, desc: EnvDescription, state: StateAnswer, cfg: SkelBuilderConfig, salt: str
) -> tuple[dict[str, Any], str]:
    try:
        raw = await llm_steps.generate_test_state(
            client, desc.environment_summary, desc.environment_introduction, state, cfg.plan_temperature, salt
        )
        data = normalize_test_state(state, raw, cfg.seed)
        return data, "llm"
    except StructuredOutputError as exc:  # an endpoint failure fails the item (retried on re-run)
        return fallback_state(state), f"fallback ({type(exc).__name__})"


def usable_operations(answer_ops: list[OperationAnswer], reserved: set[str], limit: int) -> list[OperationAnswer]:
    """Unique, usable operations; a generic or repeated name is rebuilt from the description."""
    reserved = set(reserved) | {"__init__", "init_config"}
    ops, seen = [], set(reserved)
    for op in answer_ops:
        if op.name in reserved:  # already provided (routine method) or a container name
            continue
        if op.name in seen or op.name in ("query", "state_change", "operation"):
            words = [w for w in snake(op.description).split("_") if w][:4]
            op = op.model_copy(update={"name": snake("_".join(words))}) if words else op
        if op.name not in seen and op.name.isidentifier():
            seen.add(op.name)
            ops.append(op)
    return ops[:limit]


async def synthesize_env(
    client: LLMClient,
    sandbox: Sandbox,
    cfg: SkelBuilderConfig,
    desc: EnvDescription,
    emit: Emit = _quiet,
    salt: str = "",
) -> EnvSpec:
    """Build the draft :class:`EnvSpec` of one selected description (status ``draft``).

    ``salt`` makes a retry of a failed item ask afresh instead of replaying cached answers.
    """
    started = time.monotonic()
    state = normalize_state(
        await llm_steps.design_state(
            client,
            desc.environment_summary,
            desc.environment_introduction,
            desc.task,
            cfg.max_entities,
            cfg.plan_temperature,
            salt,
        ),
        cfg.max_entities,
    )
    emit("state", state.model_dump())
    skeleton = render_skeleton(state, desc.environment_summary, desc.environment_introduction)
    examples = example_methods(state)
    prompt_skeleton = assemble(skeleton, [m.code for m in examples])
    emit("skeleton", skeleton)
    test_state, state_source = await _test_state(client, desc, state, cfg, salt)
    emit("test_state", test_state)
    predicates, predicate_log = [], []
    if cfg.rule_predicates and state.rules:
        answer = await llm_steps.write_predicates(client, state, example_predicate(state), salt)
        candidates = parse_predicates(answer, state.rules)
        predicates, predicate_log = await asyncio.to_thread(prove_predicates, sandbox, candidates, test_state)
        emit("predicates", predicate_log)
    routine = routine_methods(state) if cfg.crud_scaffold else []
    ops_source = "llm"
    try:
        answer_ops = (
            await llm_steps.list_operations(
                client,
                desc,
                state,
                prompt_skeleton,
                [m.name for m in routine],
                cfg.max_operations,
                cfg.plan_temperature,
                salt,
            )
        ).operations
    except StructuredOutputError as exc:  # degrade to the routine operations, and say so
        answer_ops, ops_source = [], f"fallback to routine CRUD ({type(exc).__name__})"
        routine = routine or routine_methods(state)
    containers = {container_of(e) for e in state.entities}  # a method must not shadow a container
    ops = usable_operations(answer_ops, {m.name for m in routine} | containers, cfg.max_operations)
    emit("operations", [o.model_dump() for o in ops])
    op_types = {m.name: m.kind for m in routine} | {o.name: o.type for o in ops}
    ctx = MethodContext(state.class_name, state, skeleton, prompt_skeleton, test_state, predicates, op_types)
    accepted: dict[str, str] = {m.name: m.code for m in routine}
    operations = [
        Operation(operation_name=m.name, operation_description=m.description, operation_type=m.kind, code=m.code)
        for m in routine
    ]
    dropped = []
    for op in ops:
        wanted = llm_steps.MethodRequest(op.name, op.type, op.description)
        code = await produce_method(client, sandbox, cfg, ctx, accepted, wanted, stage=f"synthesis{salt}")
        emit("method", {"name": op.name, "ok": code is not None, "code": code or ""})
        if code is None:
            dropped.append(op.name)
            continue
        accepted[op.name] = code
        operations.append(
            Operation(operation_name=op.name, operation_description=op.description, operation_type=op.type, code=code)
        )
    code = assemble(skeleton, list(accepted.values()))
    tools, error = await _schemas(sandbox, code, state.class_name)
    emit("tools", tools)
    return EnvSpec(
        id=content_id("env", desc.id),
        environment_summary=desc.environment_summary,
        environment_introduction=desc.environment_introduction,
        state_space_definition=[
            StateEntity(entity=e.name, attributes=[a.name for a in e.attributes], description=e.description)
            for e in state.entities
        ],
        constraints_rules=state.rules,
        rule_predicates=[p.source for p in predicates],
        operation_list=operations,
        env_class_name=state.class_name,
        env_class_code=code,
        tools=tools,
        source_task=desc.task,
        status="draft",
        state_schema=StateSchema.model_validate(state.model_dump()),
        test_state=test_state,
        predicate_rules=[p.rule for p in predicates],
        build_log=BuildLog(
            test_state_source=state_source,
            operations_source=ops_source,
            predicates=predicate_log,
            method_attempts=ctx.attempts,
            dropped_operations=dropped,
            synthesis_error=error,
            description_id=desc.id,
            synthesis_s=round(time.monotonic() - started, 2),
        ),
    )


async def _schemas(sandbox: Sandbox, code: str, class_name: str) -> tuple[list[dict], str | None]:
    try:
        return await asyncio.to_thread(sandbox.compute_schemas, code, class_name), None
    except EnvLoadError as exc:
        return [], f"assembled class does not load: {exc}"
