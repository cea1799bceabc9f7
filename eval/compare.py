"""Two runs compared on the same golden queries: what ``goldset compare`` prints, as a plain dict.

Paired figures per metric and per slice (:func:`paired_summary`), the queries behind the
means (:func:`goldset.eval.changes.changed_queries`) and the release gate's verdict
(:func:`goldset.eval.gate.release_gate`), on the pieces of one run's report
(:mod:`goldset.eval.report`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from goldset.eval import stats
from goldset.eval.changes import changed_queries
from goldset.eval.exactness import EXACT_CUTOFF, exactness_report, inexact_lines
from goldset.eval.gate import MISS, MRR, release_gate
from goldset.eval.metrics import DEFAULT_METRICS, PerQuery
from goldset.eval.readers import Golden, Run
from goldset.eval.report import (
    NO_SLICE,
    Ranked,
    bound_entry,
    first_hit_or_none,
    first_hit_rows,
    json_number,
    measured_groups,
    measured_on,
    metric_cutoffs,
    query_accounting,
    rank_and_score,
    report_notes,
    slice_rows,
)

if TYPE_CHECKING:  # frames in, frames out for the app's callers
    import pandas as pd


def compare_runs(
    golden: Golden,
    baseline: Run,
    candidate: Run,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    thresholds: Mapping[str, float] | None = None,
    gain: str = "linear",
    **options,
) -> dict:
    """Paired comparison of two runs on the same golden queries: what ``goldset compare`` prints.

    Per metric and per slice: both means, the difference (candidate − baseline), its paired
    95% score CI and p-value, and a seeded paired randomization p-value; a figure not
    measured (recall, nDCG on first-hit labels) has no delta. ``changed_queries`` lists the
    queries behind the means (:func:`changed_queries`). ``gate`` holds the release gate's
    verdict (pass, fail or inconclusive) judged on the per-query RR@10 and miss@10 with the same
    resamples and seed (``thresholds`` go to :func:`goldset.eval.gate.release_gate`; ``bootstrap=0``
    judges the means alone); ``options`` to :func:`goldset.eval.ranking.rank`.
    """
    metrics = [*metrics, *(spec for spec in (MRR, MISS) if spec not in metrics)]  # the gate's
    runs = {"baseline": baseline, "candidate": candidate}
    ranked = {
        role: rank_and_score(golden, run, metrics, gain, **options) for role, run in runs.items()
    }
    before, after = ranked["baseline"].per_query, ranked["candidate"].per_query
    first_hit = first_hit_or_none(ranked["baseline"].ranking)
    slices = slice_rows(golden, before.query_ids)
    compared_slices = {
        name: {
            "queries": len(rows),
            "metrics": paired_summary(
                before.take(rows),
                after.take(rows),
                bootstrap,
                seed,
                None if first_hit is None else first_hit[rows],
            ),
        }
        for name, rows in slices.items()
    }
    changed = changed_queries(golden, ranked["baseline"].ranking, ranked["candidate"].ranking)
    gate = _gate(ranked, slices, changed["new_misses"], bootstrap, seed, thresholds)
    exactness = {
        role: exactness_report(side.ranking, side.per_query, EXACT_CUTOFF, slices)
        for role, side in ranked.items()
    }  # a gate read on figures that are lower bounds says so
    inexact = [line for role in runs for line in inexact_lines(runs[role].name, exactness[role])]
    return {
        "baseline": baseline.name,
        "candidate": candidate.name,
        "golden_version": ranked["baseline"].golden_version,
        "queries": {
            role: query_accounting(golden, runs[role], side.ranking, metric_cutoffs(metrics))
            for role, side in ranked.items()
        },
        "metrics": paired_summary(before, after, bootstrap, seed, first_hit),
        "slices": compared_slices,
        "changed_queries": changed,
        "gate": {**gate, "warnings": [*gate["warnings"], *inexact]},
        "exactness": exactness,
        "notes": report_notes(ranked["baseline"].ranking, gain, False),
    }


def _gate(
    ranked: Mapping[str, Ranked],
    slices: Mapping[str, np.ndarray],
    new_misses: Sequence[Mapping[str, object]],
    bootstrap: int,
    seed: int,
    thresholds: Mapping[str, float] | None,
) -> dict:
    """The release gate's verdict (as JSON) on the baseline's and the candidate's per-query
    RR@10 and miss@10, with the comparison's resamples and seed."""
    before, after = ranked["baseline"].per_query, ranked["candidate"].per_query
    columns = [before.metrics.index(MRR), before.metrics.index(MISS)]
    verdict = release_gate(
        before.values[:, columns],
        after.values[:, columns],
        slices,
        n_resamples=bootstrap,
        seed=seed,
        new_misses=_new_misses_by_slice(new_misses, sliced=bool(slices)),
        **(thresholds or {}),
    )
    return verdict.as_json()


