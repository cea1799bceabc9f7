"""One run's report: what ``goldset eval`` prints, as a plain dict (two runs compared, what
``goldset compare`` prints, are :mod:`goldset.eval.compare`'s, built on the pieces here).

A report never gives a mean alone: it counts which queries were scored and which were not,
gives hit@1 and the miss rate beside MRR, breaks everything down per slice, lists the worst
queries (misses first) and, where bootstrap resamples are asked for, a 95% CI per figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from goldset.eval.changes import rank_or_none
from goldset.eval.columns import as_strings, lookup, sorted_codes
from goldset.eval.exactness import EXACT_CUTOFF, exactness_report
from goldset.eval.ids import query_id_order
from goldset.eval.metrics import (
    DEFAULT_METRICS,
    LOWER_BOUND_FROM_FIRST_HIT,
    PerQuery,
    Ranking,
    parse_metric,
    per_query_values,
    rank_run,
)
from goldset.eval.orders import two_orders
from goldset.eval.ranking import comparable_scores, same_ids
from goldset.eval.readers import Golden, Run
from goldset.eval.threads import concurrently, worth_threads

if TYPE_CHECKING:  # frames in, frames out for the app's callers; `goldset eval` never loads it
    import pandas as pd


NO_SLICE = "(none)"
NOT_MEASURED = "not measured (first-hit labels)"


class Ranked(NamedTuple):
    """A run ranked on a golden set for some metrics (:func:`~goldset.eval.metrics.rank_run`),
    the metrics' values per query, and the golden set's version (``Golden.version``)."""

    ranking: Ranking
    per_query: PerQuery
    golden_version: str


def rank_and_score(
    golden: Golden, run: Run, metrics: Sequence[str], gain: str = "linear", **options
) -> Ranked:
    """``run`` ranked on ``golden`` for ``metrics`` (``options`` to
    :func:`~goldset.eval.metrics.rank_run`) and their per-query values; the golden set's
    version, which needs no ranking, is hashed meanwhile (on a thread for a large run)."""
    version, (ranking, per_query) = concurrently(
        lambda: golden.version,
        lambda: _scored(golden, run, metrics, gain, **options),
        threads=worth_threads(len(run.query_index)),
    )
    return Ranked(ranking, per_query, version)


def summarise(
    per_query: PerQuery | pd.DataFrame,
    bootstrap: int = 1000,
    seed: int = 0,
    first_hit: pd.Series | np.ndarray | None = None,
) -> dict[str, dict[str, object]]:
    """Mean of each metric column with its 95% score CI (None if bootstrap is 0; see
    :func:`goldset.eval.stats.bootstrap_ci`).

    A NaN value is a figure not measured on that query (recall and nDCG on first-hit labels):
    the column's mean and CI are over the other queries, and the entry says how many
    (``"queries"``) when that is fewer than all; with none, the mean is None and
    ``"reason"`` says why. ``first_hit`` (query_id → bool) marks the queries labelled in
    first-hit mode (or, as an array, each row of ``per_query``): precision over any of them
    is a lower bound (``"bound": "lower"``).
    """
    per_query = PerQuery.of(per_query)
    first_hit = first_hit_rows(first_hit, per_query)
    values = per_query.values
    entries: dict[int, dict[str, object]] = {}
    if bootstrap:
        from goldset.eval.stats import (
            bootstrap_ci,  # loaded only for CIs: a quick eval goes without
        )
    for columns, rows in measured_groups(values):
        measured = values[:, columns] if rows.all() else values[rows][:, columns]
        means = measured.mean(axis=0) if len(measured) else np.full(len(columns), np.nan)
        intervals = bootstrap_ci(measured, n_resamples=bootstrap, seed=seed) if bootstrap else None
        for position, column in enumerate(columns):
            entry = {
                "mean": json_number(means[position]),
                "ci95": None
                if intervals is None
                else [json_number(bound) for bound in intervals[position]],
            }
            entries[column] = measured_on(entry, rows)
    return {
        spec: {**entries[column], **bound_entry(spec, first_hit, values[:, column])}
        for column, spec in enumerate(per_query.metrics)
    }


def first_hit_rows(
    first_hit: pd.Series | np.ndarray | None, per_query: PerQuery
) -> np.ndarray | None:
    """Per row of ``per_query``, whether its query was labelled in first-hit mode (None: none
    was); ``first_hit`` is that array already, or a Series keyed by query_id."""
    if first_hit is None or isinstance(first_hit, np.ndarray):
        return first_hit
    return first_hit.reindex(per_query.query_ids).to_numpy(dtype=bool)


class MeasuredGroup(NamedTuple):
    """Metric columns measured on the same queries: their positions, and those rows (a mask)."""

    columns: list[int]
    rows: np.ndarray


def measured_groups(*matrices: np.ndarray) -> list[MeasuredGroup]:
    """The columns grouped by the rows where they are measured (not NaN in any of
    ``matrices``). Usually one group of all rows; columns of one group are resampled
    together, as :mod:`goldset.eval.stats` expects."""
    measured = np.logical_and.reduce([~np.isnan(matrix) for matrix in matrices])
    groups: dict[bytes, list[int]] = {}
    for column in range(measured.shape[1]):
        groups.setdefault(measured[:, column].tobytes(), []).append(column)
    return [MeasuredGroup(columns, measured[:, columns[0]]) for columns in groups.values()]


def measured_on(entry: dict[str, object], rows: np.ndarray) -> dict[str, object]:
    """The entry, saying which queries it is measured on when not all of them: how many, and
    with none, no figures at all and the reason."""
    count = int(rows.sum())
    if count == len(rows):
        return entry
    if count == 0:
        return {**dict.fromkeys(entry), "queries": 0, "reason": NOT_MEASURED}
    return {**entry, "queries": count}


def bound_entry(spec: str, first_hit: np.ndarray | None, values: np.ndarray) -> dict[str, str]:
    """``{"bound": "lower"}`` for precision counted over any first-hit query, else nothing."""
    if first_hit is None or parse_metric(spec)[0] not in LOWER_BOUND_FROM_FIRST_HIT:
        return {}
    counted = first_hit & ~np.isnan(values)
    return {"bound": "lower"} if counted.any() else {}


def slice_groups(slices: pd.Series, query_ids: pd.Index) -> dict[str, pd.Index]:
    """The ``query_ids`` of each slice (``slices`` maps query_id to slice name), sorted by
    slice name; empty when no query has a slice.

    Queries without a slice among sliced ones go to the slice ``"(none)"``.
    """
    rows = slice_rows(slices, query_ids.to_numpy(dtype=object))
    return {name: query_ids[positions] for name, positions in rows.items()}


def slice_rows(slices: pd.Series | Golden, query_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Positions in ``query_ids`` of each slice's queries, in order, sorted by slice name;
    empty when no query has a slice. ``slices`` maps query_id to slice name (a Series), or
    is the golden set that gives each query's slice.

    Queries without a slice among sliced ones go to the slice ``"(none)"``.
    """
    if isinstance(slices, Golden):
        sliced = (slices.query_column("slice") != "").any()
        names = slices.query_values("slice", query_ids)
    else:
        sliced = slices.astype(bool).any()
        names = slices.reindex(query_ids).to_numpy(dtype=object)
    if not sliced or len(names) == 0:
        return {}
    distinct, group = sorted_codes(np.where(names == "", NO_SLICE, names))
    # A stable sort by group keeps each slice's queries in the order given.
    rows = np.split(np.argsort(group, kind="stable"), np.cumsum(np.bincount(group))[:-1])
    return {str(name): positions for name, positions in zip(distinct, rows, strict=True)}


