"""Every stage's ``run`` against a server that answers 20% of requests with a fault.

Faults: 429, 500, timeout, malformed JSON, empty content (seeded). With a retry budget the run
completes with every item exactly once; without one, the items whose calls failed are recorded
in ``failures.jsonl`` with the reason, and running the stage again retries exactly those.
"""

from __future__ import annotations

import pytest

from .stages import ALL, failures, retries


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.name)
def test_run_completes_under_20_percent_faults(case, faulty_env, tmp_path):
    faulty_env.policy = case.policy()
    # the server holds a "timeout" fault's request until the client gives up
    assert case.main([*case.args(tmp_path), "--concurrency", "4", *retries(8, timeout_s=1.0)]) == 0
    case.check(tmp_path)
    assert failures(tmp_path) == []
    served = faulty_env.faults_served
    assert len(served) >= 0.1 * len(faulty_env.completion_requests) and len(set(served)) >= 3


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.name)
def test_failures_beyond_the_retry_budget_are_recorded_and_retried_by_a_rerun(case, faulty_env, tmp_path):
    faulty_env.policy = case.policy()
    # No timeouts (keep it quick) and no empty answers: an agent that keeps answering nothing is a
    # model failure that rollouts score (flag empty_agent_response), not an outage to retry.
    faulty_env.fault_kinds = ("429", "500", "malformed")
    case.main([*case.args(tmp_path), "--concurrency", "4", *retries(0)])
    recorded = failures(tmp_path)
    assert recorded, "no call failed at a 20% fault rate without retries"
    for failure in recorded:
        assert failure["stage"] == case.name and failure["id"].startswith(f"{case.name}:")
        assert "LLMError" in failure["reason"] or "StructuredOutputError" in failure["reason"], failure

    faulty_env.fault_rate = 0.0
    assert case.main([*case.args(tmp_path), "--concurrency", "4", *retries(0)]) == 0
    case.check(tmp_path)
