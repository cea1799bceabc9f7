"""Uncertainty of per-query means: bootstrap CIs, paired comparisons, and how many queries.

Every function takes per-query values, one row per query and (optionally) one column per
metric, and resamples whole rows, so all metrics of one resample see the same queries.
Everything is seeded through ``np.random.default_rng(seed)``: the same inputs and seed give
the same numbers, always.

The CIs of :func:`bootstrap_ci` and :func:`paired_bootstrap` are score intervals by default
(:func:`goldset.eval.intervals.score_interval`), which need no resampling: with most queries at 0
the sample's spread says little, and a bootstrap, which can only reshuffle the few hits,
falls short. On RR@10 with 90% of 50 queries at 0, 95% percentile and BCa intervals held the
true mean 90-93% of the time, the score interval 97%; at 200 queries BCa and the score
interval 94-95%, the percentile 92.6-93.8%
(bench/ci_coverage.py, docs/gate.md). ``method="bca"`` gives the BCa bootstrap interval
(bias-corrected and accelerated, Efron 1987: the percentiles of the resampled means moved by
the bootstrap's median bias z0 and by the skew of the per-query values, the acceleration a
from the jackknife, which for a mean is exact and needs no loop: a = Σd³ / (6 (Σd²)^1.5), d
the deviations from the mean), ``method="percentile"`` the plain percentile interval; the
release gate resamples too (:func:`resample_means`). p-values are read off the same test as
the CI (see :func:`paired_bootstrap`).

Two exact shortcuts keep resampling fast without a Python loop per query:

- Resampling n queries with replacement only matters through how often each query is drawn,
  and queries with identical rows are interchangeable. When the rows take few distinct values
  (RR@10, hit@k and their paired differences take a handful), a resample is one multinomial
  draw over the distinct rows instead of n index draws; otherwise n indices are drawn and
  counted. Both give the same distribution.
- Resamples are drawn in chunks of about ``CHUNK_ELEMENTS`` counts, so memory stays bounded
  whatever the number of resamples. The chunk size depends only on the input's shape, so
  the random stream, hence every number, is the same on any machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import ArrayLike

from goldset.eval.intervals import (
    check_confidence,
    per_query_matrix,
    score_interval,
    score_p_value,
    student_t_quantile,
    t_interval,
)

__all__ = [
    "bootstrap_ci",
    "paired_bootstrap",
    "PairedBootstrap",
    "p_value_text",
    "queries_needed",
    "randomization_test",
    "resample_means",
    "Resampled",
    "score_interval",
    "student_t_quantile",
    "t_interval",
]

CHUNK_ELEMENTS = 1 << 16  # counts held in memory per chunk of resamples (512 KiB of int64)
PRODUCT_COLUMNS = 8  # metric columns per matrix product (see _product)
# A multinomial draw per distinct row costs about 20 index draws (measured): compress the rows
# only when there are at least 20 times fewer distinct rows than queries.
DISTINCT_ROW_ADVANTAGE = 20
TIE_TOLERANCE = 1e-9  # relative: resampled statistics this close count as equal (float noise)
P_VALUE_RESOLUTION = 1e-4  # p-values are printed to four decimals


SCORE = "score"
RESAMPLING_METHODS = ("bca", "percentile")
METHODS = (SCORE, *RESAMPLING_METHODS)


@dataclass(frozen=True)
class PairedBootstrap:
    """Paired comparison of candidate − baseline, per metric (:func:`paired_bootstrap`).

    For 1-D inputs: ``delta`` and ``p_value`` are floats and ``ci`` has shape (2,); for
    (n_queries, n_metrics) inputs they have shapes (n_metrics,), (n_metrics, 2), (n_metrics,).
    ``p_floor`` (shaped as ``p_value``) is the smallest p-value the resamples can show (none
    on the far side of zero): a p-value there only says that the true one is below it. The
    score test is not resampled: its ``p_floor`` is NaN.
    """

    delta: np.ndarray
    ci: np.ndarray
    p_value: np.ndarray
    p_floor: np.ndarray


@dataclass(frozen=True)
class Resampled:
    """Bootstrap means of per-query values (rows resampled), with what BCa needs.

    ``estimate`` (columns,) is the observed mean; ``resampled`` (n_resamples, columns) the
    resampled means; ``bias`` (z0) and ``acceleration`` (a) the BCa corrections per column
    (both 0 with ``method="percentile"``).
    """

    estimate: np.ndarray
    resampled: np.ndarray
    bias: np.ndarray
    acceleration: np.ndarray

    def interval(self, confidence: float | np.ndarray) -> np.ndarray:
        """Two-sided CI per column at ``confidence`` (a number, or one per column): (columns, 2)."""
        tail = (1 - np.broadcast_to(np.asarray(confidence, dtype=np.float64), self.bias.shape)) / 2
        ordered = np.sort(self.resampled, axis=0)  # NaN last: a column holding one gives NaN
        bounds = np.stack(
            [
                _quantile_of_sorted(ordered, self._percentile(tail)),
                _quantile_of_sorted(ordered, self._percentile(1 - tail)),
            ],
            axis=1,
        )
        bounds[np.isnan(ordered[-1])] = np.nan
        return bounds

    def below(self, limit: np.ndarray) -> np.ndarray:
        """One-sided p-value per column that the true mean is below ``limit``: the smallest α
        at which the CI's lower bound, at one-sided level α, is at or above ``limit``.

        Resamples at the limit (within float noise) count against it; with none on that side
        it is the floor, ``(1 / (B + 1))`` moved by BCa.
        """
        return self._level_of(self._share(limit, at_or_below=True))

    def above(self, limit: np.ndarray) -> np.ndarray:
        """One-sided p-value per column that the true mean is above ``limit`` (as :meth:`below`)."""
        return 1 - self._level_of(1 - self._share(limit, at_or_below=False))

    def floors(self) -> tuple[np.ndarray, np.ndarray]:
        """The smallest p-values :meth:`below` and :meth:`above` can give (no resample on the
        far side of the limit): a p-value there only says that the true one is below it."""
        share = np.full(self.bias.shape, 1 / (len(self.resampled) + 1))
        return self._level_of(share), 1 - self._level_of(1 - share)

    def _share(self, limit: np.ndarray, at_or_below: bool) -> np.ndarray:
        """(1 + resamples on one side of ``limit``, the limit included) / (B + 1)."""
        band = TIE_TOLERANCE * np.maximum(np.abs(self.resampled).max(axis=0), np.abs(limit))
        if at_or_below:
            count = (self.resampled <= limit + band).sum(axis=0)
        else:
            count = (self.resampled >= limit - band).sum(axis=0)
        return np.minimum(1.0, (count + 1) / (len(self.resampled) + 1))

    def _percentile(self, level: np.ndarray) -> np.ndarray:
        """Where the BCa bound of nominal lower-tail ``level`` lies among the resamples."""
        if not (self.bias.any() or self.acceleration.any()):
            return level  # the percentile interval, exactly
        shifted = self.bias + _normal_quantile(level)
        return _normal_cdf(self.bias + shifted / (1 - self.acceleration * shifted))

    def _level_of(self, share: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`_percentile`: the nominal level of a share of resamples."""
        if not (self.bias.any() or self.acceleration.any()):
            return share  # the percentile interval's level, exactly
        away = _normal_quantile(share) - self.bias
        with np.errstate(divide="ignore", invalid="ignore"):
            denominator = 1 + self.acceleration * away
            level = _normal_cdf(np.where(denominator > 0, away / denominator, np.inf) - self.bias)
        return np.where(share >= 1, 1.0, np.where(share <= 0, 0.0, level))