def slice_summaries(
    per_query: PerQuery | pd.DataFrame,
    slices: pd.Series | Golden,
    bootstrap: int = 1000,
    seed: int = 0,
    first_hit: pd.Series | np.ndarray | None = None,
) -> dict[str, dict[str, object]]:
    """``summarise`` for each slice (``slices`` as in :func:`slice_rows`); empty when no
    query has a slice."""
    per_query = PerQuery.of(per_query)
    first_hit = first_hit_rows(first_hit, per_query)
    return {
        name: {
            "queries": len(rows),
            "metrics": summarise(
                per_query.take(rows),
                bootstrap,
                seed,
                None if first_hit is None else first_hit[rows],
            ),
        }
        for name, rows in slice_rows(slices, per_query.query_ids).items()
    }


def worst_queries(
    golden: Golden,
    ranking: Ranking,
    per_query: PerQuery | pd.DataFrame,
    count: int = 10,
    cutoff: int = 10,
) -> list[dict[str, object]]:
    """The ``count`` worst queries: misses (no relevant doc in the top ``cutoff``) first, then
    by lowest reciprocal rank, then by query_id in natural order (:func:`query_id_order`).

    ``per_query`` holds the metrics in the ranking's query order (as ``per_query_values``
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
    by_badness = np.lexsort((query_id_order(ranking.query_ids[candidates]), -badness[candidates]))
    order = candidates[by_badness][:count]
    per_query = PerQuery.of(per_query)
    query_ids = ranking.query_ids[order]
    texts = golden.query_values("query", query_ids)
    slices = golden.query_values("slice", query_ids)
    return [
        {
            "query_id": query_ids[row],
            "query": texts[row],
            "slice": slices[row],
            "first_relevant_rank": rank_or_none(first[position]),
            **{
                spec: json_number(per_query.values[position, column])
                for column, spec in enumerate(per_query.metrics)
            },
        }
        for row, position in enumerate(order)
    ]


def ties_at_cutoffs(ranking: Ranking, cutoffs: Sequence[int]) -> int:
    """Number of queries where the docs at ranks k and k + 1 share a score, for some cutoff k.

    There the tie-break (doc_id descending, as trec_eval) decides what is in the top k.
    """
    next_same_query = np.r_[ranking.query_index[1:] == ranking.query_index[:-1], False]
    next_same_score = np.r_[ranking.score[1:] == ranking.score[:-1], False]
    straddles = np.isin(ranking.rank, list(cutoffs)) & next_same_query & next_same_score
    # Counted with bincount: np.unique would import numpy.ma, which an evaluation never needs.
    return int(np.count_nonzero(np.bincount(ranking.query_index[straddles])))


def query_accounting(golden: Golden, run: Run, ranking: Ranking, cutoffs: Sequence[int]) -> dict:
    """Which golden queries were scored, which were not, and what the run holds beyond them."""
    status = golden.query_column("status")
    return {
        "answerable": ranking.query_count,
        "unanswerable": len(_unanswerable(golden)),
        "skipped": int((status == "skipped").sum()),
        "pending": int((status == "pending").sum()),
        "missing_from_run": _count_absent(ranking.query_ids, run.query_ids),
        "unlabelled_in_run": _count_absent(run.query_ids, golden.query_column("query_id")),
        "ties_at_cutoff": ties_at_cutoffs(ranking, cutoffs),
    }


def abstention(
    golden: Golden,
    run: Run,
    ranking: Ranking,
    abstain_below: float | None,
    single_precision: bool = False,
) -> dict:
    """How often the run returned nothing, on unanswerable queries (right) and answerable (wrong).

    A run abstains on a query when it returns no result for it: the query is absent, its
    result list is empty, or (with ``abstain_below``) its best score is below that value.
    """
    unanswerable = _unanswerable(golden)
    correct = int((~_answered(run, unanswerable, abstain_below, single_precision)).sum())
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


def _unanswerable(golden: Golden) -> np.ndarray:
    """Ids of the golden set's done queries flagged unanswerable."""
    done = golden.query_column("status") == "done"
    return golden.query_column("query_id")[done & ~golden.answerable]


