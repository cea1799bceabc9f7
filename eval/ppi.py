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
humans disagree, the correction looks exact and the CI holds the truth 72-88% of the time
instead of 95% (bench/ppi_coverage.py; the humans' own normal CI 84-90%). The default,
``interval="guarded"``, keeps the same centre and form with two changes for small samples:
Student's t quantile with n − 1 degrees of freedom, and the sample's variance counting one
more query that deviates by b, the values' largest magnitude (1 for a metric once a query
scores 1), much as eval's score interval adds one (eval/intervals.py): Var_sample =
(Σ w̃² d² + b²) / (n (n + 1)), d the deviations. That is room for the disagreement the sample
may not have shown; it costs little width once n is large. Values that are all 0 (no query
changed, under the humans or the judge) get none, as the release gate's CI stays within the
deltas seen. The humans-only CI beside it is computed the same way (λ = 0).

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
) -> PPIEstimate:
    """The PPI++ estimate of the mean of the humans' per-query values over all queries.

    ``human[i]`` and ``judge_labelled[i]`` are the humans' and the judge's values on the i-th
    sampled query, ``judge_all`` the judge's values on every query (the sampled ones
    included); ``weights`` the sampled queries' inverse inclusion probabilities (None: a
    uniform random sample); ``alpha`` the CI's error level; ``tuned`` False gives plain PPI
    (λ = 1); ``interval`` ``"guarded"`` (the default, for small samples) or ``"normal"``
    (PPI++'s as published). The formulas are in the module's docstring.

    >>> estimate = ppi_mean([1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0], [1, 0, 1, 0, 1, 1, 0, 1])
    >>> round(estimate.mean, 4), round(estimate.weight, 4), estimate.n_human, estimate.n_all
    (0.8083, 0.4667, 4, 8)
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
    # One more query deviating by b (guarded), or none (normal).
    largest = float(np.abs(np.concatenate([y, y_all])).max())
    extra = largest**2 if interval == GUARDED else 0.0
    outside_variance = _outside_variance(y_hat, y_all)
    variance = _variance(centred_y, centred_hat, w, weight * outside, outside_variance, extra)
    human_variance = _variance(centred_y, centred_hat, w, 0.0, 0.0, extra)
    mean = weight * float(y_all.mean()) + _mean(y - weight * y_hat, w)
    human_mean = _mean(y, w)
    quantile = _quantile(alpha, n, interval)
    low, high = _bounds(mean, variance, quantile)
    human_low, human_high = _bounds(human_mean, human_variance, quantile)
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
    extra: float,
) -> float:
    """Var(θ̂) = Var_w(Y − λ(1 − f)Ŷ) / n + (λ(1 − f))² Var(Ŷ_u) / (N − n); with ``extra``
    (b², guarded) the sample's part is (Σ w̃² d² + b²) / (n (n + 1))."""
    residual = w * (centred_y - sample_weight * centred_hat)
    n = len(residual)
    squares = float((residual * residual).sum())
    sample = squares / n**2 if not extra else (squares + extra) / (n * (n + 1))
    return sample + sample_weight**2 * outside_variance


def _quantile(alpha: float, n: int, interval: str) -> float:
    """The CI's quantile: the normal one, or Student's t with n − 1 degrees of freedom
    (guarded); NaN below two queries, where no spread can be seen."""
    if n < 2:
        return math.nan
    if interval == NORMAL:
        return NormalDist().inv_cdf(1 - alpha / 2)
    return student_t_quantile(1 - alpha / 2, n - 1)


def _bounds(mean: float, variance: float, quantile: float) -> tuple[float, float]:
    """mean ± quantile · √variance."""
    half = quantile * math.sqrt(variance)
    return mean - half, mean + half


def _effective_n(n: int, human_variance: float, variance: float) -> float:
    """n × Var(humans only) / Var(PPI); n when neither varies, NaN below two queries."""
    if n < 2:
        return math.nan
    if variance <= 0:
        return float(n)
    return n * human_variance / variance


def _plain(value: float | int) -> float | int | None:
    return None if isinstance(value, float) and math.isnan(value) else value
