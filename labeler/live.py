"""Live figures for the app: the dashboard, the cost planner and the run comparison.

The one place that turns a project's store into eval inputs and figures. Every metric, CI,
cost and gate verdict is computed by ``eval`` (:func:`eval.report.build_report`,
:func:`eval.report.compare_runs`, :mod:`eval.stats`, :mod:`eval.cost`, :mod:`eval.gate`) on
the store's golden set; this module only composes them and shapes the results into tables.
No SQL (the store's dashboard aggregates read the database in bulk) and no Streamlit (the
pages cache and draw).

>>> store = Store("project.db")                                     # doctest: +SKIP
>>> snap = snapshot(golden_set(store), project_run(store), cost_summary(store))  # doctest: +SKIP
>>> snap.table.query("slice == 'all'")                              # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from eval import cost, gate, stats
from eval.metrics import DEFAULT_METRICS
from eval.readers import Golden, Run, read_run, run_from_frame
from eval.report import NO_SLICE, build_report, compare_runs, slice_summaries, summarise
from labeler.store import Store

CUTOFF = 10  # the k of MRR@k, hit@k, miss@k and judged@k on the dashboard
HEADLINE = ("mrr@10", "hit@1", "hit@10", "miss@10")  # never MRR alone: hit@1 and misses beside it
JUDGED = "judged@10"
UNANSWERABLE = "unanswerable"  # the figure name of the unanswerable share
ALL = "all"  # the row of the whole golden set, beside its slices
CANDIDATES = "candidates"  # the run name of the project's own candidate lists (as `goldset eval`)
BOOTSTRAP = 1000  # resamples per CI, as `goldset eval` by default
SEED = 0
WORST = 15

# The field's operating rules (see the MRR notes in DESIGN.md's background).
MISS_RATE_LIMIT = 0.15  # above it: a first-stage recall problem
UNANSWERABLE_RANGE = (0.10, 0.20)  # a golden set should hold some questions with no answer
APART_STEP = 0.01  # MRR@10 and hit@1 each moved at least this much, in opposite directions...
APART_GAP = 0.05  # ...or the gap between them changed by more than this
HISTORY_MISS_RISE_POINTS = 2.0  # run history: flag a miss-rate rise of more than 2 points
HISTORY_MRR_DROP = 0.05  # run history: flag an MRR@10 drop (overall or a slice) beyond this

REFRESH_SECONDS = 5  # the dashboard reruns this often, showing the newest figures
PACE = 4.0  # after a computation of t seconds, figures wait PACE x t before the next one
QUICK = 0.5  # seconds: computations quicker than this are made while the page waits
TARGET_HALF_WIDTH = 0.05  # the MRR@10 CI half-width that "how many more queries" aims at
DEFAULT_RATE = 60.0  # dollars per annotator hour, the field's figure, until the user sets one
LABEL_LINK = "./?query="  # the label page (the app's default page) opening one query


# --- the project as eval inputs ------------------------------------------------------------


@dataclass(frozen=True)
class ProjectState:
    """A project database at one moment: its path and the store's dashboard marks.

    Figures computed from a state hold until the marks change, so caches key on it.
    """

    path: str
    marks: tuple[tuple[str, object], ...]

    @classmethod
    def of(cls, store: Store) -> ProjectState:
        """The state of ``store``'s database now (one cheap SQL statement)."""
        return cls(str(store.path), tuple(store.dashboard_marks().items()))

    def candidates(self) -> ProjectState:
        """The part of the state that the runs held in the project depend on: the queries,
        the pooled runs and the settings, not the labels."""
        kept = ("queries", "runs", "settings")
        return ProjectState(self.path, tuple((k, v) for k, v in self.marks if k in kept))


def golden_set(store: Store) -> Golden:
    """The project's golden set as eval reads it (the same as ``goldset eval --db``)."""
    queries, judgments = store.golden_frames()
    return Golden(queries, judgments)


def project_run(store: Store, run: str | None = None) -> Run:
    """A run held in the project: its candidate lists (``None``) or a pooled run by name.

    Only each query's top ``CUTOFF + 1`` is read: the @10 metrics, judged@10 and the ties at
    the cutoff depend on nothing below, so the figures equal ``goldset eval --db`` (with
    ``--run`` for a pooled run).
    """
    frame = store.top_ranked_frame(run, CUTOFF + 1)
    return run_from_frame(frame, name=run or CANDIDATES, source=str(store.path))


def project_runs(store: Store) -> list[str | None]:
    """The runs a project holds: ``None`` (its candidate lists), then the pooled runs."""
    return [None, *store.pooled_run_names()]


def golden_at(state: ProjectState) -> Golden:
    """:func:`golden_set` of the project at ``state`` (a pure function of it, to cache)."""
    with Store(state.path) as store:
        return golden_set(store)


def run_at(state: ProjectState, run: str | None = None) -> Run:
    """:func:`project_run` of the project at ``state`` (key it on ``state.candidates()``)."""
    with Store(state.path) as store:
        return project_run(store, run)


# --- figures of one run ---------------------------------------------------------------------


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
                rows.append(_figure_row(slice_name, metric, entry, queries, judged))
    return pd.DataFrame(rows, columns=[*_FIGURE_COLUMNS, JUDGED]).astype({JUDGED: float})