def bootstrap_ci(
    values: ArrayLike,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    method: str = SCORE,
) -> np.ndarray:
    """CI of the mean over queries: the score interval (:func:`score_interval`), or the
    bootstrap's, ``method="bca"`` or ``"percentile"`` (``n_resamples`` resamples, seeded).

    ``values`` has shape (n_queries,) or (n_queries, n_metrics), per-query values of metrics
    in [0, 1]; returns ``[low, high]`` with shape (2,) or (n_metrics, 2). All metric columns
    of a bootstrap share the same resampled queries. No queries gives NaN bounds; with the
    bootstrap, identical values give a zero-width interval.

    >>> bootstrap_ci([0.0, 1.0, 1.0, 0.5]).round(3).tolist()
    [0.123, 0.896]
    >>> bootstrap_ci([0.0, 1.0, 1.0, 0.5], n_resamples=2000, seed=1, method="bca").round(3).tolist()
    [0.125, 1.0]
    >>> bootstrap_ci([0.0, 1.0, 1.0, 0.5], 2000, 1, method="percentile").round(3).tolist()
    [0.25, 1.0]
    """
    matrix, one_dimensional = per_query_matrix(values, "values")
    _check_resampling(n_resamples, confidence, method)
    if len(matrix) == 0:
        bounds = np.full((matrix.shape[1], 2), np.nan)
    elif method == SCORE:
        bounds = score_interval(matrix, confidence, signed=bool((matrix < 0).any()))
    else:
        bounds = resample_means(matrix, n_resamples, seed, method).interval(confidence)
    return bounds[0] if one_dimensional else bounds


