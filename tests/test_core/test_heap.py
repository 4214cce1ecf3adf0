"""The garbage-collector settings of a long run."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.perf


def test_a_long_run_freezes_the_start_up_objects_once_and_collects_the_young_less_often():
    code = (
        "import gc; from envscaler_core.heap import settle_for_long_run, YOUNG_THRESHOLD; "
        "before = gc.get_freeze_count(); settle_for_long_run(); frozen = gc.get_freeze_count(); "
        "junk = [[] for _ in range(1000)]; settle_for_long_run(); "
        "print(before, frozen > 1000, gc.get_freeze_count() == frozen, gc.get_threshold()[0] == YOUNG_THRESHOLD)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "True", "True", "True"]


@pytest.mark.parametrize(
    "entry",
    [
        "from envscaler_core.rollout import run_episodes; asyncio.run(run_episodes(None, [], 1))",
        "from envscaler_core.config import StageConfig; from envscaler_core.artifacts import SourceTask; "
        "from envscaler_core.runner import StageContext, process_items; "
        "ctx = StageContext('s', StageConfig(out=sys.argv[1])); "
        "asyncio.run(process_items(ctx, [], None, ctx.store('tasks', SourceTask)))",
    ],
)
def test_the_stage_runner_and_the_rollout_loop_settle_the_heap(entry, tmp_path):
    code = f"import asyncio, gc, sys; {entry}; print(gc.get_freeze_count() > 1000, gc.isenabled())"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]
