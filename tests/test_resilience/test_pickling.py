"""What a stage's work closure holds must travel to a Ray worker: sandbox pools and the sandbox facade."""

from __future__ import annotations

import pickle

from envscaler_core.rollout import ChecklistReward, ScenarioEnvs
from envscaler_core.runtime import EnvSession, Sandbox, WorkerPool, close_adopted_pools
from envscaler_core.scoring import Scorer


def test_a_pool_unpickles_as_this_process_pool_once_per_token():
    pool = WorkerPool(1)
    try:
        assert pickle.loads(pickle.dumps(pool)) is pool  # same process: the pool itself
        data = pickle.dumps({"a": pool, "b": pool})
    finally:
        pool.close()
    # the original is gone, as in another process: one new pool of the same size stands for it
    copies = pickle.loads(data)
    try:
        adopted = copies["a"]
        assert adopted is copies["b"] is pickle.loads(data)["a"]
        assert adopted is not pool and adopted.size == 1 and adopted.token == pool.token
        with EnvSession(
            adopted, "class E:\n    def ping(self) -> dict:\n        return {'ok': True}\n", "E"
        ) as session:
            assert session.call("ping", {}).observation == {"ok": True}
    finally:
        close_adopted_pools()
    assert pickle.loads(data) is not adopted  # closed pools are not handed out again
    close_adopted_pools()


def test_a_sandbox_travels_with_its_pools_and_fresh_threads():
    with Sandbox(1, 1, checker_timeout_s=3.0) as box:
        copy = pickle.loads(pickle.dumps(box))
        assert (
            copy.session_pool is box.session_pool and copy.oneshot_pool is box.oneshot_pool
        )  # same process: same pools
        assert copy._calls is not box._calls and copy.checker_timeout_s == 3.0
        assert copy.check(["def check_func(final_state):\n    return True"], {}, {})[0].status == "true"


def test_the_engine_parts_over_a_sandbox_pickle():
    with Sandbox(1, 1) as box:
        hook = ChecklistReward(Scorer(box), progress=False)
        hook.scorer.checks([], {}, {})
        copy, envs = pickle.loads(pickle.dumps(hook)), pickle.loads(pickle.dumps(ScenarioEnvs(box)))
        assert copy.scorer.sandbox.session_pool is box.session_pool and copy.progress is False
        assert envs.sandbox.oneshot_pool is box.oneshot_pool