def resample_means(
    values: ArrayLike, n_resamples: int = 1000, seed: int = 0, method: str = "bca"
) -> Resampled:
    """The bootstrap distribution of the column means of ``values`` (n_queries, columns),
    with its BCa corrections (zero for ``method="percentile"``). At least one query."""
    matrix, _ = per_query_matrix(values, "values")
    _check_resampling(n_resamples, 0.5, method, RESAMPLING_METHODS)
    estimate = matrix.mean(axis=0)
    resampled = _resampled_means(matrix, n_resamples, np.random.default_rng(seed))
    if method == "percentile":
        zero = np.zeros_like(estimate)
        return Resampled(estimate, resampled, zero, zero)
    return Resampled(estimate, resampled, _bias(resampled, estimate), _acceleration(matrix))


def paired_bootstrap(
    baseline: ArrayLike,
    candidate: ArrayLike,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    method: str = SCORE,
) -> PairedBootstrap:
    """Paired comparison of the mean difference candidate − baseline over the same queries.

    Row i of both inputs must be the same query (pandas inputs must share their index).
    Returns the mean delta, its CI and a two-sided p-value for "no difference", each per
    metric column: by default the score interval of the deltas (:func:`score_interval`,
    signed) and the p-value of the same test at 0, t = x̄ / √(V(0) / n), which has no floor
    (``p_floor`` NaN); with ``method="bca"`` or ``"percentile"`` the bootstrap's, as follows.

    The bootstrap's p-value is the one that matches the CI: twice the smaller one-sided level
    at which the CI's bound reaches zero (:meth:`Resampled.below`, :meth:`Resampled.above`). For the
    percentile method that is twice the share of resampled deltas on the far side of zero,
    with the +1 correction counting the observed sample as one of the resamples::

        p = min(1, 2 * (1 + min(#{delta* <= 0}, #{delta* >= 0})) / (B + 1))

    The +1 keeps p honest at the edge: it is never 0 (``p_floor``, 2 / (B + 1) for the
    percentile method, moved a little by BCa: the resamples cannot show less), and
    p < 1 − confidence implies that the CI excludes zero; conversely a CI that excludes zero
    gives p ≤ 1 − confidence + 4 / (B + 1), the discreteness of B resamples. Identical runs
    give p = 1. No queries gives NaN throughout.
    """
    deltas, one_dimensional = _paired_deltas(baseline, candidate)
    _check_resampling(n_resamples, confidence, method)
    metric_count = deltas.shape[1]
    if len(deltas) == 0:
        mean_delta = np.full(metric_count, np.nan)
        interval = np.full((metric_count, 2), np.nan)
        p_value = p_floor = np.full(metric_count, np.nan)
    elif method == SCORE:
        mean_delta = deltas.mean(axis=0)
        interval = score_interval(deltas, confidence, signed=True)
        p_value = score_p_value(deltas)
        p_floor = np.full(metric_count, np.nan)
    else:
        resampled = resample_means(deltas, n_resamples, seed, method)
        mean_delta = resampled.estimate
        interval = resampled.interval(confidence)
        zero = np.zeros(metric_count)
        p_value = np.minimum(1.0, 2 * np.minimum(resampled.below(zero), resampled.above(zero)))
        p_floor = np.minimum(1.0, 2 * np.minimum(*resampled.floors()))
    if one_dimensional:
        return PairedBootstrap(mean_delta[0], interval[0], p_value[0], p_floor[0])
    return PairedBootstrap(mean_delta, interval, p_value, p_floor)