def unanswerable_shares(golden: Golden, bootstrap: int = BOOTSTRAP, seed: int = SEED) -> dict:
    """Share of done queries flagged unanswerable, overall (``all``) and per slice, each
    with its bootstrap 95% CI: ``{slice: {"queries": n, "mean": ..., "ci95": [...]}}``."""
    queries = golden.queries
    done = queries[queries["status"] == "done"].set_index("query_id")
    flags = pd.DataFrame({UNANSWERABLE: (~done["answerable"]).astype(float)})
    shares = {ALL: {"queries": len(flags), "metrics": summarise(flags, bootstrap, seed)}}
    shares.update(slice_summaries(flags, done["slice"], bootstrap, seed))
    return {
        name: {"queries": e["queries"], **e["metrics"][UNANSWERABLE]} for name, e in shares.items()
    }


def first_relevant_ranks(per_query: pd.DataFrame, golden: Golden) -> pd.DataFrame:
    """How many answerable queries have their first relevant doc at each rank 1..10, or none
    in the top 10, overall and per slice: DataFrame(slice, rank, queries, share).

    The rank is read off eval's per-query MRR@10 (rank = 1 / reciprocal rank).
    """
    first = _first_relevant(per_query)
    ranks = np.full(len(first), "none", dtype=object)
    found = ~np.isnan(first)
    ranks[found] = first[found].astype(int).astype(str)
    slices = golden.queries.set_index("query_id")["slice"].reindex(per_query.index)
    labelled = pd.DataFrame({"rank": ranks, "slice": slices.replace("", NO_SLICE).to_numpy()})
    groups = [(ALL, labelled)] + (list(labelled.groupby("slice")) if slices.any() else [])
    order = [str(rank) for rank in range(1, CUTOFF + 1)] + ["none"]
    frames = []
    for name, group in groups:
        counts = group["rank"].value_counts().reindex(order, fill_value=0)
        share = counts / counts.sum() if len(group) else counts.astype(float)
        frames.append(
            pd.DataFrame({"slice": name, "rank": order, "queries": counts, "share": share})
        )
    return pd.concat(frames, ignore_index=True)


def worst_table(report: Mapping) -> pd.DataFrame:
    """The report's worst queries (misses first), with a link opening each on the label page:
    DataFrame(link, query_id, query, slice, first_relevant_rank, mrr@10, hit@1)."""
    columns = ["link", "query_id", "query", "slice", "first_relevant_rank", "mrr@10", "hit@1"]
    rows = [
        {
            **worst,
            "link": label_link(worst["query_id"]),
            "first_relevant_rank": worst["first_relevant_rank"] or "none",
        }
        for worst in report["worst"]
    ]
    frame = pd.DataFrame(rows, columns=columns).astype({"first_relevant_rank": str})
    # Misses first (MRR@10 0), then the lowest MRR@10; ids in numeric order (q22 before q219).
    return frame.sort_values(
        ["mrr@10", "query_id"],
        key=lambda column: id_order(column) if column.name == "query_id" else column,
        kind="stable",
        ignore_index=True,
    )


def label_link(query_id: str) -> str:
    """A link (relative to the app) that opens ``query_id`` on the label page. The id is
    URL-encoded, so whatever it holds stays a query parameter value."""
    return LABEL_LINK + urllib.parse.quote(query_id, safe="")


# --- how figures are written: one format for each kind, on every page -----------------------

NOT_MEASURED = "not measured (first-hit labels)"  # recall@k / nDCG@k of first-hit labels
UNMEASURABLE = ("recall@", "ndcg@")  # metrics first-hit labels cannot measure
RATES = ("hit@", "miss@", "judged@")  # shares, shown in percent (as the unanswerable share)
METRIC_WORDS = {"mrr": "MRR", "ndcg": "nDCG", "miss": "miss rate", "judged": "judged"}


def is_rate(metric: str) -> bool:
    """Whether a figure is a share (hit, miss, judged, unanswerable), shown in percent."""
    return metric.startswith(RATES) or metric == UNANSWERABLE


def metric_label(metric: str) -> str:
    """A metric's name in words: ``mrr@10`` → ``MRR@10``, ``miss@10`` → ``miss rate@10``."""
    if metric == UNANSWERABLE:
        return "unanswerable share"
    name, at, cutoff = metric.partition("@")
    return METRIC_WORDS.get(name, name) + at + cutoff


def value_text(value: float | None, metric: str) -> str:
    """A figure alone: rates in percent with one decimal, means with three decimals."""
    if not finite(value):
        return "–"
    return f"{value:.1%}" if is_rate(metric) else f"{value:.3f}"


def figure_text(entry: Mapping | None, metric: str, ci: bool = True) -> str:
    """A report's metric entry as one cell: ``0.615 [0.511, 0.720]``, ``45.5% [18.2, 72.7]``
    for a rate, ``≥ 0.412 [...]`` for a
    lower bound (precision@k of first-hit labels), the reason (``not measured (first-hit
    labels)``) when the mean is None for recall@k or nDCG@k, ``–`` when nothing is known."""
    if not entry:
        return "–"
    mean = entry.get("mean")
    if mean is None:
        reason = entry.get("reason") or (NOT_MEASURED if metric.startswith(UNMEASURABLE) else "")
        return reason or "–"
    text = ("≥ " if entry.get("bound") == "lower" else "") + value_text(mean, metric)
    low, high = entry.get("ci95") or (None, None)
    if ci and finite(low) and finite(high):
        # a rate's CI bounds without their % signs, so that wide tables fit: 45.5% [18.2, 72.7]
        bounds = [f"{b:.1%}"[:-1] if is_rate(metric) else f"{b:.3f}" for b in (low, high)]
        text += f" [{bounds[0]}, {bounds[1]}]"
    return text