def paired_summary(
    baseline: PerQuery | pd.DataFrame,
    candidate: PerQuery | pd.DataFrame,
    bootstrap: int = 1000,
    seed: int = 0,
    first_hit: pd.Series | np.ndarray | None = None,
) -> dict[str, dict[str, object]]:
    """Per metric: both means, the delta, its paired score CI and p-value (not resampled:
    its floor is None), and a seeded paired randomization p-value with its floor, the
    smallest p-value its resamples can show (one there says only that the true one is below).

    As in :func:`goldset.eval.report.summarise`, a metric not measured on some queries (NaN)
    is compared over the others, and with none left has no figures at all (``"reason"`` says
    why); ``"bound": "lower"`` marks precision over first-hit queries (both means are lower
    bounds, so their delta is no bound).
    """
    baseline, candidate = PerQuery.of(baseline), PerQuery.of(candidate)
    first_hit = first_hit_rows(first_hit, baseline)
    before, after = baseline.values, candidate.values
    entries: dict[int, dict[str, object]] = {}
    for columns, rows in measured_groups(before, after):
        old = before[:, columns] if rows.all() else before[rows][:, columns]
        new = after[:, columns] if rows.all() else after[rows][:, columns]
        paired = stats.paired_bootstrap(old, new, n_resamples=bootstrap or 1, seed=seed)
        randomized = stats.randomization_test(old, new, n_permutations=bootstrap or 1, seed=seed)
        for position, column in enumerate(columns):
            entry = {
                "baseline": json_number(old[:, position].mean()) if len(old) else None,
                "candidate": json_number(new[:, position].mean()) if len(new) else None,
                "delta": json_number(paired.delta[position]),
                **_tests(paired, randomized, position, bootstrap),
            }
            entries[column] = measured_on(entry, rows)
    return {
        spec: {**entries[column], **bound_entry(spec, first_hit, before[:, column])}
        for column, spec in enumerate(baseline.metrics)
    }


def _tests(
    paired: stats.PairedBootstrap, randomized: np.ndarray, position: int, bootstrap: int
) -> dict[str, float | None]:
    """A metric's CI, p-values and their floors (all None without resamples)."""
    if not bootstrap:
        return dict.fromkeys(
            ("ci95", "p_value", "p_value_floor", "p_randomization", "p_randomization_floor")
        )
    return {
        "ci95": [json_number(bound) for bound in paired.ci[position]],
        "p_value": json_number(paired.p_value[position]),
        "p_value_floor": json_number(paired.p_floor[position]),
        "p_randomization": json_number(randomized[position]),
        "p_randomization_floor": 1 / (bootstrap + 1),
    }


def _new_misses_by_slice(new_misses: Sequence[Mapping[str, object]], sliced: bool) -> Counter:
    """How many new misses fall in each slice (all under "" when the set has no slices)."""
    if not sliced:
        return Counter({"": len(new_misses)})
    return Counter(item["slice"] or NO_SLICE for item in new_misses)
