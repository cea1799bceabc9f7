"""eval.ppi.ppi_mean: PPI++ against ppi_py (the reference implementation), by hand, at its edges.

ppi_py treats its unlabelled set as independent of the labelled one; ours holds every query,
the sampled ones included. So ppi_py is given the queries outside the sample as its unlabelled
set, and our λ times (1 − n/N) as its λ (eval/ppi.py's docstring derives why they agree).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from goldset.eval.intervals import student_t_quantile
from goldset.eval.ppi import ppi_mean

Z = NormalDist().inv_cdf(0.975)


def a_set(seed: int, n_all: int = 300, n: int = 40, noise: float = 0.2):
    """Judge values on every query, a uniform sample of n, and the humans on it: related to
    the judge, less than one for one (so that the tuned λ lies inside (0, 1))."""
    rng = np.random.default_rng(seed)
    judge_all = rng.random(n_all)
    sampled = rng.choice(n_all, n, replace=False)
    judge = judge_all[sampled]
    human = np.clip(0.6 * judge + 0.2 + rng.normal(0, noise, n), 0, 1)
    return human, judge, judge_all, np.delete(judge_all, sampled)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("tuned", [False, True])
def test_equals_ppi_py(seed: int, tuned: bool) -> None:
    human, judge, judge_all, outside = a_set(seed)
    estimate = ppi_mean(human, judge, judge_all, tuned=tuned, interval="normal")
    their_lam = estimate.weight * (1 - len(human) / len(judge_all))
    point = ppi_mean_pointestimate(human, judge, outside, lam=their_lam)
    low, high = ppi_mean_ci(human, judge, outside, alpha=0.05, lam=their_lam)
    assert estimate.mean == pytest.approx(float(point[0]), abs=1e-9)
    assert (estimate.low, estimate.high) == pytest.approx((low[0], high[0]), abs=1e-9)
    if tuned:  # ppi_py's own power tuning picks the same λ (unclipped here)
        assert 0 < estimate.weight < 1
        tuned_point = ppi_mean_pointestimate(human, judge, outside)
        tuned_low, tuned_high = ppi_mean_ci(human, judge, outside, alpha=0.05)
        assert estimate.mean == pytest.approx(float(tuned_point[0]), abs=1e-9)
        assert (estimate.low, estimate.high) == pytest.approx(
            (tuned_low[0], tuned_high[0]), abs=1e-9
        )
    else:
        assert estimate.weight == 1.0


def test_humans_only_is_lambda_zero_and_its_normal_ci() -> None:
    human, judge, judge_all, outside = a_set(3)
    estimate = ppi_mean(human, judge, judge_all, interval="normal")
    low, high = ppi_mean_ci(human, judge, outside, alpha=0.05, lam=0)
    assert estimate.human_mean == pytest.approx(human.mean(), abs=1e-12)
    assert (estimate.human_low, estimate.human_high) == pytest.approx((low[0], high[0]), abs=1e-9)


def test_weighted_by_hand() -> None:
    """An active sample: Hájek means with the inverse inclusion probabilities, written out."""
    human = np.array([1.0, 0.0, 0.5, 1.0])
    judge = np.array([1.0, 0.5, 0.5, 0.0])
    judge_all = np.array([1.0, 0.5, 0.5, 0.0, 1.0, 0.0, 0.5, 1.0, 0.0, 1.0])
    weights = np.array([2.0, 4.0, 1.0, 1.0])  # 1 / inclusion probability
    estimate = ppi_mean(human, judge, judge_all, weights=weights, interval="normal")
    # w normalised to mean 1: [1, 2, 0.5, 0.5]; Hájek means: Y 1.75/4, Ŷ 2.25/4.
    w = np.array([1.0, 2.0, 0.5, 0.5])
    y_c = human - 0.4375
    hat_c = judge - 0.5625
    covariance = (w * w * y_c * hat_c).sum() / 4
    lam = covariance / judge_all.var(ddof=1)
    assert estimate.weight == pytest.approx(lam, abs=1e-12)
    # Hájek mean of the correction Y − λŶ, plus λ times the judge's mean over all queries.
    mean = lam * 0.55 + (0.4375 - lam * 0.5625)
    assert estimate.mean == pytest.approx(mean, abs=1e-12)
    # Var: Hájek-linearised Var(Y − λ(1 − f)Ŷ) / n, plus (λ(1 − f))² Var(Ŷ outside) / (N − n).
    shared = lam * (1 - 4 / 10)
    residual = w * (y_c - shared * hat_c)
    outside = np.array([1.0, 0.0, 0.5, 1.0, 0.0, 1.0])
    variance = (residual**2).sum() / 16 + shared**2 * outside.var() / 6
    assert (estimate.low, estimate.high) == pytest.approx(
        (mean - Z * math.sqrt(variance), mean + Z * math.sqrt(variance)), abs=1e-12
    )
    human_variance = ((w * y_c) ** 2).sum() / 16
    assert estimate.human_mean == pytest.approx(0.4375)
    assert estimate.human_high - estimate.human_mean == pytest.approx(
        Z * math.sqrt(human_variance), abs=1e-12
    )
    assert estimate.effective_n == pytest.approx(4 * human_variance / variance, abs=1e-9)


def test_guarded_interval_by_hand() -> None:
    """The default: Student's t (n − 1 degrees of freedom) and the sample's variance with one
    more query deviating by g = b · (1 − λ' + λ' · √s) in the correction: b the values' largest
    magnitude (here 1), s = Σe⁴ / (Σe²)² over the judge's errors' deviations e."""
    human = np.array([1.0, 1.0, 1.0, 1.0, 0.0])
    judge = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    judge_all = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    estimate = ppi_mean(human, judge, judge_all, tuned=False)
    t = 2.7764451051977987  # Student's t, 97.5%, 4 degrees of freedom
    # λ = 1, f = 1/2: λ' = 1/2, the sample's part is Y − Ŷ/2; the judge's outside it
    # [1, 0, 1, 1, 0]. The errors Y − Ŷ = [0, 0, 0, 0, −1] deviate by [.2, .2, .2, .2, −.8]:
    # s = (4 · .2⁴ + .8⁴) / (4 · .2² + .8²)² = 0.416 / 0.64, shown on 1/s ≈ 1.5 queries.
    g = 0.5 + 0.5 * math.sqrt(0.416 / 0.64)
    correction = human - 0.5 * judge
    squares = ((correction - correction.mean()) ** 2).sum()
    variance = (squares + g**2) / (5 * 6) + 0.25 * np.array([1, 0, 1, 1, 0]).var() / 5
    mean = 0.8 + (0.8 - 1.0)
    assert estimate.mean == pytest.approx(mean, abs=1e-12)
    assert (estimate.low, estimate.high) == pytest.approx(
        (mean - t * math.sqrt(variance), mean + t * math.sqrt(variance)), abs=1e-9
    )
    # The humans alone (λ' = 0): one more query at b.
    human_variance = (((human - 0.8) ** 2).sum() + 1.0) / 30
    assert estimate.human_high == pytest.approx(0.8 + t * math.sqrt(human_variance), abs=1e-9)


def test_the_guard_shrinks_as_the_sample_shows_the_judges_errors() -> None:
    """Errors of one size on k of n queries (p = k/n): the sample shows them on
    1/s = n p (1 − p) / ((1 − p)³ + p³) queries, so the judge's part of the one more query is
    b · √s; the humans' part stays b."""
    n, k = 40, 10
    human = np.r_[np.ones(30), np.zeros(10)]
    judge = human.copy()
    judge[:k] = 0.5  # the judge halves ten of the humans' ones
    judge_all = np.r_[judge, np.ones(60), np.zeros(20)]
    estimate = ppi_mean(human, judge, judge_all, tuned=False)
    shared = 1 - n / len(judge_all)  # λ' with λ = 1
    errors = human - judge  # 0.5 on ten queries, 0 elsewhere
    e = errors - errors.mean()
    s = (e**4).sum() / (e**2).sum() ** 2
    p = k / n
    assert 1 / s == pytest.approx(n * p * (1 - p) / ((1 - p) ** 3 + p**3), rel=1e-12)
    g = 1 - shared + shared * math.sqrt(s)
    correction = human - shared * judge
    squares = ((correction - correction.mean()) ** 2).sum()
    outside = judge_all[n:]
    variance = (squares + g**2) / (n * (n + 1)) + shared**2 * outside.var() / len(outside)
    t = student_t_quantile(0.975, n - 1)
    assert estimate.high - estimate.mean == pytest.approx(t * math.sqrt(variance), abs=1e-12)
    assert g < 0.75  # well below b = 1, the guard before the errors were seen