def duration_text(hours: float | None) -> str:
    """Hours with a sensible precision: ``≈ 12 min`` below one hour, ``≈ 3.4 h`` below ten,
    ``≈ 42 h`` above."""
    if not finite(hours):
        return "–"
    if hours < 1:
        return f"≈ {max(1, round(hours * 60)) if hours > 0 else 0} min"
    return f"≈ {hours:.1f} h" if hours < 10 else f"≈ {hours:,.0f} h"


def id_order(ids: pd.Series) -> pd.Series:
    """A sort key for query ids that orders the numbers inside them as numbers
    (``q2 < q10 < q22 < q219``), for ``sort_values(key=...)``."""
    return ids.astype(str).str.replace(r"\d+", lambda m: m.group().zfill(20), regex=True)


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
                "p-value": "–" if not finite(row.p_value) else f"{row.p_value:.4f}",
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


def changed_queries(comparison: Mapping, golden: Golden) -> pd.DataFrame:
    """The queries behind a comparison (``changed_queries`` of eval's comparison; empty when
    an older result lacks it), new misses first, each with its text and a link opening it on
    the label page: DataFrame(link, change, query_id, query, slice, baseline_rank,
    candidate_rank). A rank is None when no relevant doc is in the top 10."""
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


# --- how many more queries ----------------------------------------------------------------


@dataclass(frozen=True)
class QueriesNeeded:
    """How many more queries the MRR@10 CI needs to reach ± ``target`` (see
    :func:`eval.stats.queries_needed`), and what labelling them costs."""

    target: float
    answerable: int  # answerable done queries now
    half_width: float | None  # of the current MRR@10 CI
    needed: int | None  # answerable queries needed in all; None below 2 labelled
    more: int | None  # answerable queries still to add
    to_label: int | None  # queries to label for them (some turn out unanswerable)
    left: int  # queries of the project not done yet
    cost: cost.Cost | None  # of labelling ``to_label`` queries at the measured pace


def queries_needed(
    per_query: pd.DataFrame,
    report: Mapping,
    measured: CostSummary | None,
    left: int,
    target: float = TARGET_HALF_WIDTH,
) -> QueriesNeeded:
    """From the current per-query MRR@10 variance: answerable queries needed for a CI
    half-width of ``target``, how many more, how many queries to label for them (at the
    current answerable share) and their cost at the measured pace."""
    values = per_query[f"mrr@{CUTOFF}"].to_numpy()
    ci = report["metrics"][f"mrr@{CUTOFF}"]["ci95"]
    half_width = (ci[1] - ci[0]) / 2 if ci and None not in ci else None
    answerable = len(values)
    if answerable < 2:
        return QueriesNeeded(target, answerable, half_width, None, None, None, left, None)
    needed = stats.queries_needed(values, half_width=target)
    more = max(0, needed - answerable)
    share = answerable / (answerable + report["queries"]["unanswerable"])
    to_label = math.ceil(more / share)
    price = None
    if measured is not None and finite(measured.cost.judgements_per_query):
        price = cost.labelling_cost(
            to_label,
            measured.cost.judgements_per_query,
            measured.cost.seconds_per_judgement,
            measured.rate,
            measured.annotators_per_query,
        )
    return QueriesNeeded(target, answerable, half_width, needed, more, to_label, left, price)


# --- the dashboard --------------------------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    """An operating rule that fires: ``rule`` names it, ``message`` says what to look at."""

    rule: str
    message: str


@dataclass(frozen=True)
class Snapshot:
    """Everything the dashboard shows about one run on the golden set, at one moment."""

    report: dict  # build_report's JSON object (what `goldset eval --json` prints)
    table: pd.DataFrame  # report_table, headline metrics, plus the unanswerable share rows
    wide: pd.DataFrame  # wide_figures: the same figures as text, one row per slice
    first_relevant: pd.DataFrame
    worst: pd.DataFrame
    needed: QueriesNeeded
    alerts: list[Alert]


def snapshot(
    golden: Golden,
    run: Run,
    measured: CostSummary | None = None,
    history: Sequence[Mapping] = (),
    *,
    target: float = TARGET_HALF_WIDTH,
    bootstrap: int = BOOTSTRAP,
    seed: int = SEED,
) -> Snapshot:
    """The dashboard's figures for ``run``: eval's report (default metrics, as ``goldset
    eval``), the headline table with the unanswerable share, first-relevant ranks, the worst
    queries, how many more queries, and the alerts (``history``: the run history)."""
    report = build_report(golden, run, DEFAULT_METRICS, bootstrap=bootstrap, seed=seed, worst=WORST)
    per_query = report.pop("per_query")
    shares = unanswerable_shares(golden, bootstrap, seed)
    left = int((golden.queries["status"] != "done").sum())
    return Snapshot(
        report=report,
        table=dashboard_table(report, shares),
        wide=wide_figures(report, shares),
        first_relevant=first_relevant_ranks(per_query, golden),
        worst=worst_table(report),
        needed=queries_needed(per_query, report, measured, left, target),
        alerts=alerts(report, shares[ALL], [r for r in history if r["run"] == run.name]),
    )


