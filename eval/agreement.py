"""Inter-annotator agreement: Cohen's kappa, Krippendorff's alpha and plain agreement, with
bootstrap CIs over queries.

Every statistic here is a function of an *additive table* of counts:

- Cohen's kappa and the share of agreeing pairs: the c × c confusion table of two raters
  (rows: the first rater's category, columns: the second's);
- Krippendorff's alpha: the c × c coincidence matrix of all raters.

Tables add up over units, so a bootstrap resample of queries (how often each query is drawn)
is one weighted sum of per-query tables — a matrix product for many resamples at once, with
no Python loop per query. Statistic functions accept a batch of tables, shape (..., c, c).

Undefined values are NaN, never a made-up number: a statistic is undefined when its
denominator is zero — no items, or (for kappa and alpha) no variation at all, as when both
raters used one category only. Chance-corrected agreement cannot be assessed from data with
no variation (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"); the plain
share of agreeing pairs, reported beside it, still shows that they agreed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

LEVELS = ("nominal", "ordinal", "interval")
# Resampled tables held in memory at once: chunk × c² floats stay around 8 MB.
CHUNK_CELLS = 1 << 20

Statistic = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Estimate:
    """One agreement figure: the statistic, the plain agreement, what it rests on, its CI.

    ``value`` and the CI bounds are NaN when undefined (see the module docstring); ``items``
    counts the rated pairs (kappa, plain agreement) or the pairable values (alpha) behind it,
    ``units`` the queries that the bootstrap resamples.
    """

    value: float
    observed_agreement: float
    items: int
    units: int
    ci95: tuple[float, float]

    def as_dict(self) -> dict:
        """A JSON-ready dict; NaN becomes None."""
        return {
            "value": _finite_or_none(self.value),
            "observed_agreement": _finite_or_none(self.observed_agreement),
            "items": self.items,
            "queries": self.units,
            "ci95": [_finite_or_none(bound) for bound in self.ci95],
        }


# --- tables ---------------------------------------------------------------------------------------


def confusion_table(first: ArrayLike, second: ArrayLike, categories: ArrayLike) -> np.ndarray:
    """Counts of (first rater's category, second rater's category) over the items rated by both.

    ``table[i, j]`` = items that the first rater put in ``categories[i]`` and the second in
    ``categories[j]``. A value outside ``categories`` raises ValueError.
    """
    first_codes, second_codes = _codes(first, categories), _codes(second, categories)
    if first_codes.shape != second_codes.shape:
        raise ValueError("both raters must rate the same items (arrays of equal length)")
    size = len(np.asarray(categories))
    flat = np.bincount(first_codes * size + second_codes, minlength=size * size)
    return flat.reshape(size, size).astype(float)


def value_counts(ratings: ArrayLike, categories: ArrayLike) -> np.ndarray:
    """Per unit (row of ``ratings``, one column per rater, NaN = not rated), how many raters
    gave each category: shape (units, c)."""
    matrix = np.atleast_2d(np.asarray(ratings, dtype=float))
    rated = ~np.isnan(matrix)
    codes = _codes(matrix[rated], categories)
    size = len(np.asarray(categories))
    rows = np.nonzero(rated)[0]
    counts = np.zeros((len(matrix), size))
    np.add.at(counts, (rows, codes), 1.0)
    return counts


def coincidences(counts: ArrayLike) -> np.ndarray:
    """Per-unit contributions to Krippendorff's coincidence matrix, shape (units, c, c).

    A unit with m_u ≥ 2 values, n_uc of them in category c, contributes
    ``o_ck = (n_uc · n_uk − [c = k] · n_uc) / (m_u − 1)``: every ordered pair of values from
    different raters, weighted so that each value counts once in total. Units with fewer
    than two values are not pairable and contribute nothing.
    """
    counts = np.asarray(counts, dtype=float)
    pairable = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :]
    pairs -= counts[:, :, None] * np.eye(counts.shape[1])
    weight = np.divide(1.0, pairable - 1.0, out=np.zeros_like(pairable), where=pairable >= 2)
    return pairs * weight[:, None, None]


# --- statistics over (batches of) tables ----------------------------------------------------------


def observed_agreement(table: ArrayLike) -> np.ndarray:
    """Share of agreeing pairs: ``p_o = Σ_i t_ii / Σ_ij t_ij`` (NaN with no items).

    Works on a confusion table and on a coincidence matrix alike.
    """
    table = np.asarray(table, dtype=float)
    total = table.sum(axis=(-2, -1))
    agreeing = np.trace(table, axis1=-2, axis2=-1)
    return _ratio(agreeing, total)


def kappa_from_table(table: ArrayLike) -> np.ndarray:
    """Cohen's kappa of a confusion table: ``κ = (p_o − p_e) / (1 − p_e)``.

    ``p_o`` is the share of agreeing items, ``p_e = Σ_i p_i· · p_·i`` the agreement expected
    if the raters chose independently with their own marginal shares. NaN when ``p_e = 1``
    (both raters used one and the same category only) or when there are no items.
    """
    table = np.asarray(table, dtype=float)
    total = table.sum(axis=(-2, -1))
    shares = table / np.where(total > 0, total, np.nan)[..., None, None]
    observed = np.trace(shares, axis1=-2, axis2=-1)
    expected = np.sum(shares.sum(axis=-1) * shares.sum(axis=-2), axis=-1)
    return _ratio(observed - expected, 1.0 - expected)


def alpha_from_coincidences(
    matrix: ArrayLike, level: str = "ordinal", values: ArrayLike | None = None
) -> np.ndarray:
    """Krippendorff's alpha of a coincidence matrix: ``α = 1 − D_o / D_e``.

    With ``n_c = Σ_k o_ck`` and ``n = Σ_c n_c`` pairable values:
    ``D_o = Σ_ck o_ck δ²_ck / n`` and ``D_e = Σ_ck n_c n_k δ²_ck / (n (n − 1))``, so
    ``α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck``. The squared distance δ² is, by level:

    - nominal: 0 when c = k, else 1;
    - ordinal: ``(Σ_{g=c..k} n_g − (n_c + n_k)/2)²`` — how many values lie between the two
      ranks; computed as the squared difference of the rank midpoints ``S_g − n_g / 2``
      (``S_g`` = cumulative count up to g), which is the same;
    - interval: ``(v_c − v_k)²`` for the category values ``values`` (default 0, 1, 2, ...).

    Categories must be listed in their order. NaN when D_e = 0 (a single value used: no
    variation to assess) or fewer than two pairable values.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    matrix = np.asarray(matrix, dtype=float)
    marginals = matrix.sum(axis=-1)
    total = marginals.sum(axis=-1)
    size = matrix.shape[-1]
    if level == "nominal":
        squared = np.broadcast_to(1.0 - np.eye(size), matrix.shape)
    elif level == "ordinal":
        midpoints = np.cumsum(marginals, axis=-1) - marginals / 2.0
        squared = (midpoints[..., :, None] - midpoints[..., None, :]) ** 2
    else:
        points = np.arange(size, dtype=float) if values is None else np.asarray(values, float)
        squared = np.broadcast_to((points[:, None] - points[None, :]) ** 2, matrix.shape)
    observed = np.sum(matrix * squared, axis=(-2, -1))
    expected = np.sum(marginals[..., :, None] * marginals[..., None, :] * squared, axis=(-2, -1))
    return 1.0 - _ratio((total - 1.0) * observed, np.where(total >= 2, expected, 0.0))


