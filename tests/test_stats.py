"""Bootstrap CIs, paired comparisons and the queries-needed estimate (eval/stats.py)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from goldset.eval.stats import (
    _percentile_interval,
    bootstrap_ci,
    paired_bootstrap,
    queries_needed,
    randomization_test,
    score_interval,
    student_t_quantile,
    t_interval,
)

# First relevant rank 1..10 or none (index 10): a realistic RR@10 distribution.
RANK_SHARES = np.array([0.40, 0.15, 0.08, 0.06, 0.04, 0.03, 0.03, 0.02, 0.02, 0.02, 0.15])
RR_VALUES = np.append(1 / np.arange(1, 11), 0.0)
TRUE_MRR = float(RANK_SHARES @ RR_VALUES)


def reciprocal_ranks(count: int, seed: int) -> np.ndarray:
    """Per-query RR@10 of ``count`` simulated queries."""
    ranks = np.random.default_rng(seed).choice(len(RANK_SHARES), size=count, p=RANK_SHARES)
    return RR_VALUES[ranks]


def half_width(interval: np.ndarray) -> float:
    return float(interval[1] - interval[0]) / 2


# --- bootstrap_ci --------------------------------------------------------------------------


def test_bootstrap_ci_of_a_fair_coin_matches_the_normal_interval():
    coin = np.tile([0.0, 1.0], 200)  # 400 queries, mean 0.5, standard error 0.025
    low, high = bootstrap_ci(coin, n_resamples=4000, seed=3)
    assert low == pytest.approx(0.5 - 1.96 * 0.025, abs=0.006)
    assert high == pytest.approx(0.5 + 1.96 * 0.025, abs=0.006)


def test_the_bootstrap_ci_of_identical_values_has_zero_width():
    assert bootstrap_ci([0.1] * 10_000, method="bca").tolist() == [0.1, 0.1]
    assert bootstrap_ci([0.25], method="percentile").tolist() == [0.25, 0.25]


def test_the_default_ci_of_all_misses_leaves_room_for_a_positive_mean():
    # No hit in 50 queries does not prove that none would hit: Wilson's [0, t²/n / (1 + t²/n)].
    low, high = bootstrap_ci(np.zeros(50))
    k = student_t_quantile(0.975, 49) ** 2 / 50
    assert (low, high) == (0.0, pytest.approx(k / (1 + k)))  # 0.075: 5 hits in 100 fit


def test_the_default_ci_of_binary_values_is_wilsons_interval():
    hits = np.r_[np.ones(5), np.zeros(45)]
    t = student_t_quantile(0.975, 49)
    share, k = 0.1, t**2 / 50
    centre = (share + k / 2) / (1 + k)
    half = math.sqrt(k * share * 0.9 + k**2 / 4) / (1 + k)
    assert bootstrap_ci(hits) == pytest.approx([centre - half, centre + half], abs=1e-12)


def test_the_default_ci_of_one_query_spans_most_of_the_range():
    low, high = bootstrap_ci([0.25])
    assert 0 <= low < 0.01 and 0.8 < high <= 1


def test_bootstrap_ci_of_no_queries_is_nan():
    assert np.isnan(bootstrap_ci([])).all()
    assert bootstrap_ci(np.empty((0, 3))).shape == (3, 2)
    assert np.isnan(bootstrap_ci(np.empty((0, 3)))).all()


def test_bootstrap_ci_gives_one_interval_per_metric_column():
    values = np.column_stack([reciprocal_ranks(300, seed=1), np.full(300, 0.7)])
    intervals = bootstrap_ci(values, n_resamples=500)
    assert intervals.shape == (2, 2)
    low, high = intervals[0]
    assert low < values[:, 0].mean() < high
    assert intervals[1][0] < 0.7 < intervals[1][1] and intervals[1][1] - intervals[1][0] < 0.02


def test_bootstrap_ci_columns_share_the_resampled_queries():
    hit = (reciprocal_ranks(500, seed=2) > 0).astype(float)
    score = np.random.default_rng(2).random(500)
    for values in (hit, score):  # few distinct values, then all distinct
        pair = np.column_stack([values, 1 - values])
        intervals = bootstrap_ci(pair, n_resamples=500, method="bca")
        # miss = 1 − hit in every resample, so its CI mirrors hit's exactly
        assert intervals[1] == pytest.approx(1 - intervals[0][::-1], abs=1e-12)


def test_bootstrap_ci_of_many_queries_and_metrics_keeps_columns_in_step():
    # 70,000 queries × 10 metrics are multiplied in pieces; the pieces must add up
    values = np.random.default_rng(3).random((70_000, 10))
    values[:, 9] = 1 - values[:, 0]
    intervals = bootstrap_ci(values, n_resamples=20, method="bca")
    assert intervals[9] == pytest.approx(1 - intervals[0][::-1], abs=1e-12)
    assert (intervals[:, 0] < values.mean(axis=0)).all()
    assert (values.mean(axis=0) < intervals[:, 1]).all()


def test_bootstrap_ci_same_seed_gives_same_numbers():
    values = reciprocal_ranks(1000, seed=4)
    first = bootstrap_ci(values, n_resamples=300, seed=7, method="bca")
    assert bootstrap_ci(values, n_resamples=300, seed=7, method="bca").tolist() == first.tolist()
    assert bootstrap_ci(values, n_resamples=300, seed=8, method="bca").tolist() != first.tolist()


def test_bootstrap_ci_same_for_repeated_and_all_distinct_values():
    # Repeated values are resampled through their counts, distinct ones query by query:
    # both must give the same interval (up to Monte Carlo error).
    repeated = reciprocal_ranks(2000, seed=5)
    distinct = repeated + np.random.default_rng(5).random(2000) * 1e-9
    assert len(np.unique(distinct)) == 2000
    assert bootstrap_ci(distinct, n_resamples=4000, method="bca") == pytest.approx(
        bootstrap_ci(repeated, n_resamples=4000, method="bca"), abs=0.002
    )


@pytest.mark.parametrize(
    ("simulate", "true_mean"),
    [
        (lambda rng: RR_VALUES[rng.choice(11, size=150, p=RANK_SHARES)], TRUE_MRR),
        (lambda rng: rng.random(100), 0.5),
    ],
    ids=["reciprocal-ranks", "uniform"],
)
def test_bootstrap_ci_covers_the_true_mean_about_95_percent_of_the_time(simulate, true_mean):
    rng = np.random.default_rng(11)
    repetitions = 300
    covered = sum(
        low <= true_mean <= high
        for low, high in (
            bootstrap_ci(simulate(rng), n_resamples=400, seed=seed) for seed in range(repetitions)
        )
    )
    assert 0.91 <= covered / repetitions <= 0.98


MISS_SHARE = 0.9  # of the queries: five hits expected in 50, none at all one time in 194
HIT_SHARES = RANK_SHARES[:10] / RANK_SHARES[:10].sum()  # where the others find their doc
MISS_HEAVY_MRR = (1 - MISS_SHARE) * float(HIT_SHARES @ RR_VALUES[:10])


def miss_heavy(rng: np.random.Generator, count: int, repetitions: int) -> np.ndarray:
    """RR@10 of ``count`` queries of which 90% miss, the others found at ranks 1..10 as
    RANK_SHARES has them: a skewed, miss-heavy sample per column (true mean MISS_HEAVY_MRR)."""
    found = rng.random((count, repetitions)) >= MISS_SHARE
    ranks = rng.choice(10, size=(count, repetitions), p=HIT_SHARES)
    return np.where(found, RR_VALUES[ranks], 0.0)


def coverage(count: int, method: str, repetitions: int) -> float:
    """How often the 95% CI over ``count`` miss-heavy queries holds the true mean (seeded);
    a bootstrap resamples each sample with its own seed."""
    samples = miss_heavy(np.random.default_rng(11), count, repetitions)
    if method == "score":
        intervals = bootstrap_ci(samples)  # a column per sample: the interval is per column
    else:
        intervals = np.array(
            [
                bootstrap_ci(sample, seed=seed, method=method)
                for seed, sample in enumerate(samples.T)
            ]
        )
    return float(np.mean((intervals[:, 0] <= MISS_HEAVY_MRR) & (intervals[:, 1] >= MISS_HEAVY_MRR)))


@pytest.mark.parametrize("count", [50, 200])
def test_default_ci_covers_a_miss_heavy_mean_at_least_93_percent_of_the_time(count):
    assert coverage(count, "score", repetitions=2000) >= 0.93


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_cis_fall_short_on_fifty_miss_heavy_queries(method):
    # What the score interval (the default) corrects: a resample can only reshuffle five hits.
    assert coverage(50, method, repetitions=400) < 0.93


def test_default_paired_ci_covers_a_miss_heavy_delta_at_least_93_percent_of_the_time():
    # The candidate keeps half the baseline's ranks and draws the others afresh, missing 95%:
    # few queries move, most of them down.
    rng = np.random.default_rng(12)
    baseline = miss_heavy(rng, 50, 2000)
    fresh = np.where(rng.random(baseline.shape) < 0.5, miss_heavy(rng, 50, 2000), 0.0)
    candidate = np.where(rng.random(baseline.shape) < 0.5, baseline, fresh)
    true_delta = 0.5 * (0.5 * MISS_HEAVY_MRR - MISS_HEAVY_MRR)
    intervals = paired_bootstrap(baseline, candidate).ci
    assert np.mean((intervals[:, 0] <= true_delta) & (true_delta <= intervals[:, 1])) >= 0.93


def test_one_hit_proves_a_positive_mean_but_one_better_query_no_improvement():
    # A metric cannot go below 0, so one hit shows its mean is above 0; a delta can, so one
    # query that improved (49 unchanged) does not show that the candidate is better.
    one = np.r_[1.0, np.zeros(49)]
    assert bootstrap_ci(one)[0] > 0
    result = paired_bootstrap(np.zeros(50), one)
    assert result.ci[0] < 0 < result.ci[1] and result.p_value > 0.05
    assert score_interval(one, signed=True)[0].tolist() == result.ci.tolist()


def test_bca_moves_the_interval_toward_the_long_tail():
    values = np.r_[np.zeros(45), [1.0, 1.0, 0.5, 0.25, 1.0]]  # skewed right
    bca = bootstrap_ci(values, n_resamples=4000, seed=1, method="bca")
    percentile = bootstrap_ci(values, n_resamples=4000, seed=1, method="percentile")
    assert bca[0] > percentile[0] and bca[1] > percentile[1]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"values": [0.5, float("nan")]}, "finite"),
        ({"values": np.zeros((2, 2, 2))}, "shape"),
        ({"values": [0.5], "n_resamples": 0}, "n_resamples"),
        ({"values": [0.5], "confidence": 95}, "confidence"),
        ({"values": [0.5], "method": "student"}, "method"),
    ],
)
def test_bootstrap_ci_rejects_bad_input(arguments, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(**arguments)


# --- paired_bootstrap ----------------------------------------------------------------------


def test_paired_bootstrap_delta_is_candidate_minus_baseline():
    result = paired_bootstrap([0.5, 1.0, 0.0], [1.0, 1.0, 0.5])
    assert result.delta == pytest.approx(1 / 3)


def test_paired_bootstrap_of_identical_runs_finds_no_difference():
    values = reciprocal_ranks(500, seed=6)
    result = paired_bootstrap(values, values)
    assert result.delta == 0.0
    low, high = result.ci  # no query moved in 500: a change on a few in 1,000 could hide
    assert low == -high and 0 < high < 0.01
    assert result.p_value == 1.0
    assert paired_bootstrap(values, values, method="bca").ci.tolist() == [0.0, 0.0]


def test_paired_bootstrap_p_value_is_never_zero():
    baseline = reciprocal_ranks(500, seed=7)
    result = paired_bootstrap(baseline, baseline + 0.1, n_resamples=999, method="bca")
    assert result.ci == pytest.approx([0.1, 0.1])
    assert result.p_value == 2 / 1000


def test_paired_bootstrap_uses_the_pairing():
    # Queries vary far more than the systems differ: only pairing reveals the improvement.
    rng = np.random.default_rng(8)
    baseline = rng.random(300)
    candidate = baseline + 0.01 + rng.normal(0, 0.01, 300)
    result = paired_bootstrap(baseline, candidate)
    assert result.ci[0] > 0
    assert bootstrap_ci(candidate)[0] < bootstrap_ci(baseline)[1]  # unpaired CIs overlap


@pytest.mark.parametrize(
    "p_value_of",
    [
        lambda baseline, candidate: paired_bootstrap(baseline, candidate, 4000).p_value,
        lambda baseline, candidate: randomization_test(baseline, candidate, 4000),
    ],
    ids=["paired-bootstrap", "randomization"],
)
def test_p_values_match_the_normal_test_on_large_samples(p_value_of):
    rng = np.random.default_rng(9)
    deltas = rng.normal(0.004, 0.1, 4000)
    z = deltas.mean() / (deltas.std(ddof=1) / math.sqrt(4000))
    assert p_value_of(np.zeros(4000), deltas) == pytest.approx(
        2 * (1 - NormalDist().cdf(abs(z))), abs=0.02
    )


@pytest.mark.parametrize("fixed_share", [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06])
def test_paired_bootstrap_p_value_agrees_with_the_ci(fixed_share):
    baseline = reciprocal_ranks(400, seed=22)
    fixed = np.random.default_rng(23).random(400) < fixed_share
    result = paired_bootstrap(baseline, np.where(fixed, 1.0, baseline), n_resamples=1000)
    ci_excludes_zero = result.ci[0] > 0 or result.ci[1] < 0
    if result.p_value < 0.05:
        assert ci_excludes_zero
    if ci_excludes_zero:
        assert result.p_value <= 0.05 + 4 / 1001


def test_paired_bootstrap_is_per_metric_column():
    baseline = np.column_stack([reciprocal_ranks(300, seed=10), np.zeros(300)])
    candidate = np.column_stack([baseline[:, 0], np.ones(300)])
    result = paired_bootstrap(baseline, candidate, n_resamples=500, method="bca")
    assert result.delta.tolist() == [0.0, 1.0]
    assert result.ci.tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert result.p_value.tolist() == [1.0, 2 / 501]


def test_paired_bootstrap_same_seed_gives_same_numbers():
    baseline, candidate = reciprocal_ranks(800, seed=11), reciprocal_ranks(800, seed=12)
    first = paired_bootstrap(baseline, candidate, seed=5)
    again = paired_bootstrap(baseline, candidate, seed=5)
    assert (again.ci.tolist(), again.p_value) == (first.ci.tolist(), first.p_value)


def test_paired_bootstrap_of_no_queries_is_nan():
    result = paired_bootstrap(np.empty((0, 2)), np.empty((0, 2)))
    assert np.isnan(result.delta).all() and np.isnan(result.ci).all()
    assert np.isnan(result.p_value).all()


def test_paired_bootstrap_refuses_rows_of_different_queries():
    baseline = pd.DataFrame({"mrr@10": [1.0, 0.5]}, index=["q1", "q2"])
    candidate = pd.DataFrame({"mrr@10": [0.5, 1.0]}, index=["q2", "q1"])
    with pytest.raises(ValueError, match="same queries in the same order"):
        paired_bootstrap(baseline, candidate)
    with pytest.raises(ValueError, match="same shape"):
        paired_bootstrap([1.0, 0.5], [1.0, 0.5, 0.0])


# --- randomization_test --------------------------------------------------------------------


def test_randomization_test_matches_the_exact_sign_flip_distribution():
    # Five queries all improved by 1: only "all kept" and "all flipped" are as extreme,
    # 2 of the 32 sign patterns, p = 1/16.
    assert randomization_test(np.zeros(5), np.ones(5), n_permutations=20_000) == pytest.approx(
        1 / 16, abs=0.005
    )


def test_randomization_test_with_repeated_differences_matches_the_binomial():
    # 40 queries +0.5, 20 queries -0.5: |sum| >= 10 when at least 40 (or at most 20) of the
    # 60 differences keep their sign, P = 2 · P(Binomial(60, 1/2) >= 40).
    deltas = np.array([0.5] * 40 + [-0.5] * 20)
    exact = 2 * sum(math.comb(60, kept) for kept in range(40, 61)) / 2**60
    p_value = randomization_test(np.zeros(60), deltas, n_permutations=20_000)
    assert p_value == pytest.approx(exact, abs=0.004)


def test_randomization_test_p_value_is_never_zero():
    assert randomization_test(np.zeros(200), np.ones(200), n_permutations=999) == 1 / 1000


def test_randomization_test_of_identical_runs_is_one():
    values = reciprocal_ranks(100, seed=13)
    assert randomization_test(values, values) == 1.0


def test_randomization_test_ignores_unchanged_queries_only_through_their_count():
    deltas = reciprocal_ranks(60, seed=14) - reciprocal_ranks(60, seed=15)
    with_ties = np.append(deltas, np.zeros(40))
    assert randomization_test(np.zeros(60), deltas) == randomization_test(np.zeros(100), with_ties)


def test_randomization_test_agrees_with_the_paired_bootstrap():
    baseline, candidate = reciprocal_ranks(2000, seed=16), reciprocal_ranks(2000, seed=17)
    candidate = np.where(np.random.default_rng(16).random(2000) < 0.03, 1.0, candidate)
    bootstrap_p = paired_bootstrap(baseline, candidate, n_resamples=4000).p_value
    assert randomization_test(baseline, candidate) == pytest.approx(bootstrap_p, abs=0.03)


def test_randomization_test_is_per_metric_column_and_seeded():
    rng = np.random.default_rng(18)
    baseline = rng.random((300, 3))
    candidate = baseline + np.array([0.0, 0.05, -0.2]) + rng.normal(0, 0.1, (300, 3))
    p_values = randomization_test(baseline, candidate, n_permutations=2000, seed=1)
    assert p_values.shape == (3,)
    assert p_values[0] > 0.01 and p_values[2] == 1 / 2001
    assert randomization_test(baseline, candidate, 2000, seed=1).tolist() == p_values.tolist()


def test_randomization_test_of_no_queries_is_nan():
    assert np.isnan(randomization_test([], []))


# --- queries_needed ------------------------------------------------------------------------


def test_queries_needed_follows_the_normal_approximation():
    # s² = 0.25 · 100/99; n = (1.96 · s / 0.05)² = 388.03 → 389
    assert queries_needed([0.0, 1.0] * 50, half_width=0.05) == 389


def test_queries_needed_quadruples_when_the_half_width_halves():
    values = reciprocal_ranks(500, seed=19)
    assert queries_needed(values, 0.025) == pytest.approx(4 * queries_needed(values, 0.05), abs=4)


def test_queries_needed_with_no_spread_is_one():
    assert queries_needed([1.0, 1.0, 1.0]) == 1


def test_queries_needed_predicts_the_realised_bootstrap_half_width():
    pool = reciprocal_ranks(50_000, seed=20)  # stands for all the queries one could label
    pilot = pool[:300]  # what is labelled so far
    target = 0.03
    needed = queries_needed(pilot, half_width=target)
    rng = np.random.default_rng(21)
    realised = [
        half_width(bootstrap_ci(rng.choice(pool, size=needed, replace=False), seed=seed))
        for seed in range(20)
    ]
    assert np.mean(realised) == pytest.approx(target, rel=0.1)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"values": [0.5]}, "at least 2"),
        ({"values": [[0.5, 1.0], [0.0, 1.0]]}, "1-D"),
        ({"values": [0.5, 1.0], "half_width": 0}, "half_width"),
        ({"values": [0.5, float("inf")]}, "finite"),
    ],
)
def test_queries_needed_rejects_bad_input(arguments, message):
    with pytest.raises(ValueError, match=message):
        queries_needed(**arguments)


@pytest.mark.parametrize("resamples", [1, 2, 3, 40, 999, 1000])
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_percentile_interval_gives_numpy_quantiles_exactly(resamples, confidence):
    # eval computes the percentiles itself (np.quantile imports numpy.ma): the same figures.
    rng = np.random.default_rng(resamples)
    resampled = np.c_[rng.normal(size=resamples), rng.integers(0, 3, resamples) / 3]
    resampled = np.c_[resampled, resampled[:, 0]]
    resampled[rng.integers(resamples), 2] = np.nan  # a column holding a NaN has NaN bounds
    tail = (1 - confidence) / 2
    expected = np.quantile(resampled, [tail, 1 - tail], axis=0).T
    np.testing.assert_array_equal(_percentile_interval(resampled, confidence), expected)


# --- Student's t ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "df", "table"),
    [(0.975, 1, 12.706), (0.975, 5, 2.571), (0.995, 10, 3.169), (0.975, 30, 2.042),
     (0.975, 31, 2.040), (0.99, 120, 2.358), (0.9995, 3, 12.924)],
)  # fmt: skip
def test_student_t_quantile_matches_the_table(p, df, table):
    assert student_t_quantile(p, df) == pytest.approx(table, abs=6e-4)


def test_t_interval_is_the_mean_plus_or_minus_t_standard_errors():
    values = np.array([0.0, 0.5, 1.0, 1.0, 0.25])
    low, high = t_interval(values, 0.95)
    half = 2.776 * values.std(ddof=1) / math.sqrt(5)
    assert (low, high) == pytest.approx((values.mean() - half, values.mean() + half), abs=1e-3)
    assert t_interval([0.3], 0.95).tolist() == [0.3, 0.3]
