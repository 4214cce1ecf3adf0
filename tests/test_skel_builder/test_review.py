"""Inspection with oracles, repair of failing methods, pruning, and checker calibration."""

from __future__ import annotations

import asyncio

from envscaler_core.artifacts import BuildLog
from envscaler_core.llm import LLMClient
from skel_builder.config import SkelBuilderConfig
from skel_builder.review import review_env

from .library_world import BROKEN_CHECKOUT, LibraryPolicy


def _review(scripted, sandbox, draft, **cfg):
    config = SkelBuilderConfig(**{"rounds": 16, **cfg})
    return asyncio.run(review_env(LLMClient(scripted.config()), sandbox, config, draft))


def test_correct_env_is_accepted_and_every_tool_covered(scripted, sandbox, make_draft):
    scripted.policy = LibraryPolicy()
    env = _review(scripted, sandbox, make_draft())
    report = env.inspection
    assert env.status == "accepted" and report.score >= 0.85
    assert set(report.per_tool) == {"get_book", "list_member_loans", "checkout_book", "return_book"}
    for verdicts in report.per_tool.values():
        assert {v.case_type for v in verdicts} == {"positive", "negative"}
    assert all(v.oracle_violations == [] for vs in report.per_tool.values() for v in vs)


def test_always_pass_checker_cannot_save_a_broken_tool(scripted, sandbox, make_draft):
    scripted.policy = LibraryPolicy()  # its checker answers Pass to everything
    env = _review(
        scripted,
        sandbox,
        make_draft(checkout_book=BROKEN_CHECKOUT),
        repair_rounds=0,
        prune_failing_tools=False,
        threshold=0.9,
    )
    report = env.inspection
    assert env.status == "rejected" and "below threshold 0.9" in report.reason
    failed = [v for v in report.per_tool["checkout_book"] if v.verdict == "Fail"]
    assert failed and all(v.llm_verdict == "Pass" for v in failed)
    assert failed[0].oracle_violations[0].startswith("no_exception")
    cal = report.calibration
    assert cal["llm_caught"] == 0 and cal["oracle_failures"] == len(failed) and cal["at_chance"] is True
    assert cal["llm_pass_rate"] == 1.0 and "at chance" in report.reason


def test_failing_method_is_repaired_and_reinspected(scripted, sandbox, make_draft):
    scripted.policy = LibraryPolicy()  # serves the correct checkout_book when asked to repair
    env = _review(scripted, sandbox, make_draft(checkout_book=BROKEN_CHECKOUT), repair_rounds=1)
    report = env.inspection
    assert env.status == "accepted", report.reason
    assert report.repairs and report.repairs[0]["tool"] == "checkout_book" and report.repairs[0]["fixed_by_gate"]
    assert "book.status" not in env.env_class_code
    assert all(v.verdict != "Fail" for v in report.per_tool["checkout_book"])


def test_unrepairable_tool_is_pruned_with_reasons(scripted, sandbox, make_draft):
    scripted.policy = LibraryPolicy(methods={"checkout_book": [BROKEN_CHECKOUT]})
    env = _review(
        scripted,
        sandbox,
        make_draft(checkout_book=BROKEN_CHECKOUT),
        repair_rounds=1,
        method_samples=2,
        prune_failing_tools=True,
    )
    report = env.inspection
    assert report.dropped_tools == ["checkout_book"]
    assert "checkout_book" not in [t["function"]["name"] for t in env.tools]
    attempts = report.repairs[0]["attempts"]
    assert len(attempts) == 2 and not any(a["ok"] for a in attempts)
    assert env.status == "accepted" and report.accepted


def _grumpy(policy):
    def answer(request):
        reply = policy(request)
        if "CheckerVerdict" in str(request.get("response_format")):
            return type(reply).json({"analysis": "", "result": "Fail", "error_reason": "made up"})
        return reply

    return answer


def test_checker_at_chance_is_discounted_but_oracles_still_fail(scripted, sandbox, make_draft):
    scripted.policy = _grumpy(LibraryPolicy(methods={"checkout_book": [BROKEN_CHECKOUT]}))
    env = _review(
        scripted, sandbox, make_draft(checkout_book=BROKEN_CHECKOUT), repair_rounds=0, prune_failing_tools=True
    )
    report = env.inspection
    assert report.calibration["at_chance"] and report.dropped_tools == ["checkout_book"]
    discounted = [
        v for vs in report.per_tool.values() for v in vs if v.llm_verdict == "Fail" and v.verdict == "Warning"
    ]
    assert discounted and "discounted" in discounted[0].warnings[-1]
    assert env.status == "accepted"


def test_llm_fail_counts_only_when_configured(scripted, sandbox, make_draft):
    scripted.policy = _grumpy(LibraryPolicy())
    strict = _review(scripted, sandbox, make_draft(), repair_rounds=0, prune_failing_tools=False)
    assert strict.status == "rejected"
    lenient = _review(scripted, sandbox, make_draft(), repair_rounds=0, llm_fail_counts=False)
    assert lenient.status == "accepted"
    assert lenient.inspection.calibration["agreement"] == 0.0


