"""CIs of a mean in closed form: Student's t and the score interval, the reports' default.

The score interval (:func:`score_interval`) holds every mean μ that a t test would not reject
with the per-query variance that μ implies, rather than the one the sample shows: with most
queries at 0 (miss-heavy RR@10, hit@10) the sample says little about the spread, and a
bootstrap, which can only reshuffle the few hits, falls short of its promise (docs/gate.md,
bench/ci_coverage.py). :func:`score_p_value` is the same test's p-value at 0. The checks of
per-query inputs shared with :mod:`goldset.eval.stats` live here too.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike


def score_interval(values: ArrayLike, confidence: float = 0.95, signed: bool = False) -> np.ndarray:
    """The score CI of the mean of per-query values, per column: (columns, 2).

    It holds every μ with (x̄ − μ)² ≤ t² · V(μ) / n (t: Student's quantile with n − 1
    degrees of freedom, at least 1): the t test of "the mean is μ" with the variance that μ
    implies. For values in [0, 1] with mean μ, E[x²] = r · E[|x|]; r is estimated as
    (Σx² + b²) / (Σ|x| + b), the queries plus one more at the values' largest magnitude b
    (1 for a metric), so that few or no non-zero values still leave room for one. Then

    - values that cannot be negative (a metric): E[|x|] = μ, V(μ) = r·μ − μ². For hit@k (0
      or 1) this is Wilson's interval; for RR@10 it is Wilson's interval on the share of
      hits, scaled by the mean hit value. All values at 0 give [0, about t²/n], not [0, 0];
    - ``signed`` values (paired deltas): E[|x|] is at least its mean in the sample and at
      least |μ|, V(μ) = r · max(mean |x|, |μ|) − μ².

    No queries gives NaN bounds.

    >>> score_interval([0.0] * 50).round(4).tolist()
    [[0.0, 0.0747]]
    >>> score_interval([1.0] + [0.0] * 49, signed=True).round(4).tolist()
    [[-0.0198, 0.1083]]
    """
    matrix, _ = per_query_matrix(values, "values")
    check_confidence(confidence)
    count = len(matrix)
    if count == 0:
        return np.full((matrix.shape[1], 2), np.nan)
    k = student_t_quantile(0.5 + confidence / 2, max(count - 1, 1)) ** 2 / count
    mean, magnitude, ratio = _score_moments(matrix)
    if not signed:  # (1 + k) μ² − (2 x̄ + k r) μ + x̄² ≤ 0
        return _quadratic_roots(1 + k, -(2 * mean + k * ratio), mean**2)
    return _signed_score_bounds(mean, magnitude, ratio, k)


def _signed_score_bounds(
    mean: np.ndarray, magnitude: np.ndarray, ratio: np.ndarray, k: float
) -> np.ndarray:
    """The signed score interval: the μ with (x̄ − μ)² ≤ k · (r · max(m, |μ|) − μ²), m the mean
    magnitude, solved on its three pieces (|μ| ≤ m, μ > m, μ < −m); the bounds are the
    outermost roots. μ = x̄ always qualifies (|x̄| ≤ m and r · m ≥ mean x² ≥ x̄²)."""
    edge = magnitude[:, None]
    within = np.clip(
        _quadratic_roots(1 + k, -2 * mean, mean**2 - k * ratio * magnitude), -edge, edge
    )
    above = _quadratic_roots(1 + k, -(2 * mean + k * ratio), mean**2)
    below = _quadratic_roots(1 + k, -(2 * mean - k * ratio), mean**2)
    high = np.where(above[:, 1] > magnitude, above[:, 1], within[:, 1])
    low = np.where(below[:, 0] < -magnitude, below[:, 0], within[:, 0])
    return np.stack([low, high], axis=1)


def score_p_value(deltas: np.ndarray) -> np.ndarray:
    """Two-sided p-value per column of the signed score test of "the mean delta is 0":
    t = x̄ / √(V(0) / n), V(0) = r · mean |x| (:func:`score_interval`); 1 when nothing moved."""
    count = len(deltas)
    mean, magnitude, ratio = _score_moments(deltas)
    spread = np.sqrt(ratio * magnitude / count)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.where(spread > 0, np.abs(mean) / spread, 0.0)
    degrees = max(count - 1, 1)
    return np.array([min(1.0, 2 * t_tail(float(t), degrees)) for t in statistic])


def _score_moments(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: the mean, the mean magnitude and the ratio r of Σx² to Σ|x|, with one
    more value at the largest magnitude b (1 for a metric's values in [0, 1])."""
    magnitudes = np.abs(matrix)
    largest = np.maximum(1.0, magnitudes.max(axis=0))
    ratio = ((matrix**2).sum(axis=0) + largest**2) / (magnitudes.sum(axis=0) + largest)
    return matrix.mean(axis=0), magnitudes.mean(axis=0), ratio