def randomization_test(
    baseline: ArrayLike, candidate: ArrayLike, n_permutations: int = 10000, seed: int = 0
) -> np.ndarray:
    """Two-sided paired randomization (sign-flip) test of "no difference", per metric.

    Under the null hypothesis each query's pair of values is exchangeable, so each query's
    difference keeps or flips its sign at random (the same flip for every metric of that
    query). The statistic is |mean difference|, and with R random flips the p-value is
    ``(1 + #{|flipped| >= |observed|}) / (R + 1)`` — never 0. Returns a float for 1-D
    inputs, an array of shape (n_metrics,) otherwise; NaN when there are no queries.
    """
    deltas, one_dimensional = _paired_deltas(baseline, candidate)
    if not isinstance(n_permutations, int | np.integer) or n_permutations < 1:
        raise ValueError(f"n_permutations must be a positive integer, got {n_permutations!r}")
    if len(deltas) == 0:
        p_value = np.full(deltas.shape[1], np.nan)
    else:
        observed = np.abs(deltas.sum(axis=0))
        tolerance = TIE_TOLERANCE * np.abs(deltas).sum(axis=0)
        flipped = np.abs(_sign_flipped_sums(deltas, n_permutations, np.random.default_rng(seed)))
        as_extreme = (flipped >= observed - tolerance).sum(axis=0)
        p_value = (as_extreme + 1) / (n_permutations + 1)
    return p_value[0] if one_dimensional else p_value


def queries_needed(values: ArrayLike, half_width: float = 0.05, confidence: float = 0.95) -> int:
    """Answerable queries needed for the CI of the mean to reach ± ``half_width``.

    Normal approximation: the CI half-width of a mean over n queries is z · s / √n, where s is
    the sample standard deviation of the per-query values (ddof=1) and z the two-sided normal
    quantile (1.96 for 95%), so n = ⌈(z · s / half_width)²⌉, at least 1. This is the total
    needed, not the number still to label. A percentile bootstrap CI on n queries has about
    that half-width once n is a few dozen or more.

    >>> queries_needed([0.0, 1.0] * 50, half_width=0.05)
    389
    """
    per_query = np.asarray(values, dtype=np.float64)
    if per_query.ndim != 1:
        raise ValueError(f"values must be one value per query (1-D), got shape {per_query.shape}")
    if len(per_query) < 2:
        raise ValueError("at least 2 queries are needed to estimate the per-query variance")
    if not np.isfinite(per_query).all():
        raise ValueError("values must be finite numbers (no NaN or infinity)")
    if not half_width > 0:
        raise ValueError(f"half_width must be positive, got {half_width!r}")
    check_confidence(confidence)
    from statistics import NormalDist  # imported here: an evaluation never needs it

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    spread = per_query.std(ddof=1)
    return max(1, math.ceil((z * spread / half_width) ** 2))