def test_garbage_from_tester_and_checker_leaves_the_oracles_in_charge(scripted, sandbox, make_draft):
    policy = LibraryPolicy()

    def garbage(request):
        fmt = str(request.get("response_format"))
        if "CheckerVerdict" in fmt or "TesterArguments" in fmt:
            return type(policy(request)).text("Sure! The call looks great.")
        return policy(request)

    scripted.policy = garbage
    env = _review(scripted, sandbox, make_draft(), repair_rounds=0)
    verdicts = [v for vs in env.inspection.per_tool.values() for v in vs]
    assert env.status == "accepted" and all(v.arguments_source == "derived" for v in verdicts)
    judged = [v for v in verdicts if not v.llm_reason.startswith("arguments rejected")]
    assert all(v.llm_verdict is None and v.llm_reason.startswith("checker unavailable") for v in judged)


def test_a_draft_that_never_assembled_is_rejected_with_its_reason(scripted, sandbox, make_draft):
    scripted.policy = LibraryPolicy()
    draft = make_draft()
    draft = draft.model_copy(update={"build_log": BuildLog(synthesis_error="assembled class does not load: boom")})
    env = _review(scripted, sandbox, draft)
    assert env.status == "rejected" and env.inspection.reason.startswith("assembled class does not load")
    assert scripted.completion_requests == []


def test_routine_methods_are_controls_an_llm_fail_on_them_is_a_false_alarm(scripted, sandbox, make_draft, schema):
    from skel_builder.crud import routine_methods

    routine = {m.name: m.code for m in routine_methods(schema) if m.name.startswith(("create_", "update_"))}
    draft = make_draft(**routine)
    scripted.policy = _grumpy(LibraryPolicy())  # fails every call, correct or not
    env = _review(scripted, sandbox, draft, repair_rounds=0, rounds=24, cap_per_tool=2)
    report = env.inspection
    cal = report.calibration
    assert cal["controls_judged"] >= 2 and cal["false_alarms"] == cal["controls_judged"]
    assert cal["measurable"] and cal["at_chance"]  # no defect to catch, but it fails known-good code
    assert env.status == "accepted" and report.dropped_tools == []
    controls = [v for t in routine for v in report.per_tool[t]]
    assert controls and all(v.verdict == "Warning" and "false alarm" in v.warnings[-1] for v in controls)


def test_a_repaired_routine_method_is_no_longer_a_control(scripted, sandbox, make_draft, schema):
    from skel_builder.crud import routine_methods
    from skel_builder.review import EnvReview

    routine = {m.name: m.code for m in routine_methods(schema) if m.name == "create_book"}
    review = EnvReview(make_draft(**routine))
    assert review.known_good() == {"create_book"}
    review.methods["create_book"] = routine["create_book"].replace("created", "made")
    assert review.known_good() == frozenset()


def test_dropped_tools_keep_the_verdicts_that_dropped_them(scripted, sandbox, make_draft):
    scripted.policy = LibraryPolicy(methods={"checkout_book": [BROKEN_CHECKOUT]})
    env = _review(
        scripted, sandbox, make_draft(checkout_book=BROKEN_CHECKOUT), repair_rounds=0, prune_failing_tools=True
    )
    evidence = env.inspection.dropped_verdicts["checkout_book"]
    assert evidence and any(v.oracle_violations for v in evidence)


def test_keep_rule_scores_every_round_before_pruning(scripted, sandbox, make_draft):
    """The paper's rule: (pass + warning) / total over all tools' rounds, pruned or not."""
    scripted.policy = LibraryPolicy(methods={"checkout_book": [BROKEN_CHECKOUT]})
    kept = _review(scripted, sandbox, make_draft(checkout_book=BROKEN_CHECKOUT), repair_rounds=0)
    report = kept.inspection  # pruning is off by default: the failing tool stays, the score decides
    assert (report.rounds, report.pass_count + report.warning_count, report.fail_count) == (16, 14, 2)
    assert report.score == 14 / 16 and report.pruned_score is None and report.dropped_tools == []
    assert kept.status == "accepted" and "checkout_book" in report.reason
    assert "checkout_book" in [t["function"]["name"] for t in kept.tools]
    pruned = _review(
        scripted,
        sandbox,
        make_draft(checkout_book=BROKEN_CHECKOUT),
        repair_rounds=0,
        prune_failing_tools=True,
        threshold=0.9,
    )
    report = pruned.inspection  # pruning raised the score on what is left to 1.0; the rule still rejects
    assert report.dropped_tools == ["checkout_book"] and report.pruned_score == 1.0
    assert report.score == 14 / 16 and pruned.status == "rejected"
    assert "0.88 below threshold 0.9 (before pruning)" in report.reason


def test_pruning_may_not_take_an_entitys_last_state_changing_tool(make_draft):
    from envscaler_core.artifacts import InspectionReport
    from skel_builder.review import EnvReview, keep_rule_reason

    review = EnvReview(make_draft())
    assert {"books", "loans"} <= review.changed_entities()
    for tool in ("checkout_book", "return_book"):
        review.methods.pop(tool)
    assert "loans" not in review.changed_entities()
    lost = InspectionReport(score=1.0, pruned_score=1.0, lost_entities=["loans"])
    assert keep_rule_reason(lost, 0.85) == "pruning left no state-changing tool for ['loans']"
    assert keep_rule_reason(InspectionReport(score=0.86), 0.85) == ""
    assert keep_rule_reason(InspectionReport(score=0.84), 0.85).startswith("score 0.84 below")