def _quadratic_roots(a: float, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The roots [low, high] of a·μ² + b·μ + c (a > 0) per column, NaN where there are none;
    computed without cancellation (Numerical Recipes 5.6)."""
    discriminant = b**2 - 4 * a * c
    root = np.sqrt(np.maximum(discriminant, 0.0))
    q = -(b + np.where(b < 0, -root, root)) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        roots = np.stack([q / a, np.where(q != 0, c / q, 0.0)], axis=1)
    roots = np.sort(roots, axis=1)
    roots[discriminant < 0] = np.nan
    return roots


def t_interval(values: ArrayLike, confidence: float = 0.95) -> np.ndarray:
    """Student's t CI of the mean of 1-D ``values``: mean ± t(n − 1) · s / √n, as [low, high].

    Fewer than 2 values, or values that do not vary, give the mean as both bounds.

    >>> t_interval([0.0, 1.0, 1.0, 0.5], 0.95).round(3).tolist()
    [-0.137, 1.387]
    """
    values = np.asarray(values, dtype=np.float64)
    check_confidence(confidence)
    mean = float(values.mean())
    if len(values) < 2:
        return np.array([mean, mean])
    half = student_t_quantile(0.5 + confidence / 2, len(values) - 1)
    half *= float(values.std(ddof=1)) / math.sqrt(len(values))
    return np.array([mean - half, mean + half])


def student_t_quantile(p: float, df: int) -> float:
    """The p-quantile (p ≥ 0.5) of Student's t with ``df`` degrees of freedom.

    Exact for up to 30 degrees of freedom (the closed form of the t CDF for an integer df,
    Abramowitz & Stegun 26.7.3-4, inverted by bisection); above, the Cornish-Fisher
    expansion around the normal quantile, within 1e-4 there.

    >>> round(student_t_quantile(0.975, 1), 3), round(student_t_quantile(0.975, 19), 3)
    (12.706, 2.093)
    """
    from statistics import NormalDist

    if df > 30:
        z = NormalDist().inv_cdf(p)
        terms = (
            (z**3 + z) / 4,
            (5 * z**5 + 16 * z**3 + 3 * z) / 96,
            (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
        )
        return z + sum(term / df ** (power + 1) for power, term in enumerate(terms))
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if _t_cdf(middle, df) < p else (low, middle)
    return (low + high) / 2


def t_tail(t: float, df: int) -> float:
    """P(T > t) for t ≥ 0: exact up to 30 degrees of freedom; above, the normal tail of
    t · (1 − 1/(4 df)) / √(1 + t² / (2 df)) (Abramowitz & Stegun 26.7.8), within 1e-3."""
    if df <= 30:
        return 1 - _t_cdf(t, df)
    z = t * (1 - 1 / (4 * df)) / math.sqrt(1 + t * t / (2 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def _t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for t ≥ 0 and an integer ``df``, in closed form."""
    theta = math.atan(t / math.sqrt(df))
    cosine2 = math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2:
        for k in range(1, (df - 1) // 2):
            term *= cosine2 * (2 * k) / (2 * k + 1)
            total += term
        within = (2 / math.pi) * (
            theta + (math.sin(theta) * math.cos(theta) * total if df > 1 else 0)
        )
    else:
        for k in range(1, df // 2):
            term *= cosine2 * (2 * k - 1) / (2 * k)
            total += term
        within = math.sin(theta) * total
    return 0.5 + within / 2


# --- inputs --------------------------------------------------------------------------------


def per_query_matrix(values: ArrayLike, name: str) -> tuple[np.ndarray, bool]:
    """``values`` as a float (n_queries, n_metrics) matrix, and whether it was 1-D."""
    matrix = np.asarray(values, dtype=np.float64)
    if matrix.ndim not in (1, 2):
        raise ValueError(
            f"{name} must have shape (n_queries,) or (n_queries, n_metrics), got {matrix.shape}"
        )
    if not np.isfinite(matrix).all():
        raise ValueError(f"{name} must be finite numbers (no NaN or infinity)")
    one_dimensional = matrix.ndim == 1
    return (matrix[:, None] if one_dimensional else matrix), one_dimensional


def check_confidence(confidence: float) -> None:
    """Refuse a confidence level outside (0, 1)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence!r}")
