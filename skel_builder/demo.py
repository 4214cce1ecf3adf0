"""The build demo: type or pick a task and watch each step of the build appear as it completes.

Steps shown: judge, environment description, state schema + rules, operations, method code,
tool schemas (from the runtime), inspection verdicts; then the environment is downloadable.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvDescription, content_id
from envscaler_core.runner import StageContext
from envscaler_core.runtime import Sandbox
from skel_builder import llm_steps
from skel_builder.config import SkelBuilderConfig
from skel_builder.readers import read_tasks
from skel_builder.review import review_env
from skel_builder.synthesis import synthesize_env

OUTPUTS = ("status", "judge", "description", "state", "operations", "code", "tools", "verdicts", "download")
_DONE = object()


def _md_state(state: dict[str, Any]) -> str:
    lines = [f"**Class** `{state['class_name']}`", ""]
    for e in state["entities"]:
        attrs = ", ".join(f"`{a['name']}: {a['type']}`" for a in e["attributes"])
        lines.append(f"- **{e['name']}** (id `{e['id_attribute']}`): {attrs}")
    lines += ["", "**Rules**"] + [f"- {r}" for r in state.get("rules", [])]
    return "\n".join(lines)


class DemoBuilder:
    """Runs one build and yields the view after every step."""

    def __init__(self, config: SkelBuilderConfig, sandbox: Sandbox):
        self.config, self.sandbox = config, sandbox

    async def build(self, task: str) -> AsyncIterator[dict[str, Any]]:
        view: dict[str, Any] = dict.fromkeys(OUTPUTS)
        log: list[str] = []

        def step(message: str) -> dict[str, Any]:
            log.append(message)
            view["status"] = "\n".join(f"- {m}" for m in log)
            return dict(view)

        task = (task or "").strip()
        if not task:
            yield step("Type a task or pick a bundled one.")
            return
        ctx = StageContext("skel_builder_demo", self.config)
        client = ctx.client("pipeline")
        yield step("Judging the task...")
        verdict = await llm_steps.judge(client, task)
        view["judge"] = verdict.model_dump()
        if not verdict.stateful:
            yield step("Judge: the task does not need a stateful environment. Stopped.")
            return
        yield step("Judge: stateful. Describing the environment...")
        answer = await llm_steps.describe(client, task, self.config.plan_temperature)
        view["description"] = (
            f"### {answer.environment_summary}\n{answer.environment_introduction}\n\n"
            f"usefulness {answer.usefulness}/10, modelability {answer.modelability}/10"
        )
        yield step("Environment described. Designing the state...")
        desc = EnvDescription(
            id=content_id("desc", task),
            task_id=content_id("task", task),
            task=task,
            judge_result=True,
            selected=True,
            **answer.model_dump(exclude={"analysis"}),
        )
        async for update in self._events(
            lambda emit: synthesize_env(client, self.sandbox, self.config, desc, emit), view, step
        ):
            yield update
        draft = view.pop("_result")
        yield step("Inspecting: oracles + LLM checker on every call...")
        async for update in self._events(
            lambda emit: review_env(client, self.sandbox, self.config, draft, emit), view, step
        ):
            yield update
        env = view.pop("_result")
        report = env.inspection
        path = Path(tempfile.mkdtemp(prefix="envscaler-demo-")) / f"{env.env_class_name}.json"
        path.write_text(env.model_dump_json(indent=1))
        view["download"], view["code"] = str(path), env.env_class_code
        view["tools"] = env.tools
        usage = ctx.meter.total()
        yield step(
            f"Done: **{env.status}** (score {report.score:.2f}; {report.reason}). "
            f"LLM calls {usage.calls}, tokens {usage.prompt_tokens + usage.completion_tokens}."
        )

    async def _events(self, make, view: dict[str, Any], step) -> AsyncIterator[dict[str, Any]]:
        """Run ``make(emit)`` and yield a view update for every event it emits."""
        queue: asyncio.Queue = asyncio.Queue()
        methods: list[str] = []
        task = asyncio.ensure_future(make(lambda kind, payload: queue.put_nowait((kind, payload))))
        task.add_done_callback(lambda _: queue.put_nowait((_DONE, None)))
        try:
            while True:
                kind, payload = await queue.get()
                if kind is _DONE:
                    break
                message = _apply(view, methods, kind, payload)
                if message:
                    yield step(message)
        finally:
            # a build stopped on the page (or a closed stream) stops here: no model call goes on
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        view["_result"] = task.result()


def _apply(view: dict[str, Any], methods: list[str], kind: str, payload: Any) -> str:
    """Put one pipeline event into the view; return the status line for it."""
    if kind == "state":
        view["state"] = _md_state(payload)
        return "State schema and rules designed."
    if kind == "skeleton":
        view["code"] = payload
        view["_skeleton"] = payload
        return "Class skeleton rendered from the schema."
    if kind == "test_state":
        return f"Test state generated ({sum(len(v) for v in payload.values())} records)."
    if kind == "predicates":
        proven = sum(p["status"] == "true" for p in payload)
        return f"Rule predicates proven on the test state: {proven} of {len(payload)}."
    if kind == "operations":
        view["operations"] = [[o["name"], o["type"], o["description"]] for o in payload]
        return f"{len(payload)} operations listed."
    if kind == "method":
        if payload["ok"]:
            methods.append(payload["code"])
            view["code"] = view.get("_skeleton", "") + "\n" + "\n".join(methods)
        outcome = "passed the executable gate" if payload["ok"] else "dropped (never passed)"
        return f"Method `{payload['name']}`: {outcome}."
    if kind == "tools":
        view["tools"] = payload
        return f"Tool schemas derived from the code: {len(payload)} tools."
    if kind == "round":
        rows = view.get("verdicts") or []
        rows.append(
            [
                payload["round"],
                payload["tool"],
                payload["case_type"],
                payload["verdict"],
                payload.get("llm_verdict") or "-",
                "; ".join(payload["oracle_violations"])[:160],
            ]
        )
        view["verdicts"] = rows
        return f"Round {payload['round']}: `{payload['tool']}` ({payload['case_type']}) -> {payload['verdict']}"
    if kind == "repair":
        return "Repaired failing methods: " + ", ".join(
            f"{r['tool']} ({'fixed' if r['fixed_by_gate'] else 'not fixed'})" for r in payload
        )
    return ""


def bundled_tasks() -> list[str]:
    from skel_builder.commands.common import SEED_TASKS

    return [task for task, _ in read_tasks(SEED_TASKS)]


def build_app(config: SkelBuilderConfig, sandbox: Sandbox):
    """The Gradio Blocks app (not launched)."""
    import gradio as gr

    builder = DemoBuilder(config, sandbox)
    tasks = bundled_tasks()
    with gr.Blocks(title="EnvScaler - build an environment") as app:
        gr.Markdown(
            "# EnvScaler SkelBuilder\nFrom a task to an inspected, executable environment.\n\n"
            f"Model (from the configuration): {config.llm_config('pipeline').endpoint_label}",
            elem_id="model",
        )
        with gr.Row():
            picked = gr.Dropdown(tasks, label="Bundled task", value=tasks[0] if tasks else None, elem_id="picked")
            typed = gr.Textbox(label="...or type a task (used instead when given)", lines=2, elem_id="typed")
        with gr.Row():
            button = gr.Button("Build environment", variant="primary", elem_id="build")
            stop = gr.Button("Stop", variant="stop", elem_id="stop")
        status = gr.Markdown(elem_id="status")
        with gr.Row():
            judge = gr.JSON(label="Judge")
            description = gr.Markdown(elem_id="description")
        state = gr.Markdown(elem_id="state")
        operations = gr.Dataframe(headers=["operation", "type", "description"], label="Operations")
        code = gr.Code(language="python", label="Environment class")
        tools = gr.JSON(label="Tool schemas (from the code)")
        verdicts = gr.Dataframe(
            headers=["round", "tool", "case", "verdict", "LLM", "oracle violations"],
            label="Inspection",
            elem_id="verdicts",
        )
        download = gr.File(label="Download the environment")
        outputs = [status, judge, description, state, operations, code, tools, verdicts, download]

        async def run(picked_task, typed_task):
            async for view in builder.build(typed_task or picked_task or ""):
                yield [gr.skip() if view.get(k) is None else view[k] for k in OUTPUTS]

        building = button.click(run, [picked, typed], outputs)
        stop.click(_stopped, status, status, cancels=[building])
    return app


def _stopped(status: str | None) -> str:
    return (status or "") + "\n- **Stopped.** Press *Build environment* to start again."
