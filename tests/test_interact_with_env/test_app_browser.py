"""The play demo in headless Chromium (Playwright), with the scripted server as the model."""

from __future__ import annotations

import argparse
import socket

import pytest

from interact_with_env.commands import app as app_cmd
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, ENVS, SCENARIOS, gated, planned

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def app_url(scripted_env, tmp_path):
    parser = argparse.ArgumentParser()
    app_cmd.add_arguments(parser)
    port = _free_port()
    args = parser.parse_args(
        [
            "--envs",
            str(ENVS),
            "--scenarios",
            str(SCENARIOS),
            "--port",
            str(port),
            "--out",
            str(tmp_path),
            "--no-cache",
            "--set",
            "llm.default.max_retries=0",
        ]
    )
    scripted_env.policy = planned(CHECKOUT_PLAN)
    demo, backend, sandbox = app_cmd.launch(args, block=False)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
        sandbox.close()


def start_checkout(page, app_url: str) -> None:
    """Opens the page and starts the first scenario (lend B1), the model playing the agent."""
    from playwright.sync_api import expect

    page.goto(app_url)
    expect(page.get_by_text("Play with EnvScaler environments")).to_be_visible(timeout=30_000)
    expect(page.locator("#task")).to_contain_text("Lend the book B1", timeout=30_000)
    page.locator("#start").click()
    expect(page.locator("#checks")).to_contain_text("fail", timeout=30_000)


def test_run_all_turns_the_checklist_green_and_scores(app_url, page):
    from playwright.sync_api import expect

    start_checkout(page, app_url)
    page.locator("#run-all").click()
    expect(page.locator("#steps")).to_contain_text("checkout_book", timeout=30_000)
    expect(page.locator("#checks")).not_to_contain_text("fail", timeout=30_000)
    expect(page.locator("#chat")).to_contain_text("Task Completed", timeout=30_000)
    page.locator("#finish").click()
    expect(page.locator("#result")).to_contain_text("Final reward: 1.0", timeout=30_000)


def test_person_plays_the_agent(app_url, page):
    from playwright.sync_api import expect

    page.goto(app_url)
    expect(page.locator("#task")).to_contain_text("Lend the book B1", timeout=30_000)
    page.locator("#agent-player").get_by_text("me").click()
    page.locator("#start").click()
    expect(page.locator("#result")).to_contain_text("you (as agent)", timeout=30_000)
    page.locator("#msg textarea").fill('{"name": "checkout_book", "arguments": {"book_id": "B1", "member_id": "M1"}}')
    page.locator("#send").click()
    expect(page.locator("#steps")).to_contain_text("on_loan", timeout=30_000)
    expect(page.locator("#result")).to_contain_text("Live checklist: 2/2", timeout=30_000)


def test_run_all_shows_each_turn_as_it_is_played(app_url, page, scripted_env, tmp_path):
    from playwright.sync_api import expect

    scripted_env.policy, gate = gated(planned(CHECKOUT_PLAN), at_turn=1)  # the second turn waits
    try:
        start_checkout(page, app_url)
        page.locator("#run-all").click()
        # the first turn is on the page while the model is still asked for the second
        expect(page.locator("#steps")).to_contain_text("get_book", timeout=30_000)
        expect(page.locator("#chat")).to_contain_text("get_book", timeout=30_000)
        expect(page.locator("#result")).to_contain_text("agent turns: 1/30", timeout=30_000)
        expect(page.locator("#steps")).not_to_contain_text("checkout_book")
        page.screenshot(path=tmp_path / "run-all-first-turn.png", full_page=True)
    finally:
        gate.set()
    expect(page.locator("#chat")).to_contain_text("Task Completed", timeout=30_000)
    expect(page.locator("#steps")).to_contain_text("checkout_book", timeout=30_000)


def test_the_checker_code_reads_whole_in_the_narrow_panel(app_url, page, tmp_path):
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(app_url)
    expect(page.locator("#task")).to_contain_text("Lend the book B1", timeout=30_000)
    page.get_by_text("Checklist and checker code").click()
    checkers = page.locator("#checkers")
    expect(checkers).to_contain_text("# 2. M1 borrowed B1", timeout=30_000)
    page.screenshot(path=tmp_path / "checkers.png", full_page=True)
    panel = checkers.bounding_box()
    assert panel is not None and panel["width"] <= 300  # the left column's narrow panel
    scroller = checkers.locator(".cm-scroller")
    assert scroller.evaluate("e => e.scrollWidth <= e.clientWidth"), "the code scrolls sideways"
    for text in ("'on_loan'", "final_state['loans'].values())"):
        line = checkers.locator(".cm-line", has_text=text).bounding_box()
        assert line is not None and line["x"] + line["width"] <= panel["x"] + panel["width"], text