def test_a_judge_off_by_a_constant_shows_no_error_spread() -> None:
    """Errors equal up to float rounding (0.3 − 0.2 is not 0.1) show no spread: s = 1, g = b."""
    human = np.array([0.3, 0.7, 0.9, 0.5, 0.6, 0.2])
    judge = human - 0.1
    judge_all = np.r_[judge, [0.1, 0.4, 0.8, 0.5]]
    estimate = ppi_mean(human, judge, judge_all, tuned=False)
    shared = 1 - 6 / 10
    correction = human - shared * judge
    squares = ((correction - correction.mean()) ** 2).sum()
    outside = judge_all[6:]
    variance = (squares + 0.9**2) / (6 * 7) + shared**2 * outside.var() / 4  # g = b = 0.9
    t = student_t_quantile(0.975, 5)
    assert estimate.high - estimate.mean == pytest.approx(t * math.sqrt(variance), abs=1e-12)


def test_guarded_holds_room_for_unseen_disagreement() -> None:
    """A sample where judge and humans agree everywhere: the normal CI has no width at all,
    the guarded one keeps some."""
    judge_all = np.r_[np.ones(90), np.zeros(10)]
    agreed = np.ones(25)
    normal = ppi_mean(agreed, agreed, judge_all, interval="normal")
    guarded = ppi_mean(agreed, agreed, judge_all)
    assert normal.high - normal.low < 1e-9
    assert guarded.high - guarded.low > 0.1


