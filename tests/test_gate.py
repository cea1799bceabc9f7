"""The release gate (eval/gate.py): pass, fail or inconclusive, each rule with its reason."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from goldset.eval.gate import FAMILY_ALPHA, SCHEMA, gate_on_means, release_gate

RR = 0  # the column of RR@10 in the gate's per-query values; miss@10 is column 1


def per_query(reciprocal_ranks) -> np.ndarray:
    """The gate's per-query values (RR@10, miss@10) from RR@10 alone (0 is a miss)."""
    rr = np.asarray(reciprocal_ranks, dtype=np.float64)
    return np.c_[rr, rr == 0]


def statuses(verdict) -> dict[str, str]:
    return {rule.name: rule.status for rule in verdict.rules}


BASELINE = per_query([1.0, 0.5, 1.0, 0.0] * 25)  # 100 queries: MRR@10 0.625, 25% misses


# --- on means alone (no resamples): the CI is the delta itself ----------------------------------


def test_gate_passes_an_identical_candidate_with_every_rule_kept():
    verdict = release_gate(BASELINE, BASELINE.copy(), {"head": np.arange(50)})
    assert verdict.verdict == "pass" and verdict.passed
    assert statuses(verdict) == {"miss@10": "kept", "mrr@10": "kept", "slice head: mrr@10": "kept"}
    assert verdict.reasons == [] and verdict.warnings == []


def test_gate_on_means_fails_when_misses_rise_by_more_than_one_point():
    candidate = BASELINE.copy()
    candidate[[1, 5]] = [0.0, 1.0]  # two of the 100 queries now miss
    verdict = release_gate(BASELINE, candidate, n_resamples=0, max_mrr_drop=1.0)
    assert verdict.verdict == "fail"
    assert verdict.reasons == [
        "miss@10 rose by 2.00 points (25.00% → 27.00%), more than the allowed 1.00"
    ]


def test_gate_on_means_passes_a_miss_rise_of_exactly_the_allowance():
    candidate = BASELINE.copy()
    candidate[[1, 5]] = [0.0, 1.0]
    verdict = release_gate(BASELINE, candidate, n_resamples=0, max_mrr_drop=1, max_miss_rise=2)
    assert verdict.verdict == "pass", verdict.reasons


def test_gate_on_means_fails_on_any_mrr_drop_by_default():
    candidate = BASELINE.copy()
    candidate[0, RR] = 0.5
    verdict = release_gate(BASELINE, candidate, n_resamples=0)
    assert verdict.reasons == [
        "MRR@10 fell by 0.0050 (0.6250 → 0.6200), more than the allowed 0.0000"
    ]


def test_gate_on_means_fails_when_a_slice_drops_by_more_than_its_allowance():
    candidate = BASELINE.copy()
    candidate[[0, 2], RR] = 0.5  # the first slice loses 1.0 over its 10 queries
    candidate[[51, 55], RR] = 1.0  # the second slice gains what the first lost
    slices = {"head": np.arange(10), "tail": np.arange(50, 60)}
    verdict = release_gate(BASELINE, candidate, slices, n_resamples=0)
    assert statuses(verdict)["slice head: mrr@10"] == "violated"
    assert verdict.reasons == [
        "slice 'head': MRR@10 fell by 0.1000 (0.6500 → 0.5500), more than the allowed 0.0500"
    ]


def test_gate_rejects_a_negative_allowance():
    with pytest.raises(ValueError, match="max_slice_drop"):
        release_gate(BASELINE, BASELINE, max_slice_drop=-0.01)


def test_gate_fails_with_no_queries_to_compare():
    verdict = release_gate(np.empty((0, 2)), np.empty((0, 2)))
    assert (verdict.verdict, verdict.reasons) == ("fail", ["cannot compare: no queries"])


def test_gate_verdict_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        release_gate(BASELINE, BASELINE).verdict = "fail"


# --- the seed's incident -------------------------------------------------------------------------