def dashboard_table(report: Mapping, shares: Mapping[str, Mapping]) -> pd.DataFrame:
    """The dashboard's figures per slice (``all`` first): MRR@10, hit@1, hit@10 and the miss
    rate, each with judged@10 beside it, then the unanswerable share (its ``queries`` are the
    done ones). Columns as :func:`report_table`."""
    figures = report_table(report)
    rows = pd.concat([figures[figures["metric"].isin(HEADLINE)], _share_rows(shares)])
    order = list(dict.fromkeys([ALL, *report["slices"], *shares]))
    rows["slice"] = pd.Categorical(rows["slice"], order, ordered=True)
    rows = rows.sort_values("slice", kind="stable").reset_index(drop=True)
    return rows.astype({"slice": str})


def alerts(report: Mapping, unanswerable: Mapping, history: Sequence[Mapping] = ()) -> list[Alert]:
    """The field's operating rules on the live figures: miss rate above 15 % (a first-stage
    recall problem), an unanswerable share outside 10–20 %, and MRR@10 and hit@1 moving apart
    between the last two recorded evaluations of the run (``history``, oldest first)."""
    fired = []
    miss = report["metrics"].get(f"miss@{CUTOFF}", {}).get("mean")
    if miss is not None and miss > MISS_RATE_LIMIT:
        fired.append(
            Alert(
                "miss_rate",
                f"Miss rate {miss:.1%} is above {MISS_RATE_LIMIT:.0%}: a first-stage recall "
                f"problem — for {miss:.1%} of answerable queries no relevant document is in "
                f"the top {CUTOFF}. Look at the misses first.",
            )
        )
    share, done = unanswerable["mean"], unanswerable["queries"]
    low, high = UNANSWERABLE_RANGE
    if share is not None and not low <= share <= high:
        fired.append(
            Alert(
                "unanswerable_share",
                f"Unanswerable share {share:.1%} ({round(share * done)} of {done} done queries) "
                f"is outside {low:.0%}–{high:.0%}: a golden set should hold some questions "
                "with no answer, to measure whether the system correctly returns nothing.",
            )
        )
    if len(history) >= 2 and history[-1]["golden_version"] == history[-2]["golden_version"]:
        apart = moving_apart(history[-2]["metrics"], history[-1]["metrics"])
        if apart:
            fired.append(
                Alert("moving_apart", f"Between the last two recorded evaluations, {apart}")
            )
    return fired


def moving_apart(before: Mapping[str, float], after: Mapping[str, float]) -> str | None:
    """Why MRR@10 and hit@1 moved apart from ``before`` to ``after`` (means), or None.

    They move apart when they change in opposite directions (each by at least ``APART_STEP``)
    or when the gap MRR@10 − hit@1 changes by more than ``APART_GAP``: the middle of the
    ranking (ranks 2..10) is changing, which MRR alone hides.
    """
    mrr, hit = f"mrr@{CUTOFF}", "hit@1"
    if any(not finite(figures.get(name)) for figures in (before, after) for name in (mrr, hit)):
        return None
    mrr_change, hit_change = after[mrr] - before[mrr], after[hit] - before[hit]
    opposite = mrr_change * hit_change < 0 and min(abs(mrr_change), abs(hit_change)) >= APART_STEP
    if not opposite and abs(mrr_change - hit_change) <= APART_GAP:
        return None
    return (
        f"MRR@10 moved {mrr_change:+.3f} and hit@1 {hit_change:+.3f}: they are moving apart, "
        "so the middle of the ranking is changing."
    )


# --- coverage and throughput ----------------------------------------------------------------


def coverage(store: Store) -> pd.DataFrame:
    """Queries done / pending / skipped per slice (``all`` first), from the store's counters:
    DataFrame(slice, queries, done, answerable, unanswerable, skipped, in_progress, pending,
    done_share)."""
    per_slice = store.progress()
    rows = [{"slice": name or NO_SLICE, **counts} for name, counts in sorted(per_slice.items())]
    frame = pd.DataFrame(rows, columns=["slice", *_PROGRESS_COLUMNS])
    total = frame[list(_PROGRESS_COLUMNS)].sum().to_frame().T.assign(slice=ALL)
    frame = pd.concat([total, frame] if len(rows) > 1 else [total], ignore_index=True)
    frame = frame.rename(columns={"total": "queries"})
    frame.insert(3, "answerable", frame["done"] - frame["unanswerable"])
    frame["done_share"] = frame["done"] / frame["queries"].where(frame["queries"] > 0)
    return frame[["slice", "queries", "done", "answerable", "unanswerable", "skipped",
                  "in_progress", "pending", "done_share"]]  # fmt: skip


def throughput(store: Store, hours: int = 24, now: datetime | None = None) -> pd.DataFrame:
    """Judgements made per hour and annotator over the last ``hours`` hours (UTC), only the
    hours that have some: DataFrame(hour, annotator, judgements), oldest first."""
    now = now or datetime.now(UTC)
    first = (now - timedelta(hours=hours - 1)).replace(minute=0, second=0, microsecond=0)
    counts = store.judgements_per_hour(since=first.strftime("%Y-%m-%dT%H"))
    counts["hour"] = pd.to_datetime(counts["hour"], format="%Y-%m-%dT%H", utc=True)
    return counts[["hour", "annotator", "judgements"]]