def _answered(
    run: Run, query_ids: np.ndarray, abstain_below: float | None, single_precision: bool
) -> np.ndarray:
    """Per query id, whether the run returned a result for it (at or above the threshold)."""
    if len(query_ids) == 0:
        return np.zeros(0, dtype=bool)
    row_query = lookup(as_strings(run.query_ids), query_ids)[run.query_index]
    kept = row_query >= 0
    if abstain_below is not None:
        scores = comparable_scores(run.scores, single_precision)
        kept &= scores >= comparable_scores(abstain_below, single_precision)
    return np.bincount(row_query[kept], minlength=len(query_ids)) > 0


def _count_absent(values: Sequence[str], among: Sequence[str]) -> int:
    """How many of ``values`` are not in ``among``."""
    values, among = np.asarray(values, dtype=object), np.asarray(among, dtype=object)
    if len(values) == 0 or same_ids(values, among):  # a run of its golden set, usually
        return 0
    return int(np.count_nonzero(lookup(as_strings(values), among) < 0))


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
    frame: bool = True,
    ranked: Ranked | None = None,
    single_precision: bool = False,
) -> dict:
    """Evaluate ``run`` on ``golden``: the object that ``goldset eval --json`` prints.

    Keys: ``queries`` (accounting), ``metrics`` (mean and CI), ``slices``, ``worst``,
    ``abstention``, ``notes`` and ``per_query`` (a DataFrame, dropped from the JSON; with
    ``frame=False`` a :class:`~eval.metrics.PerQuery` of arrays, which needs no pandas).
    On first-hit labels recall and nDCG are over the full-mode queries only and precision
    is marked a lower bound (see :func:`summarise`); against a golden set that lists only
    relevant docs, judged@k entries say so (``"judged_relevant_only": true``).
    ``ranked``: the run already ranked for ``metrics`` with the same options (as
    :func:`rank_and_score` gives it), when a caller keeps it up to date query by query
    (:mod:`goldset.eval.splice`); then nothing is ranked or hashed here.
    """
    options = dict(rel_threshold=rel_threshold, depth=depth, keep_order=keep_order)
    options["single_precision"] = single_precision  # scores as trec_eval 9 (see rank)
    if ranked is None:
        ranked = rank_and_score(golden, run, metrics, gain, abstain_below=abstain_below, **options)
    ranking, per_query, version = ranked
    first_hit = first_hit_or_none(ranking)
    relevant_only = lists_only_relevant(golden, rel_threshold)
    report = {
        "run": run.name,
        "golden_version": version,
        "queries": query_accounting(golden, run, ranking, metric_cutoffs(metrics)),
        "metrics": summarise(per_query, bootstrap, seed, first_hit),
        "slices": slice_summaries(per_query, golden, bootstrap, seed, first_hit),
        "worst": worst_queries(golden, ranking, per_query, worst),
        "abstention": abstention(golden, run, ranking, abstain_below, single_precision),
        "notes": report_notes(ranking, gain, relevant_only),
        # MRR@10 and hit@10 exact where every doc above the first hit is judged; the figures
        # in both orders of a run whose tied scores make them differ
        "exactness": exactness_report(
            ranking, per_query, EXACT_CUTOFF, slice_rows(golden, per_query.query_ids)
        ),
        "orders": two_orders(
            golden, run, ranking, per_query, abstain_below=abstain_below, **options
        ),
        "per_query": per_query.frame() if frame else per_query,
    }
    if relevant_only:
        for summary in [report["metrics"], *(s["metrics"] for s in report["slices"].values())]:
            for spec, entry in summary.items():
                if parse_metric(spec)[0] == "judged":
                    entry["judged_relevant_only"] = True
    return report