# --- the statistics on raw ratings ----------------------------------------------------------------


def cohen_kappa(first: ArrayLike, second: ArrayLike, categories: ArrayLike | None = None) -> float:
    """Cohen's kappa of two raters over the same items (see :func:`kappa_from_table`).

    >>> cohen_kappa([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
    0.6153846153846154
    """
    categories = _categories(categories, first, second)
    return float(kappa_from_table(confusion_table(first, second, categories)))


def krippendorff_alpha(
    ratings: ArrayLike,
    level: str = "ordinal",
    categories: ArrayLike | None = None,
) -> float:
    """Krippendorff's alpha over ``ratings``: one row per unit, one column per rater, NaN where
    a rater gave no value (see :func:`alpha_from_coincidences` for the formula).

    Any number of raters, missing values allowed; units with fewer than two values are left
    out. ``categories`` (in order) defaults to the distinct values; for ``interval`` they are
    also the values whose differences are measured.

    >>> round(krippendorff_alpha([[0, 1], [1, 1], [0, 0], [0, 1]], level="nominal"), 3)
    0.125
    """
    matrix = np.atleast_2d(np.asarray(ratings, dtype=float))
    categories = _categories(categories, matrix[~np.isnan(matrix)])
    matrix_of_unit = coincidences(value_counts(matrix, categories)).sum(axis=0)
    return float(alpha_from_coincidences(matrix_of_unit, level, categories))


