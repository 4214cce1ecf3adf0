"""The Gradio page of the play demo (layout and event wiring only; logic is in the controller)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from envscaler_core.artifacts import Scenario
from envscaler_core.llm import LLMError
from envscaler_core.rollout import env_introduction
from envscaler_core.runtime import SandboxError
from envscaler_core.toolformat import CALL_CLOSE, CALL_OPEN, dumps
from interact_with_env.play.backend import PlayBackend
from interact_with_env.play.controller import PlayEpisode

HELP = (
    "As the agent, write plain text (an answer) or a tool call such as "
    f"`{CALL_OPEN}{dumps({'name': 'get_book', 'arguments': {'book_id': 'B1'}})}{CALL_CLOSE}`. "
    "As the user, write your message (`###STOP###` ends the conversation)."
)


def _views(session: PlayEpisode | None) -> tuple[Any, ...]:
    if session is None:
        return [], [], [], {}, "Pick a scenario and press **Start**.", None
    path = str(session.saved_path) if session.saved_path else None
    return (session.chat(), session.step_rows(), session.check_rows(), session.state, session.result_markdown(), path)


def _env_views(backend: PlayBackend, env_id: str) -> tuple[Any, ...]:
    env = backend.envs[env_id]
    choices = [(f"{s.id}: {s.task[:70]}", s.id) for s in backend.scenarios_of(env_id)]
    first = choices[0][1] if choices else None
    return (gr.update(choices=choices, value=first), env_introduction(env), backend.tools(env_id), env.env_class_code)


def _scenario_views(backend: PlayBackend, scenario_id: str | None) -> tuple[Any, ...]:
    if not scenario_id:
        return "", {}, ""
    s = backend.scenarios[scenario_id]
    return (f"**Task:** {s.task}", s.init_config, checker_listing(s))


def checker_listing(scenario: Scenario) -> str:
    """The checklist as one Python listing: each item a comment above its checker. Shown in a
    code view whose lines wrap, it reads whole in a narrow panel (a table's code column does not)."""
    blocks = []
    for number, item in enumerate(scenario.checklist_with_func, 1):
        blocks.append(f"# {number}. {' '.join(item.check_item.split())}\n{item.check_func.strip()}")
    return "\n\n".join(blocks) + "\n"


def build_app(backend: PlayBackend) -> gr.Blocks:
    """The demo page."""
    env_choices = [(f"{e.env_id}: {e.environment_summary[:60]}", e.env_id) for e in backend.envs.values()]

    def session_of(key: str) -> PlayEpisode:
        session = backend.sessions.get(key)
        if session is None:
            raise gr.Error("Press Start first.")
        return session

    async def guarded(key: str, action) -> tuple[Any, ...]:
        session = session_of(key)
        try:
            await action(session)
        except (LLMError, SandboxError) as exc:
            raise gr.Error(f"{type(exc).__name__}: {exc}") from None
        return _views(session)

    async def start(key, scenario_id, mode, agent_mode, agent_player, user_player):
        if not scenario_id:
            raise gr.Error("Pick a scenario.")
        await backend.drop(key)
        try:
            key, session = await backend.new_session(
                scenario_id, mode, agent_mode, agent_player == "me", user_player == "me"
            )
        except (LLMError, SandboxError) as exc:
            raise gr.Error(f"{type(exc).__name__}: {exc}") from None
        return (key, *_views(session))

    async def step(key):
        return await guarded(key, lambda s: s.step())

    async def run_all(key):  # a generator: Gradio streams each turn to the page as it is played
        session = session_of(key)
        try:
            async for _ in session.run_turns():
                yield _views(session)
        except (LLMError, SandboxError) as exc:
            raise gr.Error(f"{type(exc).__name__}: {exc}") from None

    async def send(key, text):
        return (*await guarded(key, lambda s: s.send(text)), "")

    async def finish(key):
        return await guarded(key, lambda s: s.finish())

    with gr.Blocks(title="Play with EnvScaler environments") as demo:
        key = gr.State("")
        gr.Markdown(f"# Play with EnvScaler environments\nModels (from the configuration): {backend.endpoint_label()}")
        with gr.Row():
            with gr.Column(scale=1):
                env_dd = gr.Dropdown(env_choices, value=env_choices[0][1], label="Environment", elem_id="env")
                scen_dd = gr.Dropdown([], label="Scenario", elem_id="scenario")
                task_md = gr.Markdown(elem_id="task")
                with gr.Accordion("Environment information", open=False):
                    intro_md = gr.Markdown()
                with gr.Accordion("Tools", open=False):
                    tools_json = gr.JSON()
                with gr.Accordion("Initial state", open=False):
                    init_json = gr.JSON()
                with gr.Accordion("Checklist and checker code", open=False):
                    checklist_code = gr.Code(
                        language="python",
                        wrap_lines=True,
                        show_line_numbers=False,
                        show_label=False,
                        elem_id="checkers",
                    )
                with gr.Accordion("Program implementation", open=False):
                    code = gr.Code(language="python")
            with gr.Column(scale=2):
                with gr.Row():
                    mode = gr.Radio(["task", "user"], value=backend.config.mode, label="Mode")
                    agent_mode = gr.Radio(["fc", "text"], value=backend.config.agent_mode, label="Agent protocol")
                    agent_player = gr.Radio(
                        ["model", "me"], value="model", label="Agent played by", elem_id="agent-player"
                    )
                    user_player = gr.Radio(["simulator", "me"], value="simulator", label="User played by")
                with gr.Row():
                    start_btn = gr.Button("Start", variant="primary", elem_id="start")
                    step_btn = gr.Button("Step", elem_id="step")
                    run_btn = gr.Button("Run all", elem_id="run-all")
                    finish_btn = gr.Button("Finish & score", elem_id="finish")
                chatbot = gr.Chatbot(label="Trajectory", height=420, elem_id="chat")
                with gr.Row():
                    msg = gr.Textbox(label="Your turn", placeholder=HELP, scale=4, elem_id="msg")
                    send_btn = gr.Button("Send", elem_id="send")
                steps_df = gr.Dataframe(
                    headers=["#", "tool", "arguments", "result", "state diff"],
                    wrap=True,
                    label="Tool calls and state diffs",
                    elem_id="steps",
                    column_widths=["6%", "18%", "28%", "12%", "36%"],
                )
            with gr.Column(scale=1):
                result_md = gr.Markdown(elem_id="result")
                checks_df = gr.Dataframe(
                    headers=["check", "status"],
                    label="Checklist on the live state",
                    elem_id="checks",
                    wrap=True,
                    column_widths=["70%", "30%"],
                )
                state_json = gr.JSON(label="Live state", elem_id="state")
                download = gr.File(label="Trajectory JSON")

        views = [chatbot, steps_df, checks_df, state_json, result_md, download]
        env_dd.change(lambda e: _env_views(backend, e), env_dd, [scen_dd, intro_md, tools_json, code])
        scen_dd.change(lambda s: _scenario_views(backend, s), scen_dd, [task_md, init_json, checklist_code])
        demo.load(lambda e: _env_views(backend, e), env_dd, [scen_dd, intro_md, tools_json, code])
        start_btn.click(start, [key, scen_dd, mode, agent_mode, agent_player, user_player], [key, *views])
        step_btn.click(step, key, views)
        run_btn.click(run_all, key, views)
        send_btn.click(send, [key, msg], [*views, msg])
        msg.submit(send, [key, msg], [*views, msg])
        finish_btn.click(finish, key, views)
    return demo
