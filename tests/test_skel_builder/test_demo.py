"""The build demo: the step stream without a browser, then the real page in headless Chromium."""

from __future__ import annotations

import asyncio
import os

import pytest

from skel_builder.config import SkelBuilderConfig
from skel_builder.demo import DemoBuilder

from .library_world import LibraryPolicy

TASK = "Check out the book 'Dune' for library member M-102."


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


@pytest.mark.browser
def test_demo_page_in_headless_chromium(scripted_env, sandbox, tmp_path):
    from playwright.sync_api import sync_playwright

    from skel_builder.demo import build_app

    scripted_env.policy = LibraryPolicy()
    app = build_app(SkelBuilderConfig(out=tmp_path, rounds=8), sandbox)
    app.queue().launch(
        server_name="127.0.0.1", server_port=0 or None, prevent_thread_lock=True, share=False, quiet=True
    )
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            page = browser.new_page()
            page.goto(app.local_url, timeout=60_000)
            page.locator("#typed textarea").fill(TASK)
            page.locator("#build").click()
            page.get_by_text("Environment described").wait_for(timeout=60_000)
            page.get_by_text("Done: accepted").wait_for(timeout=120_000)
            body = page.content()
            assert "LibraryLoanSystem" in body and "checkout_book" in body
            assert "Tool schemas derived from the code" in body
            browser.close()
    finally:
        app.close()