# --- cost ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostSummary:
    """Measured cost so far (:func:`eval.cost.measured_cost`) with what it was computed from."""

    cost: cost.MeasuredCost
    rate: float
    queries_remaining: int  # not done yet (pending, in progress or skipped)
    annotators_per_query: float  # measured overlap: completed passes per done query
    per_annotator: pd.DataFrame  # annotator, judgements, seconds_per_judgement, ...
    current_labels: int = 0  # labels held now, one per annotator and doc (undone ones gone)
    judgements_made: int = 0  # judgement events, undone ones included (their time was spent)

    def as_dict(self) -> dict:
        """The JSON of ``goldset cost --db``: spent, remaining and total (each with seconds,
        hours and dollars), the measured seconds_per_judgement and judgements_per_query, the
        rate, queries_remaining, annotators_per_query and the per-annotator figures."""
        return {
            **self.cost.as_dict(),
            "rate": self.rate,
            "queries_remaining": self.queries_remaining,
            "current_labels": self.current_labels,
            "judgements_made": self.judgements_made,
            "annotators_per_query": self.annotators_per_query,
            "annotators": json.loads(
                self.per_annotator.to_json(orient="records", double_precision=15)
            ),
        }


def cost_summary(store: Store, rate: float = DEFAULT_RATE) -> CostSummary:
    """Hours and dollars spent, remaining and in total from the measured figures: the median
    active seconds per judgement, the mean judged depth of a completed pass, the queries not
    done yet and the measured overlap; also the same per annotator."""
    seconds, depths = store.judgement_seconds(), store.completed_depths()
    progress = store.progress()
    done = sum(counts["done"] for counts in progress.values())
    remaining = sum(counts["total"] for counts in progress.values()) - done
    overlap = max(1.0, len(depths) / done) if done else 1.0
    measured = cost.measured_cost(
        seconds["seconds"], depths["judged_depth"], remaining, rate, overlap
    )
    per_annotator = _per_annotator(seconds, depths, rate)
    labels = store.status()["judgements"]
    return CostSummary(measured, rate, remaining, overlap, per_annotator, labels, len(seconds))


def work_text(summary: CostSummary) -> str:
    """The project's work figures in one line, worded the same on the dashboard, the
    planner, ``goldset status`` and ``goldset cost --db``: current labels, judgements made
    (undone ones included), annotators, median seconds per judgement, mean judged depth per
    completed query and the queries left."""
    people = len(summary.per_annotator)
    seconds, depth = summary.cost.seconds_per_judgement, summary.cost.judgements_per_query
    parts = [
        f"{summary.current_labels:,} current labels",
        f"{summary.judgements_made:,} judgements made (undone ones included) by {people:,} "
        f"annotator{'' if people == 1 else 's'}",
    ]
    if finite(seconds):
        parts.append(f"median {seconds:.1f} s per judgement")
    if finite(depth):
        parts.append(f"mean judged depth {depth:.2f} per done query")
    return " · ".join([*parts, f"{summary.queries_remaining:,} queries left"])


def _per_annotator(seconds: pd.DataFrame, depths: pd.DataFrame, rate: float) -> pd.DataFrame:
    seconds_by = dict(list(seconds.groupby("annotator")["seconds"]))
    depths_by = dict(list(depths.groupby("annotator")["judged_depth"]))
    empty = pd.Series([], dtype=float)
    rows = []
    for name in sorted(seconds_by.keys() | depths_by.keys()):
        theirs, passes = seconds_by.get(name, empty), depths_by.get(name, empty)
        figures = cost.measured_cost(theirs, passes, 0, rate)
        rows.append(
            {
                "annotator": name,
                "judgements": len(theirs),
                "queries_done": len(passes),
                "seconds_per_judgement": figures.seconds_per_judgement,
                "judgements_per_query": figures.judgements_per_query,
                "hours": figures.spent.hours,
                "dollars": figures.spent.dollars,
            }
        )
    return pd.DataFrame(rows, columns=_ANNOTATOR_COLUMNS)


def plans(
    queries: int,
    k: int,
    first_relevant: Sequence[float],
    seconds_per_judgement: float,
    rate: float,
    *,
    annotators_per_query: float = 1.0,
    answerable_share: float = 1.0,
    pool_depth: float | None = None,
    measured_depth: float | None = None,
) -> pd.DataFrame:
    """A plan before labelling (:func:`eval.cost.compare_plans`): first-hit mode against full
    depth k and, given the pool's real size per query, the full pool. DataFrame(plan,
    docs_per_query, hours, dollars).

    Once queries are done, ``measured_depth`` (the mean judged depth of a done query, the
    same figure as the measured cost) prices first-hit mode instead of the depth expected
    from ``first_relevant``: with a pool of several runs an annotator judges until every
    run's first hit is known, deeper than one run's first relevant rank."""
    options = {
        "annotators_per_query": annotators_per_query,
        "answerable_share": answerable_share,
    }
    compared = cost.compare_plans(
        queries, k, first_relevant, seconds_per_judgement, rate, **options
    )
    first_hit = (f"first hit, top {k}", compared.first_hit_depth, compared.first_hit)
    if finite(measured_depth):
        price = cost.labelling_cost(
            queries, measured_depth, seconds_per_judgement, rate, annotators_per_query
        )
        first_hit = (f"first hit, top {k} (measured depth)", measured_depth, price)
    rows = [first_hit, (f"full, top {k}", compared.full_depth, compared.full)]
    if pool_depth is not None:
        pooled = cost.compare_plans(
            queries,
            k,
            first_relevant,
            seconds_per_judgement,
            rate,
            **options,
            full_depth=pool_depth,
        )
        rows.append((f"full pool of the runs, top {k} each", pooled.full_depth, pooled.full))
    return pd.DataFrame(
        [(name, depth, price.hours, price.dollars) for name, depth, price in rows],
        columns=["plan", "docs_per_query", "hours", "dollars"],
    )


