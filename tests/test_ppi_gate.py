"""The release gate on prediction-powered deltas (eval.gate.gate_on_estimates): each rule's CI
is its estimate ± Student's t times its standard error at the rule's Holm level, and its
p-value of violation the same t distribution's tail."""

from __future__ import annotations

import pytest

from goldset.eval.gate import FAMILY_ALPHA, Estimated, gate_on_estimates
from goldset.eval.intervals import student_t_quantile

STILL = Estimated(0.0, 0.001, 49, 50, 0.10, 0.10)  # miss@10: no change, tightly known


def test_a_clear_fall_fails_and_its_ci_is_the_t_interval_at_its_holm_level() -> None:
    fall = Estimated(-0.10, 0.02, 49, 50, 0.60, 0.50)
    verdict = gate_on_estimates({"miss@10": STILL, "mrr@10": fall})
    assert verdict.verdict == "fail"
    mrr = next(rule for rule in verdict.rules if rule.metric == "mrr@10")
    assert mrr.status == "violated" and mrr.queries == 50
    # Smallest p-value first: held to α / 2 (two rules), a CI at level 1 − α.
    assert mrr.ci_level == pytest.approx(1 - FAMILY_ALPHA)
    half = student_t_quantile(1 - FAMILY_ALPHA / 2, 49) * 0.02
    assert mrr.ci == pytest.approx((-0.10 - half, -0.10 + half))
    assert mrr.p_violation < 1e-4
    assert (mrr.baseline, mrr.candidate) == (0.60, 0.50)


def test_an_estimate_too_loose_to_tell_is_undecided_with_more_queries() -> None:
    loose = Estimated(-0.02, 0.03, 24, 25, 0.60, 0.58)
    verdict = gate_on_estimates({"miss@10": STILL, "mrr@10": loose})
    assert verdict.verdict == "inconclusive"
    mrr = verdict.rules[1]
    assert mrr.status == "undecided" and mrr.more_queries > 0
    assert 0.2 < mrr.p_violation < 0.5  # the estimate is below 0, by less than its error


def test_kept_rules_pass_and_a_slice_is_judged_on_its_own_estimate() -> None:
    rise = Estimated(0.08, 0.01, 49, 50, 0.50, 0.58)
    slices = {"tail": Estimated(-0.20, 0.02, 19, 20, 0.60, 0.40)}
    assert gate_on_estimates({"miss@10": STILL, "mrr@10": rise}).verdict == "pass"
    verdict = gate_on_estimates({"miss@10": STILL, "mrr@10": rise}, slices)
    assert verdict.verdict == "fail"
    assert [rule.name for rule in verdict.rules if rule.status == "violated"] == [
        "slice tail: mrr@10"
    ]
    assert "slice 'tail': MRR@10 fell by 0.2000" in verdict.reasons[0]
