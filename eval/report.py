"""Reports: what ``goldset eval`` and ``goldset compare`` print, as plain dicts.

A report never gives a mean alone: it counts which queries were scored and which were not,
gives hit@1 and the miss rate beside MRR, breaks everything down per slice, lists the worst
queries (misses first) and, where bootstrap resamples are asked for, a 95% CI per figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from eval import gate, stats
from eval.columns import lookup
from eval.metrics import (
    DEFAULT_METRICS,
    NOT_RANKED,
    Ranking,
    parse_metric,
    per_query_frame,
    rank_run,
)
from eval.readers import Golden, Run

NO_SLICE = "(none)"
FIRST_HIT_NOTE = (
    "Some queries were labelled in first-hit mode: MRR and hit@k are exact for the labelled "
    "run; recall, precision and nDCG are lower bounds."
)


def summarise(
    per_query: pd.DataFrame, bootstrap: int = 1000, seed: int = 0
) -> dict[str, dict[str, object]]:
    """Mean of each metric column with its percentile-bootstrap 95% CI (None if bootstrap is 0)."""
    values = per_query.to_numpy(dtype=np.float64)
    means = values.mean(axis=0) if len(values) else np.full(values.shape[1], np.nan)
    intervals = stats.bootstrap_ci(values, n_resamples=bootstrap, seed=seed) if bootstrap else None
    return {
        spec: {
            "mean": _number(means[column]),
            "ci95": None if intervals is None else [_number(bound) for bound in intervals[column]],
        }
        for column, spec in enumerate(per_query.columns)
    }


def slice_groups(slices: pd.Series, query_ids: pd.Index) -> dict[str, pd.Index]:
    """The ``query_ids`` of each slice (``slices`` maps query_id to slice name), sorted by
    slice name; empty when no query has a slice.

    Queries without a slice among sliced ones go to the slice ``"(none)"``.
    """
    if not slices.astype(bool).any():
        return {}
    names = slices.reindex(query_ids).replace("", NO_SLICE).to_numpy()
    return dict(pd.Series(query_ids, index=query_ids).groupby(names, sort=True).groups)


def slice_summaries(
    per_query: pd.DataFrame, slices: pd.Series, bootstrap: int = 1000, seed: int = 0
) -> dict[str, dict[str, object]]:
    """``summarise`` for each slice (``slices`` maps query_id to slice name); empty when no
    query has a slice."""
    return {
        name: {"queries": len(ids), "metrics": summarise(per_query.loc[ids], bootstrap, seed)}
        for name, ids in slice_groups(slices, per_query.index).items()
    }


def worst_queries(
    golden: Golden, ranking: Ranking, per_query: pd.DataFrame, count: int = 10, cutoff: int = 10
) -> list[dict[str, object]]:
    """The ``count`` worst queries: misses (no relevant doc in the top ``cutoff``) first, then
    by lowest reciprocal rank, then by query_id.

    ``per_query`` holds the metrics in the ranking's query order (as ``per_query_frame``
    gives them). ``first_relevant_rank`` is None when no relevant doc was found in the ranks
    evaluated.
    """
    first = ranking.first_relevant_rank
    badness = np.minimum(first, cutoff + 1)  # every miss is as bad as any other
    # Only queries at least as bad as the count-th worst can make the list: sort just those.
    if count < len(badness):
        candidates = np.flatnonzero(badness >= -np.partition(-badness, count)[count])
    else:
        candidates = np.arange(len(badness))
    by_badness = np.lexsort((ranking.query_ids[candidates].astype(str), -badness[candidates]))
    order = candidates[by_badness][:count]
    queries = golden.queries
    info = queries[queries["query_id"].isin(ranking.query_ids[order])].set_index("query_id")
    values = per_query.iloc[order]
    worst = []
    for position, (query_id, row) in zip(order, values.iterrows(), strict=True):
        rank = int(first[position])
        worst.append(
            {
                "query_id": query_id,
                "query": info.at[query_id, "query"],
                "slice": info.at[query_id, "slice"],
                "first_relevant_rank": None if rank == NOT_RANKED else rank,
                **{spec: _number(value) for spec, value in row.items()},
            }
        )
    return worst


def ties_at_cutoffs(ranking: Ranking, cutoffs: Sequence[int]) -> int:
    """Number of queries where the docs at ranks k and k + 1 share a score, for some cutoff k.

    There the tie-break (doc_id descending, as trec_eval) decides what is in the top k.
    """
    next_same_query = np.r_[ranking.query_index[1:] == ranking.query_index[:-1], False]
    next_same_score = np.r_[ranking.score[1:] == ranking.score[:-1], False]
    straddles = np.isin(ranking.rank, list(cutoffs)) & next_same_query & next_same_score
    return int(len(np.unique(ranking.query_index[straddles])))


def query_accounting(golden: Golden, run: Run, ranking: Ranking, cutoffs: Sequence[int]) -> dict:
    """Which golden queries were scored, which were not, and what the run holds beyond them."""
    queries = golden.queries
    done = queries["status"] == "done"
    return {
        "answerable": ranking.query_count,
        "unanswerable": int((done & ~queries["answerable"]).sum()),
        "skipped": int((queries["status"] == "skipped").sum()),
        "pending": int((queries["status"] == "pending").sum()),
        "missing_from_run": _count_absent(ranking.query_ids, run.query_ids),
        "unlabelled_in_run": _count_absent(run.query_ids, queries["query_id"]),
        "ties_at_cutoff": ties_at_cutoffs(ranking, cutoffs),
    }


def abstention(golden: Golden, run: Run, ranking: Ranking, abstain_below: float | None) -> dict:
    """How often the run returned nothing, on unanswerable queries (right) and answerable (wrong).

    A run abstains on a query when it returns no result for it: the query is absent, its
    result list is empty, or (with ``abstain_below``) its best score is below that value.
    """
    queries = golden.queries
    unanswerable = queries.loc[(queries["status"] == "done") & ~queries["answerable"], "query_id"]
    correct = int((~_answered(run, unanswerable.to_numpy(dtype=object), abstain_below)).sum())
    wrong = int((ranking.retrieved == 0).sum())
    return {
        "abstain_below": abstain_below,
        "unanswerable_queries": len(unanswerable),
        "correct_abstentions": correct,
        "correct_abstention_rate": _rate(correct, len(unanswerable)),
        "answerable_queries": ranking.query_count,
        "wrong_abstentions": wrong,
        "wrong_abstention_rate": _rate(wrong, ranking.query_count),
    }


def _answered(run: Run, query_ids: np.ndarray, abstain_below: float | None) -> np.ndarray:
    """Per query id, whether the run returned a result for it (at or above the threshold)."""
    if len(query_ids) == 0:
        return np.zeros(0, dtype=bool)
    row_query = lookup(pa.array(run.query_ids, pa.large_string()), query_ids)[run.query_index]
    kept = row_query >= 0
    if abstain_below is not None:
        kept &= run.scores >= abstain_below
    return np.bincount(row_query[kept], minlength=len(query_ids)) > 0


def _count_absent(values: Sequence[str], among: Sequence[str]) -> int:
    """How many of ``values`` are not in ``among`` (Arrow's hash lookup)."""
    found = pc.is_in(_arrow_ids(values), value_set=_arrow_ids(among))
    return len(values) - pc.sum(found).as_py() if len(values) else 0


def _arrow_ids(ids: Sequence[str]) -> pa.Array:
    """Ids as Arrow strings (without a copy for pandas' Arrow-backed strings)."""
    if isinstance(ids, pd.Series) and hasattr(ids.array, "__arrow_array__"):
        return pa.array(ids.array)
    return pa.array(np.asarray(ids, dtype=object), pa.large_string())


def build_report(
    golden: Golden,
    run: Run,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    rel_threshold: int = 1,
    depth: int | None = None,
    keep_order: bool = False,
    gain: str = "linear",
    abstain_below: float | None = None,
    worst: int = 10,
) -> dict:
    """Evaluate ``run`` on ``golden``: the object that ``goldset eval --json`` prints.

    Keys: ``queries`` (accounting), ``metrics`` (mean and CI), ``slices``, ``worst``,
    ``abstention``, ``notes`` and ``per_query`` (a DataFrame, dropped from the JSON).
    """
    # The golden set's version needs no ranking: it is hashed on a second thread meanwhile.
    with ThreadPoolExecutor(1) as pool:
        version = pool.submit(lambda: golden.version)
        ranking = rank_run(
            golden,
            run,
            metrics,
            rel_threshold=rel_threshold,
            depth=depth,
            keep_order=keep_order,
            abstain_below=abstain_below,
        )
        per_query = per_query_frame(ranking, metrics, gain)
    cutoffs = sorted({cutoff for _, cutoff in map(parse_metric, metrics) if cutoff})
    return {
        "run": run.name,
        "golden_version": version.result(),
        "queries": query_accounting(golden, run, ranking, cutoffs),
        "metrics": summarise(per_query, bootstrap, seed),
        "slices": slice_summaries(per_query, _slices(golden), bootstrap, seed),
        "worst": worst_queries(golden, ranking, per_query, worst),
        "abstention": abstention(golden, run, ranking, abstain_below),
        "notes": _notes(golden, gain),
        "per_query": per_query,
    }


def compare_runs(
    golden: Golden,
    baseline: Run,
    candidate: Run,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    thresholds: Mapping[str, float] | None = None,
    **options,
) -> dict:
    """Paired comparison of two runs on the same golden queries: what ``goldset compare`` prints.

    Per metric and per slice: both means, the difference (candidate − baseline), its paired
    bootstrap 95% CI and p-value, and a seeded paired randomization p-value. ``gate`` holds
    the release-gate verdict (``thresholds`` are passed to :func:`eval.gate.release_gate`).
    """
    for_gate = [spec for spec in ("mrr@10", "miss@10") if spec not in metrics]
    metrics = [*metrics, *for_gate]
    reports = {
        role: build_report(golden, run, metrics, bootstrap=0, worst=0, **options)
        for role, run in (("baseline", baseline), ("candidate", candidate))
    }
    before, after = reports["baseline"]["per_query"], reports["candidate"]["per_query"]
    compared_slices = {
        name: {
            "queries": len(ids),
            "metrics": paired_summary(before.loc[ids], after.loc[ids], bootstrap, seed),
        }
        for name, ids in slice_groups(_slices(golden), before.index).items()
    }
    compared = paired_summary(before, after, bootstrap, seed)
    verdict = gate.release_gate(
        _means(compared, "baseline"),
        _means(compared, "candidate"),
        {name: _means(entry["metrics"], "baseline") for name, entry in compared_slices.items()},
        {name: _means(entry["metrics"], "candidate") for name, entry in compared_slices.items()},
        **(thresholds or {}),
    )
    return {
        "baseline": baseline.name,
        "candidate": candidate.name,
        "golden_version": golden.version,
        "queries": {role: report["queries"] for role, report in reports.items()},
        "metrics": compared,
        "slices": compared_slices,
        "gate": {
            "passed": verdict.passed,
            "reasons": verdict.reasons,
            "warnings": verdict.warnings,
        },
    }


def paired_summary(
    baseline: pd.DataFrame, candidate: pd.DataFrame, bootstrap: int = 1000, seed: int = 0
) -> dict[str, dict[str, object]]:
    """Per metric: both means, the delta, its paired bootstrap CI and p-value, and a
    paired randomization p-value (both seeded)."""
    before = baseline.to_numpy(dtype=np.float64)
    after = candidate.to_numpy(dtype=np.float64)
    paired = stats.paired_bootstrap(before, after, n_resamples=bootstrap or 1, seed=seed)
    randomized = stats.randomization_test(before, after, n_permutations=bootstrap or 1, seed=seed)
    summary = {}
    for column, spec in enumerate(baseline.columns):
        summary[spec] = {
            "baseline": _number(before[:, column].mean()) if len(before) else None,
            "candidate": _number(after[:, column].mean()) if len(after) else None,
            "delta": _number(paired.delta[column]),
            "ci95": [_number(bound) for bound in paired.ci[column]] if bootstrap else None,
            "p_value": _number(paired.p_value[column]) if bootstrap else None,
            "p_randomization": _number(randomized[column]) if bootstrap else None,
        }
    return summary


def _means(summary: Mapping[str, Mapping[str, object]], role: str) -> dict[str, float]:
    return {spec: entry[role] for spec, entry in summary.items() if entry[role] is not None}


def _slices(golden: Golden) -> pd.Series:
    return golden.queries.set_index("query_id")["slice"]


def _notes(golden: Golden, gain: str) -> list[str]:
    notes = []
    if (golden.queries["mode"] == "first_hit").any():
        notes.append(FIRST_HIT_NOTE)
    if gain == "exp":
        notes.append("nDCG uses exponential gain 2^grade − 1 (trec_eval's default is linear).")
    return notes


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _number(value: float) -> float | None:
    """A JSON-friendly float: NaN (no queries) becomes None."""
    value = float(value)
    return None if np.isnan(value) else value