def measured_first_relevant(golden: Golden, run: Run) -> np.ndarray:
    """The run's first relevant rank on each answerable done query (NaN when none is in the
    top 10), from eval's per-query MRR@10: what first-hit labelling has cost per query."""
    report = build_report(golden, run, [f"mrr@{CUTOFF}"], bootstrap=0, worst=0)
    return _first_relevant(report["per_query"])


def answerable_share(golden: Golden) -> float | None:
    """The share of done queries that are answerable; None before any query is done."""
    done = golden.queries[golden.queries["status"] == "done"]
    return float(done["answerable"].mean()) if len(done) else None


def runs_to_pool(
    store: Store, pooled: Sequence[str], uploads: Sequence[tuple[str, bytes]] = ()
) -> dict[str, pd.DataFrame]:
    """Results by run name, to size a pool: the project's pooled runs named in ``pooled``
    (their pooled top docs) and uploaded run files given as (file name, bytes)."""
    frames = {name: store.candidate_run_frame(name) for name in pooled}
    for file_name, data in uploads:
        run = read_uploaded_run(file_name, data)
        frames[run.name] = run.results
    return frames


def pool_sizes(runs: Mapping[str, pd.DataFrame], depths: Sequence[int]) -> pd.DataFrame:
    """Docs per query to judge when pooling the runs' top ``depth``, from their real overlap
    (:func:`eval.cost.pool_depth_per_query`), beside depth × systems:
    DataFrame(depth, systems, depth_x_systems, pooled_per_query, overlap_saving)."""
    rows = []
    for depth in depths:
        pooled = cost.pool_depth_per_query(list(runs.values()), depth)
        naive = depth * len(runs)
        rows.append((depth, len(runs), naive, pooled, 1 - pooled / naive))
    return pd.DataFrame(
        rows, columns=["depth", "systems", "depth_x_systems", "pooled_per_query", "overlap_saving"]
    )


# --- keeping the dashboard fresh --------------------------------------------------------


@dataclass(frozen=True)
class Dashboard:
    """What the dashboard shows at one state of the project."""

    snapshot: Snapshot
    coverage: pd.DataFrame
    throughput: pd.DataFrame
    status: dict
    cost: CostSummary


class Refresher:
    """The newest figures of a project, computed again only when the project changed.

    ``compute(state)`` makes the figures of a :class:`ProjectState`. :meth:`get` returns the
    figures already made while the state is unchanged, and also while a changed state comes
    less than ``pace`` × t seconds after the end of the last computation (of t seconds): slow
    figures take at most a share of a core, however often they are asked for. Otherwise it
    computes them again: right away when the last computation took under ``quick`` seconds
    (the caller gets the new figures), else in a background thread while the previous
    figures are served, so that a page showing them never waits for a slow computation.
    One computation at a time; safe to share between threads.
    """

    def __init__(self, compute, *, pace: float = PACE, quick: float = QUICK, clock=time.monotonic):
        self._compute, self._pace, self._quick, self._clock = compute, pace, quick, clock
        self._latest: tuple | None = None  # (state, figures, seconds taken, next due time)
        self._computing = threading.Lock()
        self._error: BaseException | None = None

    def get(self, state: ProjectState):
        """The figures for ``state``, or the previous ones (see the class docstring)."""
        error, self._error = self._error, None
        if error is not None:  # the last background computation failed: say so once
            raise error
        latest = self._latest
        if latest is not None and (latest[0] == state or self._clock() < latest[3]):
            return latest[1]
        if latest is not None and latest[2] >= self._quick:
            if self._computing.acquire(blocking=False):
                threading.Thread(target=self._in_background, args=(state,), daemon=True).start()
            return latest[1]
        with self._computing:
            if self._latest is latest:  # nobody computed them meanwhile
                self._update(state)
        return self._latest[1]

    def _update(self, state: ProjectState) -> None:
        started = self._clock()
        figures = self._compute(state)
        finished = self._clock()
        took = finished - started
        self._latest = (state, figures, took, finished + self._pace * took)

    def _in_background(self, state: ProjectState) -> None:
        try:
            self._update(state)
        except Exception as error:  # kept for the next get(), which raises it
            self._error = error
        finally:
            self._computing.release()


