"""RL envs under ROLL's concurrency: K env instances, one thread each, sharing one process-wide
sandbox of 8 session workers (the shipped ROLL YAML runs 32 envs per worker with ``pool_size: 8``).

Every episode must finish with its correct reward (progress reward on, so scoring needs checkers
while other envs hold every session worker). On a quiet machine (``perf``), no call may stall for an
acquire timeout, and the time per episode at K = 32 must stay within 2x of K = 4 (the wall time
itself cannot: K = 32 runs 8x the episodes on 8 session workers).
"""

from __future__ import annotations

import contextlib
import threading
import time

import gem
import pytest

from rl.register import register_envs
from tests.test_rl.shop import call

POOL, EPISODES = 8, 2
GENERATE_S = 0.005
STALL_S = 30.0  # far above any honest wait here; a stalled call waits for the acquire timeout
CANCEL_A1, CANCEL_BOTH = 0, 1
# (scenario, actions, per-step rewards with progress on, final reward)
PLANS = [
    (CANCEL_A1, [call("cancel_order", order_id="A1"), "Task Completed"], [0.5, 0.0], 1.0),
    (
        CANCEL_BOTH,
        [call("cancel_order", order_id="A1"), call("cancel_order", order_id="B2"), "Task Completed"],
        [0.5, 0.5, 0.0],
        1.0,
    ),
    (CANCEL_BOTH, [call("cancel_order", order_id="A1"), "Task Completed"], [0.5, 0.0], 0.5),
]


def drive(env, first_plan: int, out: list, slowest: list, lock=None) -> None:
    """One ROLL env thread: EPISODES episodes, recording rewards and the slowest single call.

    With ``lock``, every reset and step runs under it and the thread "generates" (sleeps) between
    them outside it, as ROLL's TrajEnvManager does with ``use_thread_lock`` (our shipped YAML)."""
    guard = lock or contextlib.nullcontext()
    for episode in range(EPISODES):
        index, actions, _, _ = PLANS[(first_plan + episode) % len(PLANS)]
        started = time.perf_counter()
        with guard:
            env.reset(task_index=index)
        slowest.append(time.perf_counter() - started)
        rewards = []
        for action in actions:
            if lock is not None:
                time.sleep(GENERATE_S)
            started = time.perf_counter()
            with guard:
                _, reward, terminated, truncated, info = env.step(action)
            slowest.append(time.perf_counter() - started)
            rewards.append(reward)
        out.append(
            (
                (first_plan + episode) % len(PLANS),
                rewards,
                terminated,
                info["metrics"]["final_reward"],
                list(env.core.trajectory().flags),
            )
        )


def run(shop_paths, k: int, pool: int = POOL, lock=None) -> tuple[float, list, float]:
    register_envs()
    envs = [
        gem.make("envscaler_task_env", **shop_paths, pool_size=pool, progress_reward=True, tool_call_mode="all")
        for _ in range(k)
    ]
    scorer = getattr(envs[0].core, "scorer", None)
    if scorer is not None:  # score every run afresh: checkers must really run while sessions are held
        scorer.clear_cache()
    results: list = []
    waits: list[float] = []
    threads = [
        threading.Thread(target=drive, args=(env, i, results, waits, lock), daemon=True) for i, env in enumerate(envs)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()  # a deadlock is stopped by the test's timeout
    wall = time.perf_counter() - started
    sandbox = getattr(envs[0].core, "sandbox", None)
    if sandbox is not None:  # every episode was scored: its session worker is back without a reset/close
        assert sandbox.session_pool.idle_workers == sandbox.session_capacity == pool
    for env in envs:
        env.close()
    return wall, results, max(waits)


def check(results: list, k: int) -> None:
    assert len(results) == k * EPISODES, f"{k * EPISODES - len(results)} episodes did not finish"
    for plan, rewards, terminated, final, flags in results:
        _, _, expected, expected_final = PLANS[plan]
        assert terminated and rewards == expected and final == expected_final, (plan, rewards, final)
        assert "checker_error" not in flags, flags


@pytest.mark.timeout(600)
def test_32_envs_on_8_workers_finish_with_their_rewards(shop_paths):
    _, results, _ = run(shop_paths, 32)
    check(results, 32)


@pytest.mark.perf
@pytest.mark.timeout(600)
def test_32_envs_on_8_workers_do_not_stall_or_slow_each_episode_down(shop_paths, capsys):
    run(shop_paths, 1)  # warm-up: the process-wide sandbox starts its workers
    timed = {}
    for k in (4, 32, 4, 32):  # best of two each, interleaved: the machine is shared
        wall, results, slowest = run(shop_paths, k)
        check(results, k)
        best = timed.get(k, (float("inf"), 0.0))
        timed[k] = (min(best[0], wall), max(best[1], slowest))
    (wall4, slow4), (wall32, slow32) = timed[4], timed[32]
    per4, per32 = wall4 / (4 * EPISODES), wall32 / (32 * EPISODES)
    with capsys.disabled():
        print(
            f"\nK=4: {wall4:.2f}s ({per4:.3f}s/episode, slowest call {slow4:.2f}s); "
            f"K=32: {wall32:.2f}s ({per32:.3f}s/episode, slowest call {slow32:.2f}s); pool {POOL}"
        )
    assert slow32 < STALL_S, f"a call waited {slow32:.1f}s"
    assert per32 <= 2 * per4, f"K=32 takes {per32:.3f}s per episode, K=4 {per4:.3f}s"


@pytest.mark.timeout(600)
def test_more_envs_than_workers_under_one_process_lock_do_not_deadlock(shop_paths, capsys):
    """ROLL's use_thread_lock: reset/step under one lock, generation outside it. Before parking, the
    first reset that found no idle worker waited under the lock for a worker whose env was waiting
    for the lock (ROLL with 4 envs on pool_size 2 produced no batch in 240 s)."""
    k, pool = 8, 2
    wall, results, slowest = run(shop_paths, k, pool=pool, lock=threading.Lock())
    check(results, k)
    with capsys.disabled():
        print(f"\nK={k} on {pool} workers under one lock: {wall:.2f}s, slowest call {slowest:.2f}s")
