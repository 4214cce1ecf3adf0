"""Fixtures of the interact_with_env tests."""

from __future__ import annotations

import pytest

from tests.test_interact_with_env.viewer_runs import scripted_pipeline_run

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    """A pipeline run folder made by the scripted server (read-only: copy it to break it)."""
    with scripted_pipeline_run(tmp_path_factory.mktemp("run") / "run") as run:
        yield run


@pytest.fixture
def chromium():
    """Debian's headless Chromium driven by Playwright (``make setup-browser`` installs it)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    """A page of :func:`chromium`."""
    return chromium.new_page()