def dashboard_refresher(
    path: str,
    run: str | None,
    target: float = TARGET_HALF_WIDTH,
    rate: float = DEFAULT_RATE,
    pace: float = PACE,
) -> Refresher:
    """A :class:`Refresher` of the :class:`Dashboard` of ``run`` in the project at ``path``.

    It keeps the run's top k while the candidates do not change (only imports and pooling
    change them), so a new label costs the golden set, eval's report and the counts only.
    """
    held: dict[ProjectState, Run] = {}

    def compute(state: ProjectState) -> Dashboard:
        with Store(path) as store:
            candidates = state.candidates()
            if candidates not in held:
                held.clear()
                held[candidates] = project_run(store, run)
            measured = cost_summary(store, rate)
            figures = snapshot(
                golden_set(store), held[candidates], measured, store.eval_history(), target=target
            )
            return Dashboard(figures, coverage(store), throughput(store), store.status(), measured)

    return Refresher(compute, pace=pace)


# --- comparing runs -------------------------------------------------------------------------


def evaluate_runs(
    golden: Golden, runs: Sequence[Run], bootstrap: int = BOOTSTRAP, seed: int = SEED
) -> tuple[pd.DataFrame, dict[str, dict]]:
    """Each run against the golden set: one table (a :func:`report_table` per run, with a
    ``run`` column) and the reports by run name."""
    reports = {}
    for run in runs:
        report = build_report(golden, run, DEFAULT_METRICS, bootstrap=bootstrap, seed=seed)
        report.pop("per_query")
        reports[run.name] = report
    tables = [report_table(report).assign(run=name) for name, report in reports.items()]
    table = pd.concat(tables, ignore_index=True) if tables else report_table(_EMPTY_REPORT)
    return table[["run", *_FIGURE_COLUMNS, JUDGED]], reports


def compare_pair(
    golden: Golden, baseline: Run, candidate: Run, bootstrap: int = BOOTSTRAP, seed: int = SEED
) -> dict:
    """The paired comparison of two runs, as ``goldset compare --json`` prints it."""
    return compare_runs(
        golden, baseline, candidate, DEFAULT_METRICS, bootstrap=bootstrap, seed=seed
    )


def paired_table(comparison: Mapping) -> pd.DataFrame:
    """A comparison's deltas as rows: slice (``all`` first), metric, baseline, candidate,
    delta, ci_low, ci_high (paired bootstrap 95% CI of the delta), p_value, queries."""
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


def read_uploaded_run(file_name: str, data: bytes) -> Run:
    """Read a run file uploaded from the browser (TREC or JSONL; its name's stem names the
    run). Raises ValueError (an InputError naming the line and field for bad content)."""
    with tempfile.TemporaryDirectory() as folder:
        return read_run(uploaded_file(folder, file_name, data))


def label_the_holes(store: Store, file_name: str, data: bytes, depth: int = CUTOFF) -> dict:
    """Add an uploaded run's unjudged top ``depth`` docs as work for the annotators, through
    the store's pooling (judged docs are reused; only docs not yet in the pool are queued).
    An admin's action. Returns the pooling counts."""
    with tempfile.TemporaryDirectory() as folder:
        return store.pool(None, None, [uploaded_file(folder, file_name, data)], depth)


def record_run(
    store: Store, golden: Golden, run: Run, run_sha256: str, tags: Mapping[str, str]
) -> int:
    """Keep a run's figures in the run history with its tags (as ``goldset eval --record``);
    returns the record id."""
    report = build_report(golden, run, DEFAULT_METRICS, bootstrap=0)
    return store.record_eval(report, run_sha256, tags)


def project_run_sha256(store: Store, run: str) -> str:
    """The SHA-256 that identifies a run held in the project, as ``goldset eval --db
    --record`` computes it: a pooled run's file hash, or (``candidates``) the hash of the
    candidate lists as a CSV of query_id, doc_id, score."""
    if run == CANDIDATES:
        frame = store.candidate_run_frame()
        return hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()
    return next(pooled["sha256"] for pooled in store.status()["runs"] if pooled["name"] == run)


def parse_tags(text: str) -> dict[str, str]:
    """``"model=e5, chunking=512"`` as ``{"model": "e5", "chunking": "512"}``; raises
    ValueError naming a part that is not KEY=VALUE."""
    tags = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        key, separator, value = part.partition("=")
        if not separator or not key.strip():
            raise ValueError(f"tag {part!r} is not KEY=VALUE")
        tags[key.strip()] = value.strip()
    return tags


# --- run history ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """Something that changed between two consecutive records of the run history."""

    record: int
    previous: int
    kind: str  # golden_changed | regression | moving_apart | warning | not_compared
    message: str


def history_table(records: Sequence[Mapping]) -> pd.DataFrame:
    """The run history as one row per record, slice (``all`` and each slice) and metric:
    DataFrame(record, recorded_at, run, golden_version, tags, slice, metric, value)."""
    rows = []
    for record in records:
        tags = ", ".join(f"{key}={value}" for key, value in record["tags"].items())
        groups = [(ALL, record["metrics"]), *record["slices"].items()]
        for slice_name, metrics in groups:
            for metric, value in metrics.items():
                rows.append(
                    (record["id"], record["recorded_at"], record["run"], record["golden_version"],
                     tags, slice_name, metric, value)
                )  # fmt: skip
    columns = ["record", "recorded_at", "run", "golden_version", "tags", "slice", "metric", "value"]
    return pd.DataFrame(rows, columns=columns)


