"""The build demo: the step stream without a browser, then the real page in headless Chromium."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from envscaler_core.testing.scripted_server import schema_name
from skel_builder.config import SkelBuilderConfig
from skel_builder.demo import DemoBuilder, bundled_tasks

from .library_world import LibraryPolicy

TASK = "Check out the book 'Dune' for library member M-102."
HANG_GUARD_S = 300  # only reached when the awaited request never comes (a failing test)


class HeldAtState:
    """The library world, with the state-design answer held until ``release`` is set."""

    def __init__(self) -> None:
        self.world, self.asked, self.release = LibraryPolicy(), threading.Event(), threading.Event()

    def __call__(self, request):
        if schema_name(request) == "StateAnswer":
            self.asked.set()
            self.release.wait(HANG_GUARD_S)
        return self.world(request)


def test_demo_streams_every_step(scripted_env, sandbox, tmp_path):
    scripted_env.policy = LibraryPolicy()
    builder = DemoBuilder(SkelBuilderConfig(out=tmp_path, rounds=8), sandbox)

    async def collect():
        return [view async for view in builder.build(TASK)]

    views = asyncio.run(collect())
    statuses = [v["status"] for v in views]
    assert len(views) > 10 and statuses == sorted(statuses, key=len)  # grows step by step
    last = views[-1]
    assert "accepted" in last["status"] and "LibraryLoanSystem" in last["code"]
    assert last["state"].startswith("**Class** `LibraryLoanSystem`") and len(last["tools"]) == 4
    assert len(last["verdicts"]) == 8 and os.path.exists(last["download"])


def test_demo_stops_on_a_non_stateful_task(scripted_env, sandbox, tmp_path):
    scripted_env.policy = LibraryPolicy()
    builder = DemoBuilder(SkelBuilderConfig(out=tmp_path), sandbox)

    async def collect():
        return [view async for view in builder.build("Write a short poem about autumn.")]

    assert "does not need a stateful environment" in asyncio.run(collect())[-1]["status"]


def test_a_stopped_build_leaves_nothing_running(scripted_env, sandbox, tmp_path):
    held = scripted_env.policy = HeldAtState()
    builder = DemoBuilder(SkelBuilderConfig(out=tmp_path, rounds=8), sandbox)

    async def stop_while_the_state_is_designed() -> tuple[list[str], set]:
        views = builder.build(TASK)
        statuses = [(await anext(views))["status"] for _ in range(3)]
        waiting = asyncio.ensure_future(anext(views))  # the state design is asked: no view yet
        await asyncio.get_running_loop().run_in_executor(None, held.asked.wait, HANG_GUARD_S)
        waiting.cancel()  # what the page's Stop does to the running event
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await views.aclose()
        return statuses, asyncio.all_tasks() - {asyncio.current_task()}

    try:
        statuses, still_running = asyncio.run(stop_while_the_state_is_designed())
    finally:
        held.release.set()
    assert statuses[-1].endswith("Environment described. Designing the state...")
    assert still_running == set()  # the synthesis task was cancelled with the build


def test_the_default_task_is_the_first_bundled_one():
    assert bundled_tasks()[0].startswith("Check out the book 'Dune'")


@pytest.fixture
def demo_url(scripted_env, sandbox, tmp_path):
    from skel_builder.demo import build_app

    scripted_env.policy = LibraryPolicy()
    app = build_app(SkelBuilderConfig(out=tmp_path, rounds=8), sandbox)
    app.queue().launch(server_name="127.0.0.1", prevent_thread_lock=True, share=False, quiet=True)
    try:
        yield app.local_url
    finally:
        app.close()


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser.new_page()
        browser.close()


@pytest.mark.browser
def test_demo_page_in_headless_chromium(demo_url, page):
    page.goto(demo_url, timeout=60_000)
    page.locator("#typed textarea").fill(TASK)
    page.locator("#build").click()
    page.get_by_text("Environment described").wait_for(timeout=60_000)
    page.get_by_text("Done: accepted").wait_for(timeout=120_000)
    body = page.content()
    assert "LibraryLoanSystem" in body and "checkout_book" in body
    assert "Tool schemas derived from the code" in body


@pytest.mark.browser
def test_demo_page_names_its_model_starts_on_a_bundled_task_and_stops(demo_url, page, scripted_env, tmp_path):
    from playwright.sync_api import expect

    held = scripted_env.policy = HeldAtState()
    try:
        page.goto(demo_url, timeout=60_000)
        expect(page.locator("#model")).to_contain_text(
            f"Model (from the configuration): scripted @ {scripted_env.base_url}"
        )
        expect(page.locator("#picked input")).to_have_value(bundled_tasks()[0])
        page.screenshot(path=tmp_path / "demo-opened.png", full_page=True)
        page.locator("#build").click()  # nothing typed: the bundled task is built
        expect(page.locator("#status")).to_contain_text("Designing the state", timeout=60_000)
        assert held.asked.wait(HANG_GUARD_S)
        page.locator("#stop").click()
        expect(page.locator("#status")).to_contain_text("Stopped.", timeout=60_000)
        page.screenshot(path=tmp_path / "demo-stopped.png", full_page=True)
    finally:
        held.release.set()
