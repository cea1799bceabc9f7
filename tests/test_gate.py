"""The release gate (eval/gate.py): when a candidate may replace the baseline, and why not."""

from __future__ import annotations

import dataclasses

import pytest

from eval.gate import MISS, MRR, GateVerdict, release_gate

BASELINE = {"mrr@10": 0.50, "miss@10": 0.10, "hit@1": 0.40}


def test_gate_passes_an_identical_candidate():
    assert release_gate(BASELINE, dict(BASELINE)) == GateVerdict(True, [], [])


def test_gate_fails_when_misses_rise_by_more_than_one_point():
    verdict = release_gate(BASELINE, {**BASELINE, "miss@10": 0.115})
    assert not verdict.passed
    assert verdict.reasons == [
        "miss@10 rose by 1.50 points (10.00% → 11.50%), more than the allowed 1.00"
    ]


@pytest.mark.parametrize(("before", "after"), [(0.03, 0.04), (0.06, 0.07), (0.12, 0.13)])
def test_gate_passes_a_miss_rise_of_exactly_one_point(before, after):
    # (after − before) × 100 is 1.0000000000000009 in floating point for these pairs
    verdict = release_gate({**BASELINE, "miss@10": before}, {**BASELINE, "miss@10": after})
    assert verdict.passed, verdict.reasons


def test_gate_miss_allowance_is_in_points():
    candidate = {**BASELINE, "miss@10": 0.125}
    assert release_gate(BASELINE, candidate, max_miss_rise=2.5).passed
    assert not release_gate(BASELINE, candidate, max_miss_rise=2.4).passed


def test_gate_fails_on_any_mrr_drop_by_default():
    verdict = release_gate(BASELINE, {**BASELINE, "mrr@10": 0.499})
    assert verdict.reasons == [
        "MRR@10 fell by 0.0010 (0.5000 → 0.4990), more than the allowed 0.0000"
    ]


def test_gate_passes_an_mrr_drop_of_exactly_the_allowance():
    # 0.8 − 0.7 is 0.10000000000000009 in floating point
    verdict = release_gate(
        {**BASELINE, "mrr@10": 0.8}, {**BASELINE, "mrr@10": 0.7}, max_mrr_drop=0.1
    )
    assert verdict.passed


def test_gate_fails_when_a_slice_drops_by_more_than_the_allowance():
    verdict = release_gate(
        BASELINE,
        BASELINE,
        {"head": {"mrr@10": 0.70}, "tail": {"mrr@10": 0.30}},
        {"head": {"mrr@10": 0.72}, "tail": {"mrr@10": 0.24}},
    )
    assert not verdict.passed
    assert verdict.reasons == [
        "slice 'tail': MRR@10 fell by 0.0600 (0.3000 → 0.2400), more than the allowed 0.0500"
    ]


def test_gate_passes_a_slice_drop_of_exactly_the_allowance():
    # 0.55 − 0.5 is 0.050000000000000044 in floating point
    verdict = release_gate(
        BASELINE, BASELINE, {"tail": {"mrr@10": 0.55}}, {"tail": {"mrr@10": 0.5}}
    )
    assert verdict.passed


def test_gate_lists_every_reason_to_fail():
    verdict = release_gate(
        BASELINE,
        {**BASELINE, "mrr@10": 0.45, "miss@10": 0.13},
        {"tail": {"mrr@10": 0.4}},
        {"tail": {"mrr@10": 0.3}},
    )
    assert [reason.split(" ")[0] for reason in verdict.reasons] == ["miss@10", "MRR@10", "slice"]


def test_gate_warns_when_mrr_rises_while_misses_rise():
    verdict = release_gate(BASELINE, {**BASELINE, "mrr@10": 0.55, "miss@10": 0.105})
    assert verdict.passed
    assert verdict.warnings == [
        "MRR@10 went up (0.5000 → 0.5500) but misses went up too (10.00% → 10.50%): "
        "more users get no answer at all"
    ]


def test_gate_does_not_warn_when_mrr_and_misses_both_improve():
    verdict = release_gate(BASELINE, {**BASELINE, "mrr@10": 0.55, "miss@10": 0.08})
    assert verdict == GateVerdict(True, [], [])


def test_gate_warns_about_a_slice_it_cannot_compare():
    verdict = release_gate(
        BASELINE, BASELINE, {"new": {}, "head": {"mrr@10": 0.6}}, {"head": {"mrr@10": 0.6}}
    )
    assert verdict.passed
    assert verdict.warnings == ["slice 'new' not compared: no MRR@10 for the baseline"]


def test_gate_fails_when_an_overall_figure_is_missing():
    verdict = release_gate(BASELINE, {"mrr@10": float("nan")})
    assert not verdict.passed
    assert verdict.reasons == ["cannot compare: no figure for candidate mrr@10, candidate miss@10"]


def test_gate_rejects_a_negative_allowance():
    with pytest.raises(ValueError, match="max_slice_drop"):
        release_gate(BASELINE, BASELINE, max_slice_drop=-0.01)


def test_gate_verdict_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        release_gate(BASELINE, BASELINE).passed = False


def test_gate_reason_names_the_new_misses_per_slice_most_first():
    verdict = release_gate(
        {MRR: 0.7, MISS: 0.09}, {MRR: 0.76, MISS: 0.14}, new_misses={"head": 1, "tail": 6, "x": 0}
    )
    assert verdict.reasons == [
        "miss@10 rose by 5.00 points (9.00% → 14.00%), more than the allowed 1.00: "
        "7 new misses (tail 6, head 1)"
    ]


def test_gate_reason_counts_new_misses_without_slices():
    verdict = release_gate({MRR: 0.7, MISS: 0.0}, {MRR: 0.7, MISS: 0.02}, new_misses={"": 1})
    assert verdict.reasons[0].endswith("more than the allowed 1.00: 1 new miss")


def test_gate_passing_on_misses_does_not_mention_new_misses():
    verdict = release_gate({MRR: 0.7, MISS: 0.10}, {MRR: 0.7, MISS: 0.10}, new_misses={"tail": 3})
    assert verdict == GateVerdict(True, [], [])