def lists_only_relevant(golden: Golden, rel_threshold: int = 1) -> bool:
    """Whether the golden set judges no doc non-relevant and has no labelling mode, as a BEIR
    ``qrels.tsv`` (or a TREC qrels of relevant pairs only): then judged@k is the share of the
    top k known relevant, not how much of it was labelled."""
    grades = golden.judgment_column("grade")
    judged_not_relevant = (grades >= 0) & (grades < rel_threshold)
    modes = golden.query_column("mode")
    return bool(len(grades) and not judged_not_relevant.any() and (modes == "").all())


def _scored(
    golden: Golden, run: Run, metrics: Sequence[str], gain: str, **options
) -> tuple[Ranking, PerQuery]:
    """The run ranked for ``metrics`` and their per-query values."""
    ranking = rank_run(golden, run, metrics, **options)
    return ranking, per_query_values(ranking, metrics, gain)


def metric_cutoffs(metrics: Sequence[str]) -> list[int]:
    """The cutoffs k named by ``metrics`` (``mrr@10``, ``p@5`` → 5, 10), ascending."""
    return sorted({cutoff for _, cutoff in map(parse_metric, metrics) if cutoff})


def first_hit_or_none(ranking: Ranking) -> np.ndarray | None:
    """Per query of the ranking, labelled in first-hit mode; None when no query was."""
    return ranking.first_hit if ranking.first_hit.any() else None


def first_hit_note(ranking: Ranking) -> str | None:
    """What the figures mean when some scored queries were labelled in first-hit mode."""
    first_hit = int(ranking.first_hit.sum())
    if not first_hit:
        return None
    full = ranking.query_count - first_hit
    where = (
        f"they are given over the {full} queries labelled in full mode only"
        if full
        else "no query was labelled in full mode, so they are not given"
    )
    return (
        f"{first_hit} of the {ranking.query_count} queries were labelled in first-hit mode: "
        "MRR, hit@k and miss@k are exact for the labelled run; precision@k is a lower bound; "
        f"recall@k and nDCG@k are not measured on first-hit labels: {where}."
    )


JUDGED_RELEVANT_ONLY_NOTE = (
    "The golden set lists only relevant documents (as a BEIR qrels.tsv does), none judged "
    "not relevant: judged@k is the share of the top k known to be relevant, not how much of "
    "it was labelled."
)


def report_notes(ranking: Ranking, gain: str, relevant_only: bool) -> list[str]:
    """The report's notes on what its figures mean: first-hit labels, a golden set of relevant
    docs only (``relevant_only``), exponential gain."""
    notes = [note] if (note := first_hit_note(ranking)) else []
    if relevant_only:
        notes.append(JUDGED_RELEVANT_ONLY_NOTE)
    if gain == "exp":
        notes.append("nDCG uses exponential gain 2^grade − 1 (trec_eval's default is linear).")
    return notes


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def json_number(value: float) -> float | None:
    """A JSON-friendly float of a report: NaN (no queries) becomes None."""
    value = float(value)
    return None if np.isnan(value) else value
