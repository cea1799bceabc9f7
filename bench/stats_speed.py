"""Time the resampling statistics of eval/stats.py on seeded synthetic per-query metrics.

The target (bench/README.md): 10,000 paired resamples over 10,000 queries in well under a second.
Two kinds of per-query values are timed, because resampling cost depends on them:

- first-hit labels: every metric follows from the first relevant rank, so per-query rows take
  a handful of distinct values (resampled as multinomial counts over those rows);
- graded labels: nDCG-like values all distinct (resampled query by query).

For each: the paired bootstrap (10,000 resamples) and the paired randomization test (10,000
sign flips) of one metric and of eight at once, and the dashboard's case, bootstrap CIs of
four metrics over 100,000 queries (1,000 resamples). The bootstrap is timed as BCa, which
the release gate resamples; the reports' default CI, the score interval, resamples nothing
and is timed beside it. Prints the best wall time of --repeat runs, the CPU time of that
run, and the peak memory numpy allocated (tracemalloc, a separate run). The machine's load
average is printed too: timings on a busy machine are slower.

    python bench/stats_speed.py
    python bench/stats_speed.py --queries 10000 --resamples 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from goldset.eval.stats import bootstrap_ci, paired_bootstrap, randomization_test

# Share of queries whose first relevant doc is at rank 1..10, then none in the top 10.
RANK_SHARES = np.array([0.40, 0.15, 0.08, 0.06, 0.04, 0.03, 0.03, 0.02, 0.02, 0.02, 0.15])


def first_hit_metrics(query_count: int, rng: np.random.Generator) -> np.ndarray:
    """Eight metric columns that all follow from the first relevant rank (None = 11)."""
    rank = rng.choice(np.arange(1, 12), size=query_count, p=RANK_SHARES)
    found = rank <= 10
    reciprocal = np.where(found, 1 / rank, 0.0)
    discounted = np.where(found, 1 / np.log2(rank + 1), 0.0)
    columns = [reciprocal, rank == 1, found, ~found, found, found / 10, discounted, rank / 10]
    return np.column_stack(columns).astype(np.float64)


def graded_metrics(query_count: int, rng: np.random.Generator) -> np.ndarray:
    """Eight metric columns of distinct values in [0, 1], as nDCG with graded labels gives."""
    return rng.beta(2, 3, size=(query_count, 8))


def best_of(repeat: int, function: Callable[[], object]) -> tuple[float, float]:
    """Best wall time of ``repeat`` runs, and the CPU time of that run."""
    timings = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        timings.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(timings)


def peak_mib(function: Callable[[], object]) -> float:
    """Peak memory allocated (numpy included) while ``function`` runs, in MiB."""
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--dashboard-queries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    count, resamples = options.queries, options.resamples
    cases = []
    for label, simulate in (("first-hit", first_hit_metrics), ("graded", graded_metrics)):
        baseline, candidate = simulate(count, rng), simulate(count, rng)
        for columns in (1, 8):
            before, after = baseline[:, :columns], candidate[:, :columns]
            cases += [
                (
                    f"paired bootstrap (BCa), {label}, {columns} metric(s)",
                    lambda b=before, a=after: paired_bootstrap(b, a, resamples, method="bca"),
                ),
                (
                    f"paired score interval (default), {label}, {columns} metric(s)",
                    lambda b=before, a=after: paired_bootstrap(b, a),
                ),
                (
                    f"randomization test, {label}, {columns} metric(s)",
                    lambda b=before, a=after: randomization_test(b, a, n_permutations=resamples),
                ),
            ]
        dashboard = simulate(options.dashboard_queries, rng)[:, :4]
        cases.append(
            (
                f"bootstrap CI, {label}, 4 metrics, {options.dashboard_queries:,} queries, 1,000",
                lambda values=dashboard: bootstrap_ci(values, n_resamples=1000, method="bca"),
            )
        )
    print(f"{count:,} queries, {resamples:,} resamples; best of {options.repeat} runs")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'case':<62} {'wall s':>7} {'cpu s':>7} {'peak MiB':>9}")
    for label, function in cases:
        wall, cpu = best_of(options.repeat, function)
        print(f"{label:<62} {wall:7.3f} {cpu:7.3f} {peak_mib(function):9.1f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
