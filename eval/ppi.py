"""Prediction-powered inference (PPI++): a machine judge's figures corrected by the humans'.

A machine judge gives a per-query metric value on every one of the N queries of a golden set;
humans give theirs on a random sample of n of them. With Y the humans' values on the sample,
Ŷ the judge's values on the same queries and Ŷ' the judge's values on all N queries::

    θ̂_λ = λ · mean(Ŷ') + mean(Y − λ · Ŷ)

the judge's mean over all queries plus the correction measured where both looked
(Angelopoulos et al., Science 2023; PPI++, Angelopoulos, Duchi & Zrnic 2023). Whatever λ,
θ̂_λ is unbiased for the mean the humans would give on all queries: λ only moves its variance.
λ = 0 is the humans' own mean, λ = 1 plain PPI.

**The variance, with the sample inside the N queries.** The sampled queries' judge values
count in both means, so the two parts are not independent as PPI's formula assumes (that
would claim a gain even when every query is human-labelled). Writing f = n / N and
mean(Ŷ') = f · mean(Ŷ) + (1 − f) · mean(Ŷ_u), u the N − n queries outside the sample,
θ̂_λ = mean(Y − λ(1 − f) · Ŷ) + λ(1 − f) · mean(Ŷ_u): two independent parts, so

    Var(θ̂_λ) = Var(Y − λ(1 − f) · Ŷ) / n + (λ(1 − f))² · Var(Ŷ_u) / (N − n)

(variances with divisor n and N − n, as ppi_py's). This is exactly ppi_py's ``ppi_mean_ci``
given the queries outside the sample as its unlabelled set and λ(1 − f) as its λ. When every
query is human-labelled (N = n) it is the humans' mean and variance, whatever the judge.

**Power tuning** (PPI++): λ̂ = Cov(Y, Ŷ) / Var(Ŷ'), the covariance on the sample and the
judge's variance over all queries (divisor N − 1): PPI++'s estimate of the λ that minimises
the variance above (ppi_py's tuned λ for that unlabelled set, divided by 1 − f). A judge
that tracks the humans gets λ̂ near 1; a useless or constant one λ̂ near 0, and the humans'
own CI width. λ̂ is clipped to [0, 1]: it is estimated from the n sampled queries, and
beyond that range the estimate would extrapolate past both the humans' mean and plain PPI on
a noisy estimate of the covariance (PPI++ clips the same way).

**An actively drawn sample** (``weights``: the inverse inclusion probabilities) makes every
mean over the sample a Hájek (ratio) mean, Σ w·x / Σ w, rather than Horvitz–Thompson's
Σ w·x / N: the weights then only matter relative to each other, so a sample labelled only in
part, or probabilities stated for the sample as drawn rather than as labelled, still gives a
consistent correction (unbiased up to the ratio's O(1/n) bias), and a judge that is off by a
constant is corrected by exactly that constant. The sample's share f = n / N then stands in
for the overlap (exact for a uniform sample). Variances and the covariance are the Hájek
linearised ones, (1/n²) Σ w̃² (x − x̄_w)² with w̃ = w normalised to mean 1; equal weights give
the plain ones above.

**The interval.** ``interval="normal"`` is PPI++'s, θ̂ ± z · √Var with the variances above:
ppi_py's to the last digit. On few queries and rare events it falls short, as Wald's interval
does: with hit@10 near 0.93, a sample of 25 often holds no query where the judge and the
humans disagree, the correction looks exact and the CI holds the truth 76-90% of the time
instead of 95% (bench/ppi_coverage.py; the humans' own normal CI 84-90%). The default,
``interval="guarded"``, keeps the same centre and form with two changes for small samples:
Student's t quantile with n − 1 degrees of freedom, and the sample's variance counting one
more query, much as eval's score interval adds one (eval/intervals.py), that deviates by g
in the correction Y − λ'Ŷ (λ' = λ(1 − f)): Var_sample = (Σ w̃² d² + g²) / (n (n + 1)), d the
deviations. Writing the correction as (1 − λ') · Y + λ' · (Y − Ŷ), the humans' values and the
judge's error on them,

    g = b · (1 − λ' + λ' · √s),    s = Σ e⁴ / (Σ e²)²

b the values' largest magnitude (1 for a metric once a query scores 1), e the sample's
deviations of the judge's error Y − Ŷ (s = 1 when they show none). The humans' part may
always hide one more query as far off as the values allow: b, as the humans-only CI keeps
(λ' = 0). The judge's error needs that room when the sample shows it on at most one query —
hit@10's disagreements are few, often none in 25 or 50 queries — and less the more queries
show it: 1/s is the number of queries its spread rests on (Kish's effective number, 1 to
n), so one more disagreement of size b counts as a share s of b², a deviation b · √s. The
two parts' deviations add, not their squares: the disagreement a sample misses sits where
the humans' values are rare (hit@10: a miss the judge calls a hit). Measured on
bench/ppi_coverage.py: always at b (the guard as it was) a good judge's CI paid for room
its sample had measured — 50 queries with a kappa-0.8 judge were worth 97 humans-only, not
113, and no narrower than 100 humans alone; with the squares added, hit@10 at 50 queries
fell to 92%. Values that are all 0 (no query changed, under the humans or the judge) get
no extra query, as the release gate's CI stays within the deltas seen. The humans-only CI
beside it is computed the same way (λ' = 0).

The CI is centred on θ̂ either way. ``effective_n`` is n × Var(humans only) / Var(PPI):
how many human-labelled queries alone would give the same width. Pure computation, no loop
per query; a paired comparison calls :func:`ppi_mean` on the per-query deltas.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from goldset.eval.intervals import student_t_quantile

NORMAL, GUARDED = "normal", "guarded"
INTERVALS = (GUARDED, NORMAL)
_NO_SPREAD = 1e-12  # judge errors whose squares sum below this × b² per query show no spread


@dataclass(frozen=True)
class PPIEstimate:
    """A PPI++ estimate of a mean and its CI, beside the humans-only estimate on the same
    sample. ``std_error`` is √Var of the estimate (the CI is ``mean`` ± its quantile times it);
    ``weight`` is the power-tuning λ; ``effective_n`` how many human-only queries give the same
    CI width (both CIs of the same kind). Bounds are NaN when the sample holds fewer
    than two queries."""

    mean: float
    low: float
    high: float
    std_error: float
    weight: float
    effective_n: float
    n_human: int
    n_all: int
    human_mean: float
    human_low: float
    human_high: float

    def as_dict(self) -> dict:
        """The estimate as plain JSON-ready numbers (NaN as None)."""
        return {key: _plain(value) for key, value in asdict(self).items()}


def ppi_mean(
    human: ArrayLike,
    judge_labelled: ArrayLike,
    judge_all: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    alpha: float = 0.05,
    tuned: bool = True,
    interval: str = GUARDED,
    limits: tuple[float, float] | None = None,
) -> PPIEstimate:
    """The PPI++ estimate of the mean of the humans' per-query values over all queries.

    ``human[i]`` and ``judge_labelled[i]`` are the humans' and the judge's values on the i-th
    sampled query, ``judge_all`` the judge's values on every query (the sampled ones
    included); ``weights`` the sampled queries' inverse inclusion probabilities (None: a
    uniform random sample); ``alpha`` the CI's error level; ``tuned`` False gives plain PPI
    (λ = 1); ``interval`` ``"guarded"`` (the default, for small samples) or ``"normal"``
    (PPI++'s as published); ``limits`` the range the values can take (a metric's (0, 1), a
    paired delta's (−1, 1)), into which the estimate and both CIs are moved: the mean cannot
    leave it (θ̂_λ can, when the judge's mean over all queries and its correction on the
    sample disagree: the nearest possible value is then the estimate). The
    formulas are in the module's docstring.

    >>> estimate = ppi_mean([1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0], [1, 0, 1, 0, 1, 1, 0, 1])
    >>> round(estimate.mean, 4), round(estimate.weight, 4), estimate.n_human, estimate.n_all
    (0.8083, 0.4667, 4, 8)
    >>> [round(bound, 4) for bound in (estimate.low, estimate.high)]  # 4 queries tell little
    [-0.0675, 1.6842]
    >>> cut = ppi_mean([1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0], [1, 0, 1, 0, 1, 1, 0, 1],
    ...                limits=(0, 1))
    >>> [round(bound, 4) for bound in (cut.low, cut.high)], cut.std_error == estimate.std_error
    ([0.0, 1.0], True)
    """
    y, y_hat, y_all, w = _checked(human, judge_labelled, judge_all, weights, alpha)
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}")
    n, n_all = len(y), len(y_all)
    outside = 1 - n / n_all
    centred_y, centred_hat = y - _mean(y, w), y_hat - _mean(y_hat, w)
    judge_variance = float(y_all.var(ddof=1)) if n_all > 1 else 0.0
    weight = 1.0
    if tuned:
        covariance = _mean(w * w * centred_y * centred_hat, None)
        weight = float(np.clip(covariance / judge_variance, 0, 1)) if judge_variance > 0 else 0.0
    # The largest magnitude b sizes the guarded interval's one more query; normal: none.
    largest = float(np.abs(np.concatenate([y, y_all])).max()) if interval == GUARDED else 0.0
    outside_variance = _outside_variance(y_hat, y_all)
    variance = _variance(centred_y, centred_hat, w, weight * outside, outside_variance, largest)
    human_variance = _variance(centred_y, centred_hat, w, 0.0, 0.0, largest)
    mean = weight * float(y_all.mean()) + _mean(y - weight * y_hat, w)
    human_mean = _mean(y, w)
    quantile = _quantile(alpha, n, interval)
    low, high = _bounds(mean, variance, quantile, limits)
    human_low, human_high = _bounds(human_mean, human_variance, quantile, limits)
    if limits is not None:  # the judge's mean plus the correction may leave the range
        mean = _within(mean, limits)
    return PPIEstimate(
        mean=mean,
        low=low,
        high=high,
        std_error=math.sqrt(variance),
        weight=weight,
        effective_n=_effective_n(n, human_variance, variance),
        n_human=n,
        n_all=n_all,
        human_mean=human_mean,
        human_low=human_low,
        human_high=human_high,
    )


def _checked(
    human: ArrayLike,
    judge_labelled: ArrayLike,
    judge_all: ArrayLike,
    weights: ArrayLike | None,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The inputs as float arrays, the weights normalised to mean 1; ValueError when they do
    not fit together."""
    arrays = [np.asarray(values, dtype=np.float64) for values in (human, judge_labelled, judge_all)]
    y, y_hat, y_all = arrays
    if any(array.ndim != 1 for array in arrays):
        raise ValueError("per-query values must be one-dimensional")
    if len(y) == 0 or len(y) != len(y_hat):
        raise ValueError("human and judge_labelled need the same, non-zero number of queries")
    if len(y_all) < len(y):
        raise ValueError("judge_all must hold every query, the sampled ones included")
    if not all(np.isfinite(array).all() for array in arrays):
        raise ValueError("per-query values must be finite numbers")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != y.shape or not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("weights must be one positive finite number per sampled query")
    return y, y_hat, y_all, w / w.mean()


def _mean(values: np.ndarray, w: np.ndarray | None) -> float:
    """The (Hájek) mean of ``values``, weighted by ``w`` normalised to mean 1."""
    return float(values.mean() if w is None else (w * values).mean())


def _outside_variance(y_hat: np.ndarray, y_all: np.ndarray) -> float:
    """Var(Ŷ_u) / (N − n): the judge's values outside the sample (divisor N − n), from the
    sums over all queries less those over the sample; 0 when the sample is every query."""
    outside = len(y_all) - len(y_hat)
    if outside == 0:
        return 0.0
    total = float(y_all.sum() - y_hat.sum())
    squares = float((y_all * y_all).sum() - (y_hat * y_hat).sum())
    return max(squares / outside - (total / outside) ** 2, 0.0) / outside


def _variance(
    centred_y: np.ndarray,
    centred_hat: np.ndarray,
    w: np.ndarray,
    sample_weight: float,
    outside_variance: float,
    largest: float,
) -> float:
    """Var(θ̂) = Var_w(Y − λ(1 − f)Ŷ) / n + (λ(1 − f))² Var(Ŷ_u) / (N − n); with ``largest``
    (b > 0, guarded) the sample's part is (Σ w̃² d² + g²) / (n (n + 1))."""
    residual = w * (centred_y - sample_weight * centred_hat)
    n = len(residual)
    squares = float((residual * residual).sum())
    unseen = _unseen_deviation(w * (centred_y - centred_hat), largest, sample_weight)
    sample = squares / n**2 if not unseen else (squares + unseen**2) / (n * (n + 1))
    return sample + sample_weight**2 * outside_variance


def _unseen_deviation(errors: np.ndarray, largest: float, sample_weight: float) -> float:
    """The guarded interval's one more query: how far it deviates in the correction
    Y − λ'Ŷ = (1 − λ')·Y + λ'·(Y − Ŷ), g = b·(1 − λ' + λ'·√s) with s = Σe⁴ / (Σe²)², ``errors``
    the sample's (weighted) deviations e of the judge's error Y − Ŷ: the humans' part as far
    off as the values allow, the judge's error's part b·√s, 1/s the number of queries the
    sample shows that error on (s = 1: one query, or none). 0 when b is 0 (normal interval,
    or nothing moved)."""
    if not largest:
        return 0.0
    squares = errors * errors
    spread = float(squares.sum())
    # Below this the errors are float noise around a constant: no spread shown.
    shown = spread > _NO_SPREAD * largest**2 * len(errors)
    share = float((squares * squares).sum()) / spread**2 if shown else 1.0
    return largest * (1 - sample_weight + sample_weight * math.sqrt(share))


def _quantile(alpha: float, n: int, interval: str) -> float:
    """The CI's quantile: the normal one, or Student's t with n − 1 degrees of freedom
    (guarded); NaN below two queries, where no spread can be seen."""
    if n < 2:
        return math.nan
    if interval == NORMAL:
        return NormalDist().inv_cdf(1 - alpha / 2)
    return student_t_quantile(1 - alpha / 2, n - 1)


def _bounds(
    mean: float, variance: float, quantile: float, limits: tuple[float, float] | None
) -> tuple[float, float]:
    """mean ± quantile · √variance, cut to ``limits``: the mean cannot leave the values'
    range, so the part of the interval past it holds no value the mean could take."""
    half = quantile * math.sqrt(variance)
    low, high = mean - half, mean + half
    if limits is None:
        return low, high
    return _within(low, limits), _within(high, limits)


def _within(value: float, limits: tuple[float, float]) -> float:
    """``value`` moved into ``limits``: the nearest value the mean can take (NaN stays)."""
    return float(min(max(value, limits[0]), limits[1])) if value == value else value


def _effective_n(n: int, human_variance: float, variance: float) -> float:
    """n × Var(humans only) / Var(PPI); n when neither varies, NaN below two queries."""
    if n < 2:
        return math.nan
    if variance <= 0:
        return float(n)
    return n * human_variance / variance


def _plain(value: float | int) -> float | int | None:
    return None if isinstance(value, float) and math.isnan(value) else value
