"""Cost planning: how many more queries a CI needs, measured labelling cost, what each
plan (mode, depth, runs pooled) would cost."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from goldset.eval import cost, stats
from goldset.eval.calibration import restricted, with_labels
from goldset.eval.metrics import per_query_frame, rank_run
from goldset.eval.readers import Golden, Run
from goldset.labeler.live.downloads import read_uploaded_run
from goldset.labeler.live.formats import finite
from goldset.labeler.live.incremental import JUDGEMENTS
from goldset.labeler.live.project import CUTOFF
from goldset.labeler.store import Store

__all__ = [
    "answerable_share",
    "cost_summary",
    "CostSummary",
    "DEFAULT_RATE",
    "judge_savings",
    "more_queries",
    "plans",
    "pool_sizes",
    "QueriesNeeded",
    "runs_to_pool",
    "TARGET_HALF_WIDTH",
    "work_text",
]

TARGET_HALF_WIDTH = 0.05  # the MRR@10 CI half-width that "how many more queries" aims at
DEFAULT_RATE = 60.0  # dollars per annotator hour, the field's figure, until the user sets one


@dataclass(frozen=True)
class QueriesNeeded:
    """How many more queries the MRR@10 CI needs to reach ± ``target`` (see
    :func:`goldset.eval.stats.queries_needed`), and what labelling them costs."""

    target: float
    answerable: int  # answerable done queries now
    half_width: float | None  # of the current MRR@10 CI
    needed: int | None  # answerable queries needed in all; None below 2 labelled
    more: int | None  # answerable queries still to add
    to_label: int | None  # queries to label for them (some turn out unanswerable)
    left: int  # queries of the project not done yet
    cost: cost.Cost | None  # of labelling ``to_label`` queries at the measured pace


def more_queries(
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
    if measured is not None and finite(measured.cost.seconds_per_query):
        seconds = to_label * measured.cost.seconds_per_query * measured.annotators_per_query
        price = cost.Cost.of_seconds(seconds, measured.rate)
    return QueriesNeeded(target, answerable, half_width, needed, more, to_label, left, price)


@dataclass(frozen=True)
class CostSummary:
    """Measured cost so far (:func:`goldset.eval.cost.measured_cost`) with what it was computed
    from."""

    cost: cost.MeasuredCost
    rate: float
    queries_remaining: int  # not done yet (pending, in progress or skipped)
    annotators_per_query: float  # measured overlap: completed passes per done query
    per_annotator: pd.DataFrame  # annotator, judgements, queries_done, seconds_per_query, ...
    current_labels: int = 0  # labels held now, one per annotator and doc (undone ones gone)
    judgements_made: int = 0  # judgement events, undone ones included (their time was spent)

    def as_dict(self) -> dict:
        """The JSON of ``goldset cost --db``: spent, remaining and total (each with seconds,
        hours and dollars), the measured seconds_per_query (mean), median_seconds_per_query,
        judgements_per_query (docs read) and seconds_per_judgement, the rate,
        queries_remaining, annotators_per_query and the per-annotator figures."""
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


def cost_summary(
    store: Store,
    rate: float = DEFAULT_RATE,
    *,
    seconds: pd.DataFrame | None = None,
    depths: pd.DataFrame | None = None,
    status: dict | None = None,
) -> CostSummary:
    """Hours and dollars spent, remaining and in total (:func:`goldset.eval.cost.measured_cost`):
    every active second in the log is spent, the queries not done yet are priced at the mean
    seconds of a done pass × the measured overlap; also the same per annotator. ``seconds``,
    ``depths`` and ``status``: :meth:`Store.active_seconds`, :meth:`Store.completed_depths`
    and :meth:`Store.status` when already read (the dashboard keeps them up to date)."""
    if seconds is None:
        seconds = store.active_seconds()
    if depths is None:
        depths = store.completed_depths()
    progress = store.progress()
    done = sum(counts["done"] for counts in progress.values())
    remaining = sum(counts["total"] for counts in progress.values()) - done
    overlap = max(1.0, len(depths) / done) if done else 1.0
    measured = _measured(seconds, depths, remaining, rate, overlap)
    per_annotator = _per_annotator(seconds, depths, rate)
    labels = (status or store.status())["judgements"]
    judgements = int(seconds["action"].isin(JUDGEMENTS).sum())
    return CostSummary(measured, rate, remaining, overlap, per_annotator, labels, judgements)


def work_text(summary: CostSummary) -> str:
    """The project's work figures in one line, worded the same on the dashboard, the
    planner, ``goldset status`` and ``goldset cost --db``: current labels, judgements made
    (undone ones included), annotators, the mean and median active seconds of a done query
    (U/M, search and skip time included), the docs read per done query and the seconds per
    doc read they make, and the queries left."""
    people = len(summary.per_annotator)
    figures = summary.cost
    parts = [
        f"{summary.current_labels:,} current labels",
        f"{summary.judgements_made:,} judgements made (undone ones included) by {people:,} "
        f"annotator{'' if people == 1 else 's'}",
    ]
    if finite(figures.seconds_per_query):
        parts.append(
            f"mean {figures.seconds_per_query:.1f} s per done query, median "
            f"{figures.median_seconds_per_query:.1f} s (U/M, search and skips included)"
        )
    if finite(figures.judgements_per_query):
        read = f"mean {figures.judgements_per_query:.2f} docs read per done query"
        if finite(figures.seconds_per_judgement):
            read += f", {figures.seconds_per_judgement:.1f} s each"
        parts.append(read)
    return " · ".join([*parts, f"{summary.queries_remaining:,} queries left"])


def _measured(
    seconds: pd.DataFrame, depths: pd.DataFrame, remaining: int, rate: float, overlap: float = 1
) -> cost.MeasuredCost:
    """:func:`goldset.eval.cost.measured_cost` of the frames of :meth:`Store.active_seconds` and
    :meth:`Store.completed_depths` (or one annotator's rows of them)."""
    return cost.measured_cost(
        seconds["seconds"], depths["seconds"], depths["docs_read"], remaining, rate, overlap
    )


def _per_annotator(seconds: pd.DataFrame, depths: pd.DataFrame, rate: float) -> pd.DataFrame:
    empty = pd.DataFrame({"action": [], "seconds": [], "docs_read": []})
    seconds_by = dict(list(seconds.groupby("annotator")))
    passes_by = dict(list(depths.groupby("annotator")))
    rows = []
    for name in sorted(seconds_by.keys() | passes_by.keys()):
        theirs, passes = seconds_by.get(name, empty), passes_by.get(name, empty)
        figures = _measured(theirs, passes, 0, rate)
        rows.append(
            {
                "annotator": name,
                "judgements": int(theirs["action"].isin(JUDGEMENTS).sum()),
                "queries_done": len(passes),
                "seconds_per_query": figures.seconds_per_query,
                "median_seconds_per_query": figures.median_seconds_per_query,
                "judgements_per_query": figures.judgements_per_query,
                "seconds_per_judgement": figures.seconds_per_judgement,
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
    """A plan before labelling (:func:`goldset.eval.cost.compare_plans`): first-hit mode against
    full depth k and, given the pool's real size per query, the full pool. DataFrame(plan,
    docs_per_query, hours, dollars).

    Once queries are done, ``measured_depth`` (the mean docs read in a done query, U/M
    queries' included, the same figure as the measured cost) prices first-hit mode instead
    of the depth expected from ``first_relevant``: with a pool of several runs an annotator
    judges until every run's first hit is known, deeper than one run's first relevant rank.
    At the measured seconds per judgement (seconds of a done query / docs read) that row is
    the measured mean seconds of a done query, U/M, search and skip time included."""
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


def judge_savings(
    golden: Golden,
    run: Run,
    judge: pd.DataFrame,
    sample: pd.DataFrame,
    summary: CostSummary,
    target: float = TARGET_HALF_WIDTH,
) -> pd.DataFrame:
    """What a machine judge saves the humans, per slice (``all`` first), for an MRR@10 CI of
    ± ``target``: the human queries and hours needed without the judge and with it (its
    values on every query, the humans' on a random sample: prediction-powered inference).

    Without the judge, n_human is :func:`goldset.eval.stats.queries_needed` on the humans' per-query
    MRR@10 of ``run``; with it, ``n_PPI = n_human × (1 − ρ²)``
    (:func:`goldset.eval.cost.queries_with_judge`), ρ the correlation of the humans' and the judge's
    per-query values on the labelled queries of ``sample`` (:meth:`Store.human_sample`),
    assumed to hold on the queries still to label. Hours at the measured seconds of a done
    query × the measured overlap. DataFrame(slice, sampled, correlation, human_queries,
    with_judge, queries_saved, hours_without, hours_with, hours_saved); a slice with fewer
    than 2 sampled queries scored has no figures (NaN).
    """
    counted = sample.loc[sample["labelled"], "query_id"]
    on_sample = restricted(golden, counted)
    metric = [f"mrr@{CUTOFF}"]
    values = pd.DataFrame(
        {
            labels: per_query_frame(rank_run(which, run, metric), metric)[metric[0]]
            for labels, which in (
                ("human", on_sample),
                ("judge", with_labels(on_sample, judge, "machine")),
            )
        }
    )
    slices = golden.queries.set_index("query_id")["slice"].reindex(values.index).fillna("")
    groups = [("all", values), *((name, values[slices == name]) for name in sorted(set(slices)))]
    seconds = summary.cost.seconds_per_query * summary.annotators_per_query
    rows = [_savings(name, group, target, seconds, summary.rate) for name, group in groups]
    return pd.DataFrame(rows, columns=_SAVINGS_COLUMNS)


def _savings(name: str, values: pd.DataFrame, target: float, seconds: float, rate: float) -> dict:
    """One slice's row of :func:`judge_savings`."""
    row = dict.fromkeys(_SAVINGS_COLUMNS, math.nan) | {"slice": name, "sampled": len(values)}
    if len(values) < 2:
        return row
    rho = cost.judge_human_correlation(values["human"], values["judge"])
    needed = stats.queries_needed(values["human"].to_numpy(), half_width=target)
    with_judge = cost.queries_with_judge(needed, rho)
    without, with_it = (cost.Cost.of_seconds(n * seconds, rate).hours for n in (needed, with_judge))
    return row | {
        "correlation": rho,
        "human_queries": needed,
        "with_judge": with_judge,
        "queries_saved": needed - with_judge,
        "hours_without": without,
        "hours_with": with_it,
        "hours_saved": without - with_it,
    }


_SAVINGS_COLUMNS = (
    "slice", "sampled", "correlation", "human_queries", "with_judge", "queries_saved",
    "hours_without", "hours_with", "hours_saved",
)  # fmt: skip


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
    (:func:`goldset.eval.cost.pool_depth_per_query`), beside depth × systems:
    DataFrame(depth, systems, depth_x_systems, pooled_per_query, overlap_saving)."""
    rows = []
    for depth in depths:
        pooled = cost.pool_depth_per_query(list(runs.values()), depth)
        naive = depth * len(runs)
        rows.append((depth, len(runs), naive, pooled, 1 - pooled / naive))
    return pd.DataFrame(
        rows, columns=["depth", "systems", "depth_x_systems", "pooled_per_query", "overlap_saving"]
    )


_ANNOTATOR_COLUMNS = (
    "annotator", "judgements", "queries_done", "seconds_per_query", "median_seconds_per_query",
    "judgements_per_query", "seconds_per_judgement", "hours", "dollars",
)  # fmt: skip