def history_records(records: Sequence[Mapping]) -> pd.DataFrame:
    """The run history as one row per record: record, recorded_at, run, golden_version,
    tags, then each metric's mean overall (``all``) and per slice (``mrr@10 · tail``)."""
    rows = []
    for record in records:
        row = {key: record[key] for key in ("id", "recorded_at", "run", "golden_version")}
        row["tags"] = ", ".join(f"{key}={value}" for key, value in record["tags"].items())
        row.update({f"{metric} · {ALL}": value for metric, value in record["metrics"].items()})
        for name, metrics in record["slices"].items():
            row.update({f"{metric} · {name}": value for metric, value in metrics.items()})
        rows.append(row)
    return pd.DataFrame(rows).rename(columns={"id": "record"})


def history_flags(records: Sequence[Mapping]) -> list[Flag]:
    """Flags between consecutive records (oldest first): a miss-rate rise of more than 2
    points, an MRR@10 drop of more than 0.05 overall or in a slice (eval's release gate with
    those allowances), MRR@10 and hit@1 moving apart, and the gate's warnings. Records of
    different golden-set versions are never compared: that they differ is the flag."""
    flags = []
    for before, after in zip(records, records[1:], strict=False):
        flags += [
            Flag(after["id"], before["id"], kind, text) for kind, text in _changes(before, after)
        ]
    return flags


def _changes(before: Mapping, after: Mapping) -> list[tuple[str, str]]:
    """(kind, message) of what changed from one record to the next (see history_flags)."""
    if before["golden_version"] != after["golden_version"]:
        return [
            (
                "golden_changed",
                f"record #{after['id']} used golden set {after['golden_version']}, record "
                f"#{before['id']} used {before['golden_version']}: not compared",
            )
        ]
    needed = (f"mrr@{CUTOFF}", f"miss@{CUTOFF}")
    if any(not finite(r["metrics"].get(m)) for r in (before, after) for m in needed):
        return [
            ("not_compared", f"record #{after['id']} or #{before['id']} lacks MRR@10 or miss@10")
        ]
    verdict = gate.release_gate(
        before["metrics"],
        after["metrics"],
        before["slices"],
        after["slices"],
        max_miss_rise=HISTORY_MISS_RISE_POINTS,
        max_mrr_drop=HISTORY_MRR_DROP,
        max_slice_drop=HISTORY_MRR_DROP,
    )
    apart = moving_apart(before["metrics"], after["metrics"])
    return [
        *(("regression", reason) for reason in verdict.reasons),
        *([("moving_apart", apart)] if apart else []),
        *(("warning", warning) for warning in verdict.warnings),
    ]


# --- downloads (admin-ish: the pages may gate them) -----------------------------------------


def golden_jsonl(store: Store) -> bytes:
    """The golden set as JSONL, as ``goldset export --format jsonl`` writes it."""
    return _exported(store.write_jsonl)


def golden_qrels(store: Store) -> bytes:
    """The golden set as TREC qrels, as ``goldset export --format qrels`` writes it."""
    return _exported(store.write_qrels)


def report_json(report: Mapping) -> str:
    """A metrics report as JSON (the ``goldset eval --json`` object)."""
    return json.dumps({key: value for key, value in report.items() if key != "per_query"}, indent=2)


def report_csv(report: Mapping) -> str:
    """A metrics report as CSV: one row per slice and metric (see :func:`report_table`)."""
    return report_table(report).to_csv(index=False)


def uploaded_file(folder: str, file_name: str, data: bytes) -> Path:
    """Write uploaded bytes to ``folder`` under the upload's own file name."""
    name = Path(file_name).name  # never a directory from the browser
    if name in ("", ".", ".."):
        raise ValueError(f"{file_name!r} is not a file name")
    path = Path(folder) / name
    path.write_bytes(data)
    return path


def _exported(write) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export"
        write(path)
        return path.read_bytes()


# --- helpers --------------------------------------------------------------------------------

_FIGURE_COLUMNS = ("slice", "metric", "value", "ci_low", "ci_high", "queries")
_PROGRESS_COLUMNS = ("total", "done", "unanswerable", "skipped", "in_progress", "pending")
_ANNOTATOR_COLUMNS = (
    "annotator", "judgements", "queries_done", "seconds_per_judgement", "judgements_per_query",
    "hours", "dollars",
)  # fmt: skip
_EMPTY_REPORT = {"queries": {"answerable": 0}, "metrics": {}, "slices": {}}


def _figure_row(
    slice_name: str, metric: str, entry: Mapping, queries: int, judged: float | None = None
) -> dict:
    low, high = entry["ci95"] or (None, None)
    return {
        "slice": slice_name,
        "metric": metric,
        "value": entry["mean"],
        "ci_low": low,
        "ci_high": high,
        "queries": queries,
        JUDGED: judged,
    }


def _share_rows(shares: Mapping[str, Mapping]) -> pd.DataFrame:
    rows = [
        _figure_row(name, UNANSWERABLE, entry, entry["queries"]) for name, entry in shares.items()
    ]
    return pd.DataFrame(rows, columns=[*_FIGURE_COLUMNS, JUDGED]).astype({JUDGED: float})


def _first_relevant(per_query: pd.DataFrame) -> np.ndarray:
    """Each query's first relevant rank, 1 / its MRR@10 (NaN when none is in the top 10)."""
    reciprocal = per_query[f"mrr@{CUTOFF}"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(reciprocal > 0, np.rint(1 / reciprocal), np.nan)


def finite(value: object) -> bool:
    """Whether ``value`` is a number, neither NaN nor infinite (a figure that can be shown)."""
    return isinstance(value, int | float) and math.isfinite(value)