def seeds_incident() -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """200 queries (160 head, 40 tail): retraining lifts MRR@10 from 0.71 to 0.76 while misses
    go from 9% to 14%: ten tail queries, found at rank 1 before, are now missed."""
    head_misses = np.zeros(18)
    baseline = np.r_[head_misses, np.ones(62), np.full(80, 0.5), np.ones(40)]
    candidate = np.r_[head_misses, np.ones(102), np.full(40, 0.5), np.zeros(10), np.ones(30)]
    return (
        per_query(baseline),
        per_query(candidate),
        {
            "head": np.arange(160),
            "tail": np.arange(160, 200),
        },
    )


def test_the_seeds_incident_fails_and_names_the_ten_new_tail_misses():
    baseline, candidate, slices = seeds_incident()
    assert baseline[:, RR].mean() == pytest.approx(0.71)
    assert candidate[:, RR].mean() == pytest.approx(0.76)
    assert (baseline[:, 1].mean(), candidate[:, 1].mean()) == (0.09, 0.14)
    verdict = release_gate(baseline, candidate, slices, new_misses={"tail": 10, "head": 0})
    assert verdict.verdict == "fail"
    assert statuses(verdict)["miss@10"] == "violated"
    assert statuses(verdict)["slice tail: mrr@10"] == "violated"
    miss = verdict.rules[0]
    assert miss.reason.startswith("miss@10 rose by 5.00 points (9.00% → 14.00%, ")
    assert miss.reason.endswith("more than the allowed 1.00: 10 new misses (tail 10)")
    assert miss.ci[0] > 1.0  # the whole CI beyond the allowance
    assert verdict.warnings[0].startswith("MRR@10 went up (0.7100 → 0.7600) but misses")


# --- three verdicts from the CI ------------------------------------------------------------------


def test_a_small_drop_the_ci_cannot_confirm_is_inconclusive_not_fail():
    candidate = BASELINE.copy()
    candidate[[0, 2], RR] = 0.5  # two of 100 queries from rank 1 to 2: MRR@10 −0.01
    verdict = release_gate(BASELINE, candidate)
    assert verdict.verdict == "inconclusive"
    mrr = verdict.rules[1]
    assert mrr.status == "undecided" and mrr.ci[0] < 0 <= mrr.ci[1] + 1e-12
    assert mrr.more_queries > 0
    assert "cannot tell yet whether it fell by more than the allowed 0.0000" in mrr.reason


def test_an_undecided_rule_says_about_how_many_more_queries_would_decide_it():
    candidate = BASELINE.copy()
    candidate[[0, 2, 4, 6], RR] = 0.5
    candidate[[1], RR] = 1.0
    verdict = release_gate(BASELINE, candidate)
    mrr = verdict.rules[1]
    assert mrr.status == "undecided"
    assert mrr.more_queries > 100
    assert mrr.reason.endswith(f"about {mrr.more_queries} more queries would decide it")


def test_a_rule_whose_change_sits_at_its_allowance_can_never_be_decided():
    candidate = BASELINE.copy()
    candidate[[0, 2], RR] = 0.5
    candidate[[1, 5], RR] = 1.0  # up by as much as the others fell: MRR@10 unchanged
    mrr = release_gate(BASELINE, candidate).rules[1]
    assert mrr.status == "undecided" and mrr.more_queries is None
    assert mrr.reason.endswith(
        "no number of queries decides it while the change sits at the allowance"
    )


def test_the_json_names_its_schema_and_every_rule():
    verdict = release_gate(BASELINE, BASELINE.copy(), {"tail": np.arange(10)}).as_json()
    assert verdict["schema"] == SCHEMA == "goldset.gate/1"
    assert (verdict["verdict"], verdict["passed"]) == ("pass", True)
    assert [rule["name"] for rule in verdict["rules"]] == [
        "miss@10",
        "mrr@10",
        "slice tail: mrr@10",
    ]
    assert set(verdict["rules"][0]) >= {"delta", "ci", "ci_level", "status", "more_queries"}


def test_holm_shows_the_first_rule_at_alpha_over_the_number_of_rules():
    baseline, candidate, slices = seeds_incident()
    rules = release_gate(baseline, candidate, slices).rules
    # Four rules, two violated: the smallest p-value held to α/4, the next to α/3.
    levels = sorted((rule.ci_level for rule in rules), reverse=True)
    assert levels[0] == pytest.approx(1 - 2 * FAMILY_ALPHA / 4)
    assert levels[1] == pytest.approx(1 - 2 * FAMILY_ALPHA / 3)


