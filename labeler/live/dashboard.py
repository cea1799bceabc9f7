"""The dashboard's figures: one snapshot of a run, its alerts, coverage and throughput."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pandas as pd

from goldset.eval.metrics import DEFAULT_METRICS, Ranking, per_query_values, rank_run
from goldset.eval.readers import Golden, Run
from goldset.eval.report import NO_SLICE, Ranked, build_report
from goldset.labeler.live.figures import (
    BOOTSTRAP,
    HEADLINE,
    SEED,
    first_relevant_histogram,
    first_relevant_ranks,
    report_table,
    unanswerable_shares,
    wide_figures,
    worst_table,
)
from goldset.labeler.live.formats import ALL, finite, share_rows
from goldset.labeler.live.planning import (
    TARGET_HALF_WIDTH,
    CostSummary,
    QueriesNeeded,
    more_queries,
)
from goldset.labeler.live.project import CUTOFF
from goldset.labeler.store import Store

__all__ = [
    "Alert",
    "alerts",
    "APART_GAP",
    "APART_STEP",
    "coverage",
    "Dashboard",
    "dashboard_table",
    "MISS_RATE_LIMIT",
    "moving_apart",
    "Snapshot",
    "snapshot",
    "throughput",
    "UNANSWERABLE_RANGE",
    "WORST",
]

WORST = 15
# The field's rules of thumb for a golden set and a run, which the dashboard's alerts apply.
MISS_RATE_LIMIT = 0.15  # above it: a first-stage recall problem
UNANSWERABLE_RANGE = (0.10, 0.20)  # a golden set should hold some questions with no answer
APART_STEP = 0.01  # MRR@10 and hit@1 each moved at least this much, in opposite directions...
APART_GAP = 0.05  # ...or the gap between them changed by more than this


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


@dataclass(frozen=True)
class Dashboard:
    """What the dashboard shows at one state of the project."""

    snapshot: Snapshot
    coverage: pd.DataFrame
    throughput: pd.DataFrame
    status: dict
    cost: CostSummary


def snapshot(
    golden: Golden,
    run: Run,
    measured: CostSummary | None = None,
    history: Sequence[Mapping] = (),
    *,
    target: float = TARGET_HALF_WIDTH,
    bootstrap: int = BOOTSTRAP,
    seed: int = SEED,
    ranking: Ranking | None = None,
    version: str | None = None,
) -> Snapshot:
    """The dashboard's figures for ``run``: eval's report (default metrics, as ``goldset
    eval``), the headline table with the unanswerable share, first-relevant ranks, the worst
    queries, how many more queries, and the alerts (``history``: the run history).
    ``ranking`` (the run ranked for eval's default metrics) and ``version`` (the golden
    set's) when already known: kept up to date by
    :class:`goldset.labeler.live.incremental.LiveGolden`."""
    if ranking is None:
        ranking = rank_run(golden, run, DEFAULT_METRICS)
    ranked = Ranked(ranking, per_query_values(ranking, DEFAULT_METRICS), version or golden.version)
    report = build_report(
        golden, run, DEFAULT_METRICS, bootstrap=bootstrap, seed=seed, worst=WORST, ranked=ranked
    )
    per_query = report.pop("per_query")
    shares = unanswerable_shares(golden, bootstrap, seed)
    left = int((golden.queries["status"] != "done").sum())
    return Snapshot(
        report=report,
        table=dashboard_table(report, shares),
        wide=wide_figures(report, shares),
        first_relevant=first_relevant_histogram(first_relevant_ranks(golden, run, ranking), golden),
        worst=worst_table(report),
        needed=more_queries(per_query, report, measured, left, target),
        alerts=alerts(report, shares[ALL], [r for r in history if r["run"] == run.name]),
    )


def dashboard_table(report: Mapping, shares: Mapping[str, Mapping]) -> pd.DataFrame:
    """The dashboard's figures per slice (``all`` first): MRR@10, hit@1, hit@10 and the miss
    rate, each with judged@10 beside it, then the unanswerable share (its ``queries`` are the
    done ones). Columns as :func:`report_table`."""
    figures = report_table(report)
    rows = pd.concat([figures[figures["metric"].isin(HEADLINE)], share_rows(shares)])
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


def throughput(
    store: Store,
    hours: int = 24,
    now: datetime | None = None,
    per_hour: Callable[[str], pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Judgements made per hour and annotator over the last ``hours`` hours (UTC), only the
    hours that have some: DataFrame(hour, annotator, judgements), oldest first. ``per_hour``
    counts them from an hour on, as :meth:`Store.judgements_per_hour` (the default) does."""
    now = now or datetime.now(UTC)
    first = (now - timedelta(hours=hours - 1)).replace(minute=0, second=0, microsecond=0)
    counts = (per_hour or store.judgements_per_hour)(first.strftime("%Y-%m-%dT%H"))
    counts["hour"] = pd.to_datetime(counts["hour"], format="%Y-%m-%dT%H", utc=True)
    return counts[["hour", "annotator", "judgements"]]


_PROGRESS_COLUMNS = ("total", "done", "unanswerable", "skipped", "in_progress", "pending")
