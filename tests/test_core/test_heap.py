"""The garbage-collector settings of a long run."""
import gc
import subprocess
import sys


def test_a_long_run_freezes_the_start_up_objects_once_and_collects_the_young_less_often():
    code = ("import gc; from envscaler_core.heap import settle_for_long_run, YOUNG_THRESHOLD; "
            "before = gc.get_freeze_count(); settle_for_long_run(); frozen = gc.get_freeze_count(); "
            "junk = [[] for _ in range(1000)]; settle_for_long_run(); "
            "print(before, frozen > 1000, gc.get_freeze_count() == frozen, gc.get_threshold()[0] == YOUNG_THRESHOLD)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "True", "True", "True"]


def test_the_stage_runner_and_the_rollout_loop_settle_the_heap():
    import inspect

    from envscaler_core import runner
    from envscaler_core.rollout import engine

    assert "settle_for_long_run()" in inspect.getsource(runner.process_items)
    assert "settle_for_long_run()" in inspect.getsource(engine.run_episodes)
    assert gc.isenabled()