# --- uncertainty ----------------------------------------------------------------------------------


def estimate(
    unit_tables: ArrayLike,
    statistic: Statistic,
    *,
    items: int | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Estimate:
    """An agreement figure with its percentile bootstrap CI over units.

    ``unit_tables`` has shape (units, c, c): each unit's (query's) additive table, e.g. the
    confusion table of its items. The figure is ``statistic`` of their sum; a resample draws
    units with replacement and takes the statistic of the weighted sum. Resamples where the
    statistic is undefined (NaN) are left out of the interval; if all are, the bounds are NaN.
    ``items`` defaults to the table total (pairs rated). Seeded: same inputs, same numbers.
    """
    tables = np.asarray(unit_tables, dtype=float)
    if tables.ndim != 3 or tables.shape[1] != tables.shape[2]:
        raise ValueError(f"unit tables must have shape (units, c, c), got {tables.shape}")
    if n_resamples < 0:
        raise ValueError(f"n_resamples must be >= 0, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    total = tables.sum(axis=0)
    resampled = resampled_statistic(tables, statistic, n_resamples, seed)
    tail = (1.0 - confidence) / 2.0
    if np.isnan(resampled).all():
        bounds = (np.nan, np.nan)
    else:
        low, high = np.nanquantile(resampled, [tail, 1.0 - tail])
        bounds = (float(low), float(high))
    return Estimate(
        value=float(statistic(total)),
        observed_agreement=float(observed_agreement(total)),
        items=int(round(total.sum())) if items is None else items,
        units=len(tables),
        ci95=bounds,
    )


def resampled_statistic(
    unit_tables: np.ndarray, statistic: Statistic, n_resamples: int, seed: int = 0
) -> np.ndarray:
    """``statistic`` on ``n_resamples`` bootstrap resamples of the units, shape (n_resamples,).

    Each resample draws ``units`` units with replacement; its table is the sum of the drawn
    units' tables, computed as (how often each unit was drawn) @ (unit tables). Counting the
    draws with one ``bincount`` per chunk is quicker than a multinomial draw (measured:
    bench/README.md, "Figures behind design choices").
    """
    units = len(unit_tables)
    if units == 0 or n_resamples == 0:
        return np.full(n_resamples, np.nan)
    rng = np.random.default_rng(seed)
    flat = unit_tables.reshape(units, -1)
    chunk = max(1, CHUNK_CELLS // max(units, flat.shape[1]))
    results = []
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        draws = rng.integers(0, units, size=(size, units)) + units * np.arange(size)[:, None]
        weights = np.bincount(draws.ravel(), minlength=size * units).reshape(size, units)
        weights = weights.astype(float)  # a float product runs in BLAS, an int one does not
        tables = (weights @ flat).reshape(size, *unit_tables.shape[1:])
        results.append(statistic(tables))
    return np.concatenate(results)


# --- helpers --------------------------------------------------------------------------------------


def _categories(categories: ArrayLike | None, *values: ArrayLike) -> np.ndarray:
    if categories is not None:
        return np.asarray(categories)
    present = [np.asarray(value).ravel() for value in values]
    return np.unique(np.concatenate(present)) if present else np.array([])


def _codes(values: ArrayLike, categories: ArrayLike) -> np.ndarray:
    """The index of each value in ``categories``; ValueError names a value not among them."""
    values, categories = np.asarray(values).ravel(), np.asarray(categories)
    order = np.argsort(categories, kind="stable")
    positions = np.searchsorted(categories[order], values)
    positions = np.clip(positions, 0, max(len(categories) - 1, 0))
    codes = order[positions] if len(categories) else positions
    unknown = len(categories) == 0 or not np.array_equal(categories[codes], values)
    if len(values) and unknown:
        stray = values[~np.isin(values, categories)][:1]
        raise ValueError(f"value {stray[0]!r} is not one of the categories {categories.tolist()}")
    return codes.astype(np.int64)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is (numerically) zero."""
    numerator, denominator = np.asarray(numerator, float), np.asarray(denominator, float)
    defined = np.abs(denominator) > 1e-12
    safe = np.where(defined, denominator, 1.0)
    return np.where(defined, numerator / safe, np.nan)


def _finite_or_none(value: float) -> float | None:
    return None if value is None or np.isnan(value) else float(value)