# --- simulations (seeded) ------------------------------------------------------------------------

RR_VALUES = np.append(1 / np.arange(1, 11), 0.0)


def test_holm_keeps_false_failures_at_most_five_percent_over_six_slices():
    """500 comparisons of two systems that are equally good on every query (each query's two
    values drawn alike and handed out at random), all rules at their worst case (allowance 0,
    where a zero change sits on the boundary): at most 5% fail."""
    rng = np.random.default_rng(2026)
    comparisons, queries = 500, 120
    slices = {f"s{k}": np.arange(k, queries, 6) for k in range(6)}
    first = RR_VALUES[rng.integers(0, 11, size=(comparisons, queries))]
    second = np.where(
        rng.random((comparisons, queries)) < 0.5,
        first,
        RR_VALUES[rng.integers(0, 11, size=(comparisons, queries))],
    )
    flip = rng.random((comparisons, queries)) < 0.5
    baselines, candidates = np.where(flip, first, second), np.where(flip, second, first)
    failed = sum(
        release_gate(
            per_query(baselines[i]),
            per_query(candidates[i]),
            slices,
            max_miss_rise=0,
            max_mrr_drop=0,
            max_slice_drop=0,
            n_resamples=400,
            seed=i,
        ).verdict
        == "fail"
        for i in range(comparisons)
    )
    assert failed / comparisons <= FAMILY_ALPHA


def test_the_queries_estimate_decides_about_as_often_as_promised():
    """A real regression on 50 queries that the CI cannot confirm; adding the estimated number
    of queries, drawn from the same pairs, decides it about 4 times in 5 (POWER)."""
    deltas = np.r_[np.full(9, -0.5), np.full(3, 0.5), np.zeros(38)]
    baseline = np.full(50, 0.75)
    candidate = baseline + deltas
    verdict = release_gate(per_query(baseline), per_query(candidate))
    mrr = verdict.rules[1]
    assert verdict.verdict == "inconclusive" and mrr.status == "undecided"
    more = mrr.more_queries
    assert 40 < more < 400
    rng = np.random.default_rng(7)
    repetitions = 200
    decided = 0
    for seed in range(repetitions):
        extra = rng.integers(0, 50, size=more)
        bigger = (np.r_[baseline, baseline[extra]], np.r_[candidate, candidate[extra]])
        result = release_gate(*map(per_query, bigger), n_resamples=400, seed=seed)
        decided += result.rules[1].status == "violated"
    assert 0.65 <= decided / repetitions <= 0.92


# --- on mean figures alone (a run history keeps no per-query values) ------------------------------

MEANS = {"mrr@10": 0.50, "miss@10": 0.10}


def test_gate_on_means_judges_each_rule_on_its_point_delta():
    verdict = gate_on_means(
        MEANS,
        {"mrr@10": 0.45, "miss@10": 0.13},
        {"tail": {"mrr@10": 0.4}},
        {"tail": {"mrr@10": 0.3}},
    )
    assert verdict.verdict == "fail"
    assert [reason.split(" ")[0] for reason in verdict.reasons] == ["miss@10", "MRR@10", "slice"]


def test_gate_on_means_warns_when_mrr_rises_while_misses_rise():
    verdict = gate_on_means(MEANS, {"mrr@10": 0.55, "miss@10": 0.105})
    assert verdict.verdict == "pass"
    assert verdict.warnings == [
        "MRR@10 went up (0.5000 → 0.5500) but misses went up too (10.00% → 10.50%): "
        "more users get no answer at all"
    ]


def test_gate_on_means_warns_about_a_slice_it_cannot_compare():
    verdict = gate_on_means(
        MEANS, MEANS, {"new": {}, "head": {"mrr@10": 0.6}}, {"head": {"mrr@10": 0.6}}
    )
    assert verdict.verdict == "pass"
    assert verdict.warnings == ["slice 'new' not compared: no MRR@10 for the baseline"]