def p_value_text(p_value: float, floor: float | None = None) -> str:
    """A p-value to four decimals; at the ``floor`` of its resamples (or below), ``< floor``:
    the resamples cannot show a smaller one, so the true p-value is only known to be below
    it. No floor (None or NaN: a test that is not resampled) prints the figure, and one too
    small for four decimals ``< 0.0001`` rather than 0.

    >>> p_value_text(0.01234), p_value_text(2 / 1000, floor=2 / 1000), p_value_text(3e-9)
    ('0.0123', '< 0.002', '< 0.0001')
    """
    if floor is not None and not math.isnan(floor) and p_value <= floor * (1 + TIE_TOLERANCE):
        return f"< {floor:.4g}"
    return f"{p_value:.4f}" if p_value >= P_VALUE_RESOLUTION else f"< {P_VALUE_RESOLUTION:g}"


# --- resampling ----------------------------------------------------------------------------


def _resampled_means(matrix: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Column means of ``n_resamples`` bootstrap resamples of the rows: (n_resamples, columns).

    Values are shifted by each column's minimum first, so that a constant column resamples
    to exactly its value (zero-width CI) and rounding stays small.
    """
    query_count = len(matrix)
    offset = matrix.min(axis=0)
    rows, multiplicity = _distinct_rows(matrix - offset)
    if multiplicity is None:
        draw = partial(_index_counts, query_count=query_count)
    else:
        draw = partial(_multinomial_counts, multiplicity=multiplicity)
    return offset + _weighted_sums(rows, n_resamples, draw, rng) / query_count


def _sign_flipped_sums(
    deltas: np.ndarray, n_permutations: int, rng: np.random.Generator
) -> np.ndarray:
    """Column sums of the differences after ``n_permutations`` random per-query sign flips.

    A query's row d and its negation −d are interchangeable under sign flips, so rows are
    first given a canonical sign (first non-zero entry positive) and all-zero rows dropped;
    when few distinct rows remain, the number kept positive per distinct row is binomial.
    Either way, a flip sum is 2 · (rows kept positive) − (all rows).
    """
    nonzero = deltas[np.any(deltas != 0, axis=1)]
    leading = nonzero[np.arange(len(nonzero)), np.argmax(nonzero != 0, axis=1)]
    canonical = nonzero * np.sign(leading)[:, None]
    rows, multiplicity = _distinct_rows(canonical)
    if multiplicity is None:
        multiplicity = np.ones(len(rows), dtype=np.int64)
        draw = partial(_coin_flips, row_count=len(rows))
    else:
        draw = partial(_binomial_halves, multiplicity=multiplicity)
    return 2 * _weighted_sums(rows, n_permutations, draw, rng) - multiplicity @ rows


def _distinct_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The distinct rows and how many times each occurs, when compressing pays off.

    Returns ``(matrix, None)`` when there are too many distinct rows to be worth it. Rows are
    numbered column by column (re-numbered after each column so codes stay below n).
    """
    limit = len(matrix) // DISTINCT_ROW_ADVANTAGE
    codes = np.zeros(len(matrix), dtype=np.int64)
    for column in matrix.T:
        column_values, column_codes = np.unique(column, return_inverse=True)
        if len(column_values) > limit:
            return matrix, None
        _, codes = np.unique(codes * len(column_values) + column_codes, return_inverse=True)
    _, first_row, multiplicity = np.unique(codes, return_index=True, return_counts=True)
    if len(first_row) > limit:
        return matrix, None
    return matrix[first_row], multiplicity


def _weighted_sums(
    rows: np.ndarray,
    draw_count: int,
    draw: Callable[[np.random.Generator, int], np.ndarray],
    rng: np.random.Generator,
) -> np.ndarray:
    """``draw_count`` random weightings of ``rows`` summed: (draw_count, columns).

    ``draw(rng, size)`` returns ``size`` weight vectors, one weight per row; it is called in
    chunks of about ``CHUNK_ELEMENTS`` weights, whose size depends only on the shapes.
    """
    sums = np.empty((draw_count, rows.shape[1]))
    rows_per_chunk = max(1, CHUNK_ELEMENTS // max(len(rows), 1))
    for start in range(0, draw_count, rows_per_chunk):
        size = min(rows_per_chunk, draw_count - start)
        _product(draw(rng, size), rows, out=sums[start : start + size])
    return sums


def _product(weights: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """``out = weights @ rows``, in pieces small enough that OpenBLAS stays on one thread.

    From about 2**16 weights (or 2**19 multiply-adds) OpenBLAS splits a product over threads
    that spin while they wait; on a busy machine that made the products many times slower
    (measured: bench/README.md, "Figures behind design choices"). Pieces of CHUNK_ELEMENTS
    weights × PRODUCT_COLUMNS columns stay below both limits; for up to 2**16 rows and 8
    metrics that is a single product.
    """
    rows_per_piece = max(1, CHUNK_ELEMENTS // len(weights))
    out[:] = 0
    for first in range(0, len(rows), rows_per_piece):
        for column in range(0, rows.shape[1], PRODUCT_COLUMNS):
            piece = slice(first, first + rows_per_piece)
            columns = slice(column, column + PRODUCT_COLUMNS)
            out[:, columns] += weights[:, piece] @ rows[piece, columns]


def _index_counts(rng: np.random.Generator, size: int, query_count: int) -> np.ndarray:
    """``size`` resamples of ``query_count`` queries: how often each query is drawn."""
    # int32 draws take half the random bits of int64 ones; a chunk holds < 2**31 counts.
    drawn = rng.integers(0, query_count, size=(size, query_count), dtype=np.int32)
    drawn += np.arange(0, size * query_count, query_count, dtype=np.int32)[:, None]
    counts = np.bincount(drawn.ravel(), minlength=size * query_count)  # all resamples at once
    return counts.reshape(size, query_count).astype(np.float64)


def _multinomial_counts(
    rng: np.random.Generator, size: int, multiplicity: np.ndarray
) -> np.ndarray:
    """``size`` resamples: how often each distinct row is drawn (multinomial over the rows)."""
    total = multiplicity.sum()
    return rng.multinomial(total, multiplicity / total, size=size).astype(np.float64)


def _coin_flips(rng: np.random.Generator, size: int, row_count: int) -> np.ndarray:
    """``size`` sign flips of ``row_count`` rows: 1 where a row keeps its sign, else 0."""
    random_bytes = rng.integers(0, 256, size=(size, -(-row_count // 8)), dtype=np.uint8)
    return np.unpackbits(random_bytes, axis=1, count=row_count).astype(np.float64)


def _binomial_halves(rng: np.random.Generator, size: int, multiplicity: np.ndarray) -> np.ndarray:
    """``size`` sign flips: how many copies of each distinct row keep their sign."""
    return rng.binomial(multiplicity, 0.5, size=(size, len(multiplicity))).astype(np.float64)


def _percentile_interval(resampled: np.ndarray, confidence: float) -> np.ndarray:
    """[low, high] percentiles of resampled statistics per column: (columns, 2)."""
    zero = np.zeros(resampled.shape[1])
    return Resampled(zero, resampled, zero, zero).interval(confidence)


def _quantile_of_sorted(ordered: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The q-quantile of each column of ``ordered`` (sorted down the rows; ``q`` one level
    per column), interpolated linearly between the order statistics around position
    (n − 1)·q, as ``np.quantile`` does by default (same arithmetic, same figures).
    np.quantile itself is not called: it imports numpy.ma, which an evaluation never needs,
    and takes one level for all columns."""
    last = len(ordered) - 1
    position = last * np.clip(q, 0.0, 1.0)
    below = np.floor(position).astype(np.int64)
    fraction = position - below
    columns = np.arange(ordered.shape[1])
    low, high = ordered[below, columns], ordered[np.minimum(below + 1, last), columns]
    step = high - low
    # numpy's lerp: from the nearer end, so that fraction 1 gives exactly the upper value.
    return np.where(fraction >= 0.5, high - step * (1 - fraction), low + step * fraction)


def _bias(resampled: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """BCa's bias correction z0 per column: the normal quantile of the share of resampled
    means below the estimate (ties count half), kept off 0 and 1."""
    band = TIE_TOLERANCE * np.maximum(np.abs(resampled).max(axis=0), np.abs(estimate))
    below = (resampled < estimate - band).sum(axis=0)
    tied = (np.abs(resampled - estimate) <= band).sum(axis=0)
    count = len(resampled)
    share = np.clip((below + tied / 2) / count, 0.5 / count, 1 - 0.5 / count)
    return _normal_quantile(share)


def _acceleration(matrix: np.ndarray) -> np.ndarray:
    """BCa's acceleration per column from the jackknife of the mean, in closed form.

    Leaving query i out moves the mean by (x̄ − x_i)/(n − 1), so the jackknife's
    Σu³ / (6 (Σu²)^1.5) is Σd³ / (6 (Σd²)^1.5) with d = x − x̄: no loop over queries.
    A column with no spread beyond float noise has none (0).
    """
    deviation = matrix - matrix.mean(axis=0)
    spread = (deviation**2).sum(axis=0)
    skew = (deviation**3).sum(axis=0)
    noise = len(matrix) * (TIE_TOLERANCE * np.abs(matrix).max(axis=0)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        acceleration = skew / (6 * spread**1.5)
    return np.where(spread > noise, acceleration, 0.0)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF, element-wise (statistics.NormalDist, over few values)."""
    from statistics import NormalDist  # imported here: an evaluation never needs it

    values = np.asarray(x, dtype=np.float64)
    cdf = NormalDist().cdf
    return np.array([cdf(v) if np.isfinite(v) else float(v > 0) for v in values.flat]).reshape(
        values.shape
    )


def _normal_quantile(p: np.ndarray) -> np.ndarray:
    """The standard normal quantile, element-wise; ±inf at 1 and 0."""
    from statistics import NormalDist

    values = np.asarray(p, dtype=np.float64)
    quantile = NormalDist().inv_cdf
    return np.array(
        [quantile(v) if 0 < v < 1 else math.copysign(math.inf, v - 0.5) for v in values.flat]
    ).reshape(values.shape)


# --- validation ----------------------------------------------------------------------------


def _paired_deltas(baseline: ArrayLike, candidate: ArrayLike) -> tuple[np.ndarray, bool]:
    """candidate − baseline per query, after checking that the rows pair up."""
    # pandas inputs (told apart by their index, without importing pandas) must pair up.
    indexes = [getattr(values, "index", None) for values in (baseline, candidate)]
    if all(hasattr(index, "equals") for index in indexes) and not indexes[0].equals(indexes[1]):
        raise ValueError("baseline and candidate must list the same queries in the same order")
    before, one_dimensional = per_query_matrix(baseline, "baseline")
    after, _ = per_query_matrix(candidate, "candidate")
    if np.shape(baseline) != np.shape(candidate):
        raise ValueError(
            f"baseline and candidate must have the same shape (one row per query), got "
            f"{np.shape(baseline)} and {np.shape(candidate)}"
        )
    return after - before, one_dimensional


def _check_resampling(
    n_resamples: int, confidence: float, method: str, methods: tuple[str, ...] = METHODS
) -> None:
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if method not in methods:
        raise ValueError(f"method must be one of {', '.join(methods)}, got {method!r}")
    check_confidence(confidence)
