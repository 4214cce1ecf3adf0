"""What a stage's work closure holds must travel to a Ray worker: sandbox pools and factories."""
from __future__ import annotations

import pickle

from envscaler_core.rollout import SandboxEnvFactory
from envscaler_core.runtime import WorkerPool
from envscaler_core.runtime.pool import close_adopted_pools


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
        with adopted.open_session("class E:\n    def ping(self) -> dict:\n        return {'ok': True}\n",
                                  "E") as session:
            assert session.call("ping", {}).observation == {"ok": True}
    finally:
        close_adopted_pools()
    assert pickle.loads(data) is not adopted  # closed pools are not handed out again
    close_adopted_pools()


def test_a_sandbox_factory_travels_with_fresh_threads():
    with WorkerPool(1) as pool:
        factory = SandboxEnvFactory(pool, threads=3)
        copy = pickle.loads(pickle.dumps(factory))
        try:
            assert copy.pool is pool and copy.threads == 3 and copy.executor is not factory.executor
        finally:
            copy.close()
            factory.close()
