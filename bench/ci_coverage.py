"""How often does a 95% CI of a mean over queries hold the true mean? A seeded coverage study.

Per-query values are drawn from known distributions, so the true mean is known; each cell
draws ``--repetitions`` golden sets of ``n`` queries and counts the CIs that hold it, and the
mean width of those CIs. Cells:

- ``rr``: RR@10 where a share of the queries miss (value 0) and the others find their first
  relevant doc at rank 1..10 (value 1/rank), the ranks drawn from ``--hits``: ``shares`` (the
  shares of tests/test_stats.py, 47% at rank 1) or ``geoP`` (geometric over ranks 1..10 with
  success probability P: geo0.3 puts 30% at rank 1, geo0.7 70%);
- ``hit``: hit@10 of the same queries (0 or 1);
- ``delta-``, ``delta=``, ``delta+``: paired deltas, candidate − baseline, of RR@10. The
  candidate keeps half the baseline's ranks and draws the others afresh from the same hit
  ranks, missing 5 points more (worse), as often (equal) or 5 points less (better);
- ``beta``: values that are not skewed, Beta(2, 3) (mean 0.4), for comparison.

Methods: the percentile and BCa bootstrap (eval.stats, ``--resamples`` resamples, each set
its own seed), Student's t, BCa ∪ t (the release gate's CI, t cut to the values' range),
bootstrap-t (studentized: the t quantiles read off the resamples), Agresti-Coull (binary
values only) and the score interval, eval's default (eval.stats.score_interval; for binary
values Wilson's).

    python bench/ci_coverage.py                      # the table of docs/gate.md
    python bench/ci_coverage.py --repetitions 4000 --cells rr,delta-
    python bench/ci_coverage.py --hits geo0.3,geo0.5,geo0.7 --cells rr --queries 50
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import numpy as np

from goldset.eval.stats import resample_means, score_interval, student_t_quantile

RANKS = np.arange(1, 11)
TEST_SHARES = np.array([0.40, 0.15, 0.08, 0.06, 0.04, 0.03, 0.03, 0.02, 0.02, 0.02])
CHUNK = 100  # golden sets resampled together (one seed per chunk; see intervals)
KEPT = 0.5  # share of queries whose rank the candidate keeps from the baseline
CANDIDATE_MISS_SHIFT = {"delta-": 0.05, "delta=": 0.0, "delta+": -0.05}
METHODS = ("percentile", "bca", "t", "bca∪t", "boot-t", "agresti-coull", "score")


def hit_shares(name: str) -> np.ndarray:
    """Shares of ranks 1..10 among the queries that hit: 'shares' or 'geoP'."""
    if name == "shares":
        return TEST_SHARES / TEST_SHARES.sum()
    success = float(name.removeprefix("geo"))
    weights = success * (1 - success) ** (RANKS - 1)
    return weights / weights.sum()


def reciprocal_ranks(
    rng: np.random.Generator, shape: tuple[int, int], miss: float, shares: np.ndarray
) -> tuple[np.ndarray, float]:
    """RR@10 of ``shape`` (queries, golden sets) draws, and its true mean."""
    found = rng.random(shape) >= miss
    ranks = rng.choice(RANKS, size=shape, p=shares)
    return np.where(found, 1 / ranks, 0.0), (1 - miss) * float(shares @ (1 / RANKS))


def sample(
    cell: str, rng: np.random.Generator, shape: tuple[int, int], miss: float, shares: np.ndarray
) -> tuple[np.ndarray, float]:
    """Per-query values of ``shape`` for one kind of cell, and the true mean."""
    if cell == "beta":
        return rng.beta(2, 3, size=shape), 0.4
    baseline, mean = reciprocal_ranks(rng, shape, miss, shares)
    if cell == "rr":
        return baseline, mean
    if cell == "hit":
        return (baseline > 0).astype(np.float64), 1 - miss
    fresh, fresh_mean = reciprocal_ranks(rng, shape, miss + CANDIDATE_MISS_SHIFT[cell], shares)
    kept = rng.random(shape) < KEPT
    return np.where(kept, 0.0, fresh - baseline), (1 - KEPT) * (fresh_mean - mean)


def intervals(values: np.ndarray, seed: int, resamples: int) -> dict[str, np.ndarray]:
    """Every method's 95% CI of each column's mean: {method: (columns, 2)}.

    The columns (golden sets) are resampled together: the same resampled queries for all of
    them, each set's values independent of the others'."""
    count, columns = values.shape
    binary = bool(np.isin(values, (0.0, 1.0)).all())
    mean, spread = values.mean(axis=0), values.std(axis=0, ddof=1)
    error = spread / np.sqrt(count)
    t = student_t_quantile(0.975, count - 1)
    with_squares = np.hstack([values, values**2])
    bca = resample_means(with_squares, resamples, seed, "bca")
    percentile = resample_means(with_squares, resamples, seed, "percentile")
    student = np.c_[mean - t * error, mean + t * error]
    cut = np.clip(student, values.min(axis=0)[:, None], values.max(axis=0)[:, None])
    found = {
        "percentile": percentile.interval(0.95)[:columns],
        "bca": bca.interval(0.95)[:columns],
        "t": student,
        "score": score_interval(values, signed=bool((values < 0).any())),
    }
    found["bca∪t"] = np.c_[
        np.minimum(found["bca"][:, 0], cut[:, 0]), np.maximum(found["bca"][:, 1], cut[:, 1])
    ]
    found["boot-t"] = _bootstrap_t(percentile.resampled, mean, error, count)
    if binary:
        found["agresti-coull"] = _agresti_coull(mean, count)
    return found


def _bootstrap_t(resampled: np.ndarray, mean: np.ndarray, error: np.ndarray, count: int):
    """Studentized bootstrap: mean − q · error, q the 97.5% and 2.5% quantiles of the
    resamples' (mean* − mean) / error*. Resamples with no spread are left out; none left
    gives the mean itself."""
    columns = len(mean)
    means, squares = resampled[:, :columns], resampled[:, columns:]
    errors = np.sqrt(np.maximum(squares - means**2, 0) / (count - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        pivots = np.where(errors > 0, (means - mean) / errors, np.nan)
    usable = ~np.isnan(pivots).all(axis=0)
    high_q, low_q = np.zeros(columns), np.zeros(columns)
    high_q[usable], low_q[usable] = np.nanquantile(pivots[:, usable], [0.975, 0.025], axis=0)
    return np.c_[mean - high_q * error, mean - low_q * error]


def _agresti_coull(share: np.ndarray, count: int) -> np.ndarray:
    """Agresti-Coull: the normal interval around (hits + z²/2) / (n + z²)."""
    z = 1.959963984540054
    adjusted = count + z**2
    centre = (share * count + z**2 / 2) / adjusted
    half = z * np.sqrt(centre * (1 - centre) / adjusted)
    return np.c_[centre - half, centre + half]


def coverage(
    cell: str, count: int, miss: float, shares: np.ndarray, repetitions: int, resamples: int
) -> dict[str, tuple[float, float]]:
    """{method: (share of CIs holding the true mean, their mean width)} for one cell."""
    rng = np.random.default_rng(2027)
    held: dict[str, list[np.ndarray]] = {}
    widths: dict[str, list[np.ndarray]] = {}
    for chunk in range(-(-repetitions // CHUNK)):
        columns = min(CHUNK, repetitions - chunk * CHUNK)
        values, truth = sample(cell, rng, (count, columns), miss, shares)
        for method, bounds in intervals(values, chunk, resamples).items():
            tolerance = 1e-12
            held.setdefault(method, []).append(
                (bounds[:, 0] <= truth + tolerance) & (truth - tolerance <= bounds[:, 1])
            )
            widths.setdefault(method, []).append(bounds[:, 1] - bounds[:, 0])
    return {
        method: (
            float(np.concatenate(held[method]).mean()),
            float(np.concatenate(widths[method]).mean()),
        )
        for method in held
    }


def cells(arguments: argparse.Namespace) -> Iterator[tuple[str, str, float, int]]:
    """(cell, hits, miss share, queries) of the study, in the order printed."""
    for cell in arguments.cells.split(","):
        hits_names = ["-"] if cell in ("beta", "hit") else arguments.hits.split(",")
        misses = [float("nan")] if cell == "beta" else [float(m) for m in arguments.miss.split(",")]
        counts = [int(n) for n in arguments.queries.split(",")]
        if cell == "beta":
            counts = sorted({20, *counts})
        for hits in hits_names:
            for miss in misses:
                for count in counts:
                    yield cell, hits, miss, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="rr,hit,delta-,delta=,delta+,beta")
    parser.add_argument("--hits", default="shares,geo0.3")
    parser.add_argument("--miss", default="0.85,0.9", help="shares of queries that miss")
    parser.add_argument("--queries", default="50,200")
    parser.add_argument("--repetitions", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    arguments = parser.parse_args()
    print(
        f"95% CIs, {arguments.repetitions} golden sets per cell, {arguments.resamples} "
        "resamples: coverage % (mean width)"
    )
    print("| cell | hits | miss | n | " + " | ".join(METHODS) + " |")
    print("|---" * (4 + len(METHODS)) + "|")
    for cell, hits, miss, count in cells(arguments):
        shares = hit_shares("shares" if hits == "-" else hits)
        found = coverage(cell, count, miss, shares, arguments.repetitions, arguments.resamples)
        figures = [f"{found[m][0]:.1%} ({found[m][1]:.3f})" if m in found else "" for m in METHODS]
        shown_miss = "" if np.isnan(miss) else f"{miss:.0%}"
        print(
            f"| {cell} | {hits} | {shown_miss} | {count} | " + " | ".join(figures) + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
