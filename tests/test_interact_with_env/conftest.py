"""Fixtures of the interact_with_env tests."""

from __future__ import annotations

import pytest

from tests.test_interact_with_env.viewer_runs import scripted_pipeline_run


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    """A pipeline run folder made by the scripted server (read-only: copy it to break it)."""
    with scripted_pipeline_run(tmp_path_factory.mktemp("run") / "run") as run:
        yield run