def test_equal_weights_are_the_uniform_sample() -> None:
    human, judge, judge_all, _ = a_set(5)
    uniform = ppi_mean(human, judge, judge_all)
    census_weights = ppi_mean(human, judge, judge_all, weights=np.full(len(human), 7.5))
    assert census_weights.as_dict() == pytest.approx(uniform.as_dict(), abs=1e-12)


def test_a_judge_off_by_a_constant_is_corrected_under_weights() -> None:
    """Hájek, not Horvitz–Thompson: a constant offset is removed exactly, whatever the weights
    sum to (Horvitz–Thompson would scale it by Σw / N)."""
    rng = np.random.default_rng(2)
    truth = rng.random(200)
    judge_all = truth + 0.1
    sampled = np.arange(0, 200, 5)
    estimate = ppi_mean(
        truth[sampled], judge_all[sampled], judge_all, weights=rng.uniform(1, 9, 40), tuned=False
    )
    assert estimate.mean == pytest.approx(truth.mean(), abs=1e-12)


def test_paired_deltas_by_hand() -> None:
    """A comparison: PPI on per-query deltas (candidate − baseline) of the humans and judge."""
    human_delta = np.array([0.5, 0.0, -0.5, 0.0, 1.0])
    judge_delta = np.array([0.5, 0.0, 0.0, 0.0, 1.0])
    judge_all_delta = np.array([0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 0.5, 0.0, -1.0, 0.0])
    estimate = ppi_mean(human_delta, judge_delta, judge_all_delta, tuned=False, interval="normal")
    # λ = 1: the judge's mean over all (0.1) plus the mean correction (−0.5 / 5 = −0.1).
    assert estimate.mean == pytest.approx(0.0, abs=1e-12)
    # Var(Y − 0.5 Ŷ) / 5 over [0.25, 0, −0.5, 0, 0.5] + 0.5² Var([0, 0.5, 0, −1, 0]) / 5
    correction = np.array([0.25, 0.0, -0.5, 0.0, 0.5])
    outside = np.array([0.0, 0.5, 0.0, -1.0, 0.0])
    variance = correction.var() / 5 + 0.25 * outside.var() / 5
    assert estimate.high == pytest.approx(Z * math.sqrt(variance), abs=1e-12)
    assert estimate.low == pytest.approx(-Z * math.sqrt(variance), abs=1e-12)


