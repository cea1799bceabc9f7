"""The figures of one run and of several: report tables, first relevant ranks in a run, the
worst queries, wide tables, changed queries."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

import numpy as np
import pandas as pd

from goldset.eval.metrics import PerQuery
from goldset.eval.ranking import NOT_RANKED, Ranking, rank
from goldset.eval.readers import Golden, Run
from goldset.eval.report import slice_rows, slice_summaries, summarise
from goldset.eval.stats import p_value_text
from goldset.labeler.live.formats import (
    ALL,
    FIGURE_COLUMNS,
    JUDGED,
    UNANSWERABLE,
    figure_row,
    figure_text,
    finite,
    is_rate,
    metric_label,
    value_text,
)
from goldset.labeler.live.project import CUTOFF

__all__ = [
    "BOOTSTRAP",
    "changed_table",
    "CHANGES",
    "exactness_by_run",
    "exactness_by_slice",
    "first_relevant_histogram",
    "first_relevant_ranks",
    "HEADLINE",
    "LABEL_LINK",
    "label_link",
    "orders_lines",
    "paired_table",
    "paired_wide",
    "report_table",
    "runs_table",
    "SEED",
    "unanswerable_shares",
    "wide_figures",
    "worst_table",
]

HEADLINE = ("mrr@10", "hit@1", "hit@10", "miss@10")  # never MRR alone: hit@1 and misses beside it
BOOTSTRAP = 1000  # resamples per CI, as `goldset eval` by default
SEED = 0
LABEL_LINK = "./?query="  # the label page (the app's default page) opening one query


def report_table(report: Mapping) -> pd.DataFrame:
    """A report's figures as one row per slice and metric, judged@10 beside each.

    Columns: slice (``all`` first), metric, value, ci_low, ci_high, queries (answerable
    queries behind the figure) and judged@10 (how much of the top 10 is judged there: the
    rest counts as not relevant). Also the CSV of the metrics report.
    """
    groups = [(ALL, report["queries"]["answerable"], report["metrics"])]
    groups += [
        (name, entry["queries"], entry["metrics"]) for name, entry in report["slices"].items()
    ]
    rows = []
    for slice_name, queries, metrics in groups:
        judged = metrics.get(JUDGED, {}).get("mean")
        for metric, entry in metrics.items():
            if metric != JUDGED:
                rows.append(figure_row(slice_name, metric, entry, queries, judged))
    return pd.DataFrame(rows, columns=[*FIGURE_COLUMNS, JUDGED]).astype({JUDGED: float})


def unanswerable_shares(golden: Golden, bootstrap: int = BOOTSTRAP, seed: int = SEED) -> dict:
    """Share of done queries flagged unanswerable, overall (``all``) and per slice, each
    with its 95% CI: ``{slice: {"queries": n, "mean": ..., "ci95": [...]}}``."""
    done = golden.query_column("status") == "done"
    flags = (~golden.answerable[done]).astype(float)[:, None]
    per_query = PerQuery(golden.query_column("query_id")[done], (UNANSWERABLE,), flags)
    shares = {ALL: {"queries": len(flags), "metrics": summarise(per_query, bootstrap, seed)}}
    if (golden.query_column("slice")[done] != "").any():  # slices among the done queries
        shares.update(slice_summaries(per_query, golden, bootstrap, seed))
    return {
        name: {"queries": e["queries"], **e["metrics"][UNANSWERABLE]} for name, e in shares.items()
    }


def first_relevant_ranks(golden: Golden, run: Run, ranking: Ranking | None = None) -> pd.Series:
    """Each scored query's first relevant rank in ``run`` within its top 10, NaN when none is
    there (:meth:`goldset.eval.ranking.Ranking.first_relevant_within`, as a Series indexed by
    query_id in eval's query order). ``ranking``: the run already ranked (to the top 10 at
    least), when known. A rank in the system's run, not a position on the annotator's screen
    (:func:`goldset.labeler.golden.first_relevant_position`)."""
    if ranking is None:
        ranking = rank(golden, run, top=CUTOFF)
    first = ranking.first_relevant_within(CUTOFF)
    ranks = np.where(first == NOT_RANKED, np.nan, first.astype(np.float64))
    return pd.Series(ranks, index=pd.Index(ranking.query_ids, name="query_id"))


def first_relevant_histogram(first_ranks: pd.Series, golden: Golden) -> pd.DataFrame:
    """How many answerable queries have their first relevant doc at each rank 1..10, or none
    in the top 10, overall and per slice: DataFrame(slice, rank, queries, share).
    ``first_ranks`` is :func:`first_relevant_ranks` of the run."""
    first = first_ranks.to_numpy()
    found = ~np.isnan(first)
    bins = np.full(len(first), CUTOFF, dtype=np.int64)  # the last bin: none in the top 10
    bins[found] = first[found].astype(np.int64) - 1
    query_ids = first_ranks.index.to_numpy(dtype=object)
    groups = {ALL: np.arange(len(first))}
    if len(query_ids) and (golden.query_values("slice", query_ids) != "").any():
        groups |= slice_rows(golden, query_ids)
    order = [str(rank) for rank in range(1, CUTOFF + 1)] + ["none"]
    frames = []
    for name, rows in groups.items():
        counts = np.bincount(bins[rows], minlength=CUTOFF + 1)
        share = counts / counts.sum() if len(rows) else counts.astype(float)
        frames.append(
            pd.DataFrame({"slice": name, "rank": order, "queries": counts, "share": share})
        )
    return pd.concat(frames, ignore_index=True)


def worst_table(report: Mapping) -> pd.DataFrame:
    """The report's worst queries in the report's order (misses first, then the lowest MRR@10,
    ids in natural order: :func:`goldset.eval.report.worst_queries`), with a link opening each
    on the label page: DataFrame(link, query_id, query, slice, first_relevant_rank, mrr@10,
    hit@1)."""
    columns = ["link", "query_id", "query", "slice", "first_relevant_rank", "mrr@10", "hit@1"]
    rows = [
        {
            **worst,
            "link": label_link(worst["query_id"]),
            "first_relevant_rank": worst["first_relevant_rank"] or "none",
        }
        for worst in report["worst"]
    ]
    return pd.DataFrame(rows, columns=columns).astype({"first_relevant_rank": str})


def label_link(query_id: str) -> str:
    """A link (relative to the app) that opens ``query_id`` on the label page. The id is
    URL-encoded, so whatever it holds stays a query parameter value."""
    return LABEL_LINK + urllib.parse.quote(query_id, safe="")


def wide_figures(report: Mapping, shares: Mapping[str, Mapping]) -> pd.DataFrame:
    """The dashboard's per-slice table: one row per slice (``all`` first), the headline
    figures as columns (mean and CI in one cell), the unanswerable share and judged@10
    beside them. Headers in words; cells are text (see :func:`figure_text`)."""
    groups = [(ALL, report["queries"]["answerable"], report["metrics"])]
    groups += [(n, e["queries"], e["metrics"]) for n, e in report["slices"].items()]
    groups += [(name, 0, {}) for name in shares if name not in dict.fromkeys(g[0] for g in groups)]
    rows = []
    for name, queries, metrics in groups:
        row = {"Slice": name, "Answerable queries": queries}
        row |= {metric_label(m): figure_text(metrics.get(m), m) for m in HEADLINE}
        row["Unanswerable"] = figure_text(shares.get(name), UNANSWERABLE)
        row["Judged@10"] = figure_text(metrics.get(JUDGED), JUDGED, ci=False)
        rows.append(row)
    return pd.DataFrame(rows)


def runs_table(reports: Mapping[str, Mapping], slice_name: str = ALL) -> pd.DataFrame:
    """Runs side by side: one row per metric, one column per run (mean and CI in one cell),
    on the whole golden set or one slice; judged@10 (how much of each run's top 10 is judged)
    is the last row, so every figure is read with it."""

    def metrics_of(report: Mapping) -> Mapping:
        if slice_name == ALL:
            return report["metrics"]
        return report["slices"].get(slice_name, {}).get("metrics", {})

    names = list(dict.fromkeys(m for r in reports.values() for m in metrics_of(r)))
    ordered = [m for m in names if m != JUDGED] + [JUDGED]
    rows = [
        {"Metric": metric_label(metric)}
        | {
            run: figure_text(metrics_of(r).get(metric), metric, ci=metric != JUDGED)
            for run, r in reports.items()
        }
        for metric in ordered
    ]
    return pd.DataFrame(rows, columns=["Metric", *reports])


def paired_wide(comparison: Mapping, baseline: str, candidate: str) -> pd.DataFrame:
    """A comparison as one row per slice and metric: the baseline's and the candidate's
    means in columns named after the runs, the delta with its paired 95% CI in one cell (a
    rate's in percentage points: ``-27.3 pts [-72.7, +18.2]``), the p-value and the queries
    compared."""

    def change(value: float, rate: bool) -> str:  # a rate's change in percentage points
        return f"{value * 100:+.1f}" if rate else f"{value:+.3f}"

    rows = []
    for row in paired_table(comparison).itertuples(index=False):
        rate = is_rate(row.metric)
        if finite(row.delta):
            delta = change(row.delta, rate) + (" pts" if rate else "")
        else:
            entry = {"mean": None, "reason": row.reason}
            delta = figure_text(entry, row.metric)  # not measured, and why
        if finite(row.ci_low) and finite(row.ci_high):
            delta += f" [{change(row.ci_low, rate)}, {change(row.ci_high, rate)}]"
        bound = "≥ " if row.bound == "lower" else ""
        rows.append(
            {
                "Slice": row.slice,
                "Metric": metric_label(row.metric),
                baseline: bound + value_text(row.baseline, row.metric),
                candidate: bound + value_text(row.candidate, row.metric),
                "Change [95% CI]": delta,
                "p-value": p_value_text(row.p_value, row.p_floor) if finite(row.p_value) else "–",
                "Queries": row.queries,
            }
        )
    return pd.DataFrame(rows)


CHANGES = {  # the kinds of changed queries, in the order a reviewer reads them
    "new_misses": "new miss",
    "new_hits": "new hit",
    "worse": "moved down",
    "better": "moved up",
}


def changed_table(comparison: Mapping, golden: Golden) -> pd.DataFrame:
    """The queries behind a comparison (``changed_queries`` of eval's comparison, in its
    order; empty when an older result lacks it), new misses first, each with its text and a
    link opening it on the label page: DataFrame(link, change, query_id, query, slice,
    baseline_rank, candidate_rank). A rank is None when no relevant doc is in the top 10."""
    columns = ["link", "change", "query_id", "query", "slice", "baseline_rank", "candidate_rank"]
    texts = golden.queries.set_index("query_id")["query"]
    changed = comparison.get("changed_queries") or {}
    rows = [
        {
            "change": words,
            "query_id": item["query_id"],
            "query": texts.get(item["query_id"], ""),
            "slice": item.get("slice") or "",
            "baseline_rank": item.get("baseline_rank"),
            "candidate_rank": item.get("candidate_rank"),
            "link": label_link(item["query_id"]),
        }
        for kind, words in CHANGES.items()
        for item in changed.get(kind, [])
    ]
    return pd.DataFrame(rows, columns=columns).astype(
        {"baseline_rank": "Int64", "candidate_rank": "Int64"}
    )


def paired_table(comparison: Mapping) -> pd.DataFrame:
    """A comparison's deltas as rows: slice (``all`` first), metric, baseline, candidate,
    delta, ci_low, ci_high (95% CI of the delta), p_value and p_floor (the smallest p-value
    its resamples can show; None when not resampled), queries."""
    groups = [(ALL, None, comparison["metrics"])]
    groups += [(n, e["queries"], e["metrics"]) for n, e in comparison["slices"].items()]
    rows = [
        {
            "slice": name,
            "metric": metric,
            "baseline": entry["baseline"],
            "candidate": entry["candidate"],
            "delta": entry["delta"],
            "ci_low": (entry["ci95"] or [None, None])[0],
            "ci_high": (entry["ci95"] or [None, None])[1],
            "p_value": entry["p_value"],
            "p_floor": entry.get("p_value_floor"),  # a p-value there prints as "< floor"
            "reason": entry.get("reason"),  # why a figure is not measured (first-hit labels)
            "bound": entry.get("bound"),  # "lower": precision@k of first-hit labels
            "queries": queries
            if queries is not None
            else comparison["queries"]["baseline"]["answerable"],
        }
        for name, queries, metrics in groups
        for metric, entry in metrics.items()
    ]
    return pd.DataFrame(rows)


def _exactness_row(summary: Mapping, k: int) -> dict:
    """One summary of eval's exactness (see :mod:`goldset.eval.exactness`) as cells: the exact share
    with its counts, then MRR@k and hit@k over the exact queries and over all (a lower bound,
    marked ≥, where some are not exact)."""
    bound = "≥ " if summary["share"] != 1.0 else ""
    row = {
        f"Exact@{k}": f"{value_text(summary['share'], JUDGED)} ({summary['exact']} of "
        f"{summary['queries']})"
    }
    for spec, entry in summary["figures"].items():
        row[f"{metric_label(spec)} over exact"] = value_text(entry["exact"], spec)
        row[f"{metric_label(spec)} over all"] = bound + value_text(entry["lower_bound"], spec)
    return row


def exactness_by_slice(report: Mapping) -> pd.DataFrame:
    """A report's exact@10 per slice (``all`` first): a row per slice, empty when the labels
    are not first-hit (see :func:`_exactness_row` for the columns)."""
    exactness = report.get("exactness")
    if not exactness:
        return pd.DataFrame()
    groups = {ALL: exactness["all"], **exactness["slices"]}
    return pd.DataFrame(
        [{"Slice": name, **_exactness_row(s, exactness["k"])} for name, s in groups.items()]
    )


def exactness_by_run(reports: Mapping[str, Mapping], slice_name: str = ALL) -> pd.DataFrame:
    """Each run's exact@10 on the whole set or one slice: a row per run with exactness
    (runs on labels that are not first-hit have none), empty when none has."""
    rows = []
    for run, report in reports.items():
        exactness = report.get("exactness")
        if not exactness:
            continue
        summary = exactness["all"] if slice_name == ALL else exactness["slices"].get(slice_name)
        if summary is not None:
            rows.append({"Run": run, **_exactness_row(summary, exactness["k"])})
    return pd.DataFrame(rows)


def orders_lines(reports: Mapping[str, Mapping]) -> list[str]:
    """A sentence per run whose tied scores make its two orders' figures differ (see
    :mod:`goldset.eval.orders`): both MRR@10 and hit@10, by score and in the run's own order."""
    lines = []
    for run, report in reports.items():
        orders = report.get("orders")
        if not orders:
            continue

        def figures(means: Mapping[str, float]) -> str:
            return ", ".join(f"{metric_label(m)} {value_text(v, m)}" for m, v in means.items())

        lines.append(
            f"{run}: {orders['tied_queries']:,} queries hold tied scores whose order changes "
            f"the figures — by score with ties by doc id (trec_eval): "
            f"{figures(orders['score_order'])}; in the run's own order (keep order): "
            f"{figures(orders['own_order'])}."
        )
    return lines