def test_every_query_labelled_is_the_humans() -> None:
    human, judge, _, _ = a_set(4, n_all=40, n=40)
    estimate = ppi_mean(human, judge, judge)
    assert estimate.mean == pytest.approx(human.mean(), abs=1e-12)
    assert (estimate.low, estimate.high) == pytest.approx(
        (estimate.human_low, estimate.human_high), abs=1e-12
    )
    assert estimate.effective_n == pytest.approx(40)


def test_one_sampled_query_has_no_interval() -> None:
    estimate = ppi_mean([1.0], [0.5], [0.5, 0.0, 1.0])
    assert estimate.n_human == 1 and estimate.weight == 0.0
    assert estimate.mean == 1.0
    assert math.isnan(estimate.low) and math.isnan(estimate.high)
    assert math.isnan(estimate.human_low) and estimate.as_dict()["effective_n"] is None


def test_constant_judge_gives_the_humans() -> None:
    human, _, _, _ = a_set(6)
    constant = np.full(len(human), 0.3)
    estimate = ppi_mean(human, constant, np.full(300, 0.3))
    assert estimate.weight == 0.0
    assert estimate.mean == pytest.approx(human.mean(), abs=1e-12)
    assert (estimate.low, estimate.high) == (estimate.human_low, estimate.human_high)
    assert estimate.effective_n == pytest.approx(len(human))


def test_judge_equal_to_humans_weighs_about_one_and_narrows() -> None:
    _, judge, judge_all, _ = a_set(7, n_all=2000, n=50)
    estimate = ppi_mean(judge, judge, judge_all)
    assert estimate.weight == pytest.approx(1.0, abs=0.2)
    human_width = estimate.human_high - estimate.human_low
    assert estimate.high - estimate.low < 0.5 * human_width
    assert estimate.effective_n > 4 * 50


def test_useless_judge_keeps_about_the_humans_width() -> None:
    rng = np.random.default_rng(8)
    human = rng.random(100)
    judge_all = rng.random(1000)
    estimate = ppi_mean(human, judge_all[:100], judge_all)  # unrelated to the humans
    assert estimate.weight < 0.25
    human_width = estimate.human_high - estimate.human_low
    assert estimate.high - estimate.low == pytest.approx(human_width, rel=0.05)
    assert estimate.high - estimate.low <= human_width * 1.0001


@pytest.mark.parametrize(
    ("human", "judge", "judge_all", "weights"),
    [
        ([], [], [1.0], None),
        ([1.0, 0.0], [1.0], [1.0, 0.0], None),
        ([1.0, 0.0], [1.0, 0.0], [1.0], None),
        ([1.0, math.nan], [1.0, 0.0], [1.0, 0.0], None),
        ([1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]),
        ([1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0]),
    ],
)
def test_inputs_that_do_not_fit_are_refused(human, judge, judge_all, weights) -> None:
    with pytest.raises(ValueError):
        ppi_mean(human, judge, judge_all, weights=weights)


def test_an_unknown_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        ppi_mean([1.0, 0.0], [1.0, 0.0], [1.0, 0.0], interval="wald")


def test_an_estimate_past_the_values_range_is_moved_into_it() -> None:
    # The judge calls 96% of the queries relevant outside the sample and 25% inside it, where
    # the humans say 75%: θ̂ = 1.47, a mean no set of values in [0, 1] can have.
    human, judge = np.array([1, 1, 1, 0] * 10, float), np.array([1, 0, 0, 0] * 10, float)
    judge_all = np.r_[judge, np.ones(960)]
    free = ppi_mean(human, judge, judge_all)
    assert free.mean > 1.3 and free.low > 1
    bounded = ppi_mean(human, judge, judge_all, limits=(0, 1))
    assert (bounded.mean, bounded.low, bounded.high) == (1.0, 1.0, 1.0)
    assert bounded.std_error == free.std_error  # the gate's reading is unchanged
    assert 0 <= bounded.human_low <= bounded.human_mean <= bounded.human_high <= 1
