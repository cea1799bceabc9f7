"""What a golden set costs to label, in hours and dollars: planned before, measured during.

The model is ``hours = queries × docs judged per query × seconds per judgement × annotators
per query / 3600`` and ``dollars = hours × hourly rate``. The field's worked example:
400 queries × 4 docs × 20 s = 32,000 s = 8.89 h, × $60/h = $533.33.

Before labelling, the docs judged per query depend on the plan: first-hit mode stops at the
first relevant doc (see :func:`expected_first_hit_depth`), full mode judges all k, or the
whole pool when several systems are pooled (see :func:`pool_depth_per_query`). Once labelling
has started, :func:`measured_cost` uses the recorded figures instead of guesses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:  # `goldset cost` never needs pandas; only pooling takes run frames
    import pandas as pd

SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class Cost:
    """Labelling time and its price."""

    seconds: float
    hours: float
    dollars: float

    @classmethod
    def of_seconds(cls, seconds: float, hourly_rate: float) -> Cost:
        """The cost of ``seconds`` of annotator time paid at ``hourly_rate`` per hour."""
        hours = seconds / SECONDS_PER_HOUR
        return cls(seconds=seconds, hours=hours, dollars=hours * hourly_rate)

    def as_dict(self) -> dict[str, float | None]:
        """``{"seconds", "hours", "dollars"}`` as JSON-ready numbers (None when unknown)."""
        return {
            "seconds": _json_number(self.seconds),
            "hours": _json_number(self.hours),
            "dollars": _json_number(self.dollars),
        }


@dataclass(frozen=True)
class PlanComparison:
    """First-hit mode against full-depth labelling of the same queries."""

    first_hit_depth: float  # expected docs judged per query in first-hit mode
    full_depth: float  # docs judged per query in full mode (k, or the pool size)
    first_hit: Cost
    full: Cost


@dataclass(frozen=True)
class MeasuredCost:
    """Cost from the figures recorded so far: spent, still to spend, and the total."""

    spent: Cost
    remaining: Cost
    total: Cost
    seconds_per_query: float  # mean active seconds of a done pass (U/M, search, skips too)
    median_seconds_per_query: float  # shown beside the mean: it understates skewed times
    judgements_per_query: float  # mean docs read in a done pass (by hand or by its verdict)
    seconds_per_judgement: float  # seconds_per_query / judgements_per_query: a plan's price

    def as_dict(self) -> dict[str, object]:
        """The JSON shape of the measured cost (unknown figures become None)."""
        return {
            "spent": self.spent.as_dict(),
            "remaining": self.remaining.as_dict(),
            "total": self.total.as_dict(),
            "seconds_per_query": _json_number(self.seconds_per_query),
            "median_seconds_per_query": _json_number(self.median_seconds_per_query),
            "seconds_per_judgement": _json_number(self.seconds_per_judgement),
            "judgements_per_query": _json_number(self.judgements_per_query),
        }


def labelling_cost(
    queries: float,
    docs_per_query: float,
    seconds_per_judgement: float,
    hourly_rate: float,
    annotators_per_query: float = 1,
) -> Cost:
    """Cost of judging ``docs_per_query`` docs for each of ``queries`` queries.

    ``annotators_per_query`` may be fractional (1.2 = a fifth of the queries labelled twice).

    >>> labelling_cost(400, 4, 20, 60)
    Cost(seconds=32000.0, hours=8.88888888888889, dollars=533.3333333333334)
    """
    _check_non_negative(
        queries=queries,
        docs_per_query=docs_per_query,
        seconds_per_judgement=seconds_per_judgement,
        hourly_rate=hourly_rate,
    )
    _check_annotators(annotators_per_query)
    seconds = float(queries * docs_per_query * seconds_per_judgement * annotators_per_query)
    return Cost.of_seconds(seconds, hourly_rate)


def expected_first_hit_depth(
    first_relevant_ranks: ArrayLike, k: int, answerable_share: float = 1.0
) -> float:
    """Mean docs judged per query in first-hit mode, judging ranks 1..k from the top.

    A query whose first relevant doc is at rank r ≤ k costs r judgements; one with none in
    the top k (rank > k, NaN or missing) costs k, and so does an unanswerable query.
    ``first_relevant_ranks`` describes answerable queries, measured (a labelled set) or
    assumed (any sample of ranks); ``answerable_share`` is the share of queries expected to
    be answerable.

    >>> expected_first_hit_depth([1, 3, float("nan"), 2], k=10)
    4.0
    """
    ranks = np.asarray(first_relevant_ranks, dtype=np.float64)
    if ranks.ndim != 1 or len(ranks) == 0:
        raise ValueError("first_relevant_ranks must be a non-empty list of ranks")
    if (ranks < 1).any():
        raise ValueError("ranks start at 1: first_relevant_ranks holds a rank below 1")
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not 0 <= answerable_share <= 1:
        raise ValueError(f"answerable_share must be between 0 and 1, got {answerable_share!r}")
    depth_if_answerable = np.where(ranks <= k, ranks, k).mean()  # NaN <= k is False: costs k
    return float(answerable_share * depth_if_answerable + (1 - answerable_share) * k)


def compare_plans(
    queries: float,
    k: int,
    first_relevant_ranks: ArrayLike,
    seconds_per_judgement: float,
    hourly_rate: float,
    *,
    annotators_per_query: float = 1,
    answerable_share: float = 1.0,
    full_depth: float | None = None,
) -> PlanComparison:
    """Cost of first-hit mode against full-depth labelling of ``queries`` queries to depth k.

    ``full_depth`` is the docs judged per query in full mode: k for one system, or the mean
    pool size when several systems are pooled (:func:`pool_depth_per_query`).
    """
    first_hit_depth = expected_first_hit_depth(first_relevant_ranks, k, answerable_share)
    full_depth = float(k if full_depth is None else full_depth)
    return PlanComparison(
        first_hit_depth=first_hit_depth,
        full_depth=full_depth,
        first_hit=labelling_cost(
            queries, first_hit_depth, seconds_per_judgement, hourly_rate, annotators_per_query
        ),
        full=labelling_cost(
            queries, full_depth, seconds_per_judgement, hourly_rate, annotators_per_query
        ),
    )


def pool_depth_per_query(
    runs: Sequence[pd.DataFrame], depth: int, *, keep_order: bool = False
) -> float:
    """Mean number of distinct docs per query in the union of the runs' top ``depth``.

    Each run is a frame with ``query_id``, ``doc_id`` and ``score`` columns, ranked as
    trec_eval ranks (score descending, ties by doc_id descending); ``keep_order`` ranks by
    row order instead. The more the systems agree, the smaller the pool: this is the real
    overlap, not ``depth × number of runs``. The mean is over queries that any run answers.
    """
    if not isinstance(depth, int | np.integer) or depth < 1:
        raise ValueError(f"depth must be a positive integer, got {depth!r}")
    if len(runs) == 0:
        raise ValueError("pool_depth_per_query needs at least one run")
    import pandas as pd  # the runs are frames: pandas is loaded already

    tops = [_top_docs(run, depth, keep_order) for run in runs]
    pool = pd.concat(tops, ignore_index=True).drop_duplicates()
    if pool.empty:
        raise ValueError("the runs hold no results to pool")
    return float(pool.groupby("query_id", sort=False).size().mean())


def median_seconds_per_judgement(seconds: ArrayLike) -> float:
    """The median of the active seconds of the judgements made so far (NaN before any): a
    typical judgement's time. It understates skewed times (a capped break every few
    actions), so :func:`measured_cost` prices with means, the median shown beside them."""
    seconds = np.asarray(seconds, dtype=np.float64)
    return float(np.median(seconds)) if len(seconds) else math.nan


def measured_cost(
    active_seconds: ArrayLike,
    seconds_per_query: ArrayLike,
    judgements_per_query: ArrayLike,
    queries_remaining: int,
    hourly_rate: float,
    annotators_per_query: float = 1,
) -> MeasuredCost:
    """Spent, remaining and total cost from the seconds recorded while labelling.

    ``active_seconds`` holds the idle-capped active seconds of every action in the log —
    judgements, U/M verdicts, skips, attachments (the search time before one is in it),
    undone ones too: their sum is the time spent. ``seconds_per_query`` holds the active
    seconds of each done pass (one annotator's work on one query, all its actions), and
    ``judgements_per_query`` the docs that pass read (judged by hand or answered for by its
    verdict), in the same order. With ``n`` done passes, ``a = annotators_per_query`` and
    ``q = queries_remaining``::

        spent     = Σ active_seconds                     (the count × the mean)
        s̄         = Σ seconds_per_query / n              (mean seconds of a done pass)
        open      = spent − Σ seconds_per_query          (passes started, not done yet)
        remaining = max(0, q × a × s̄ − open)
        total     = spent + remaining

    The remaining queries are priced per query, from what a done query really took, because
    a U or M query's reading, searching and verdict are seconds with few judgements (or none)
    to price them by: a price per judgement leaves them out. The mean, not the median: total
    time is count × mean, and the median of skewed times (a break capped at 120 s every few
    actions) understates it; the median is reported beside it. ``seconds_per_judgement`` is
    ``Σ seconds_per_query / Σ judgements_per_query``, the seconds per doc read that
    :func:`labelling_cost` needs for a plan at another depth: at the measured depth it gives
    ``s̄`` back. Before anything is measured the unknown figures are NaN (None in
    :meth:`MeasuredCost.as_dict`).

    >>> cost = measured_cost([10, 10, 10, 10, 120, 10], [150, 20], [3, 0], 4, 36)
    >>> cost.spent.seconds, cost.seconds_per_query, cost.median_seconds_per_query
    (170.0, 85.0, 85.0)
    >>> cost.remaining.seconds, cost.total.dollars, round(cost.seconds_per_judgement, 2)
    (340.0, 5.1, 56.67)
    """
    spent = _non_negative_array(active_seconds, "active_seconds")
    per_query = _non_negative_array(seconds_per_query, "seconds_per_query")
    depths = _non_negative_array(judgements_per_query, "judgements_per_query")
    if len(per_query) != len(depths):
        raise ValueError("seconds_per_query and judgements_per_query must be as long")
    _check_non_negative(queries_remaining=queries_remaining, hourly_rate=hourly_rate)
    _check_annotators(annotators_per_query)
    spent_seconds = float(spent.sum())
    mean_seconds = float(per_query.mean()) if len(per_query) else math.nan
    remaining_seconds = 0.0
    if queries_remaining:
        open_seconds = max(0.0, spent_seconds - float(per_query.sum()))
        planned = queries_remaining * annotators_per_query * mean_seconds
        remaining_seconds = max(0.0, planned - open_seconds) if len(per_query) else math.nan
    return MeasuredCost(
        spent=Cost.of_seconds(spent_seconds, hourly_rate),
        remaining=Cost.of_seconds(remaining_seconds, hourly_rate),
        total=Cost.of_seconds(spent_seconds + remaining_seconds, hourly_rate),
        seconds_per_query=mean_seconds,
        median_seconds_per_query=float(np.median(per_query)) if len(per_query) else math.nan,
        judgements_per_query=float(depths.mean()) if len(depths) else math.nan,
        seconds_per_judgement=_ratio(per_query.sum(), depths.sum()),
    )


def _top_docs(run: pd.DataFrame, depth: int, keep_order: bool) -> pd.DataFrame:
    """(query_id, doc_id) of each query's top ``depth`` docs in ``run``, ranked as eval ranks
    a run (:func:`goldset.eval.ranking.run_order`), or in row order with ``keep_order``."""
    needed = ["query_id", "doc_id"] if keep_order else ["query_id", "doc_id", "score"]
    absent = [column for column in needed if column not in run.columns]
    if absent:
        raise ValueError(f"a run frame lacks the column(s) {', '.join(absent)}")
    if keep_order:
        top = run[run.groupby("query_id", sort=False).cumcount() < depth]
    else:
        from goldset.eval.ranking import run_order  # ranking only when a run is ranked here
        from goldset.eval.readers import run_from_frame

        top = run.iloc[run_order(run_from_frame(run, name="pooled"), depth).row]
    return top[["query_id", "doc_id"]]


def _non_negative_array(values: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat list of numbers, got shape {array.shape}")
    if not np.isfinite(array).all() or (array < 0).any():
        raise ValueError(f"{name} must hold finite, non-negative numbers")
    return array


def _check_non_negative(**figures: float) -> None:
    for name, value in figures.items():
        if not (isinstance(value, int | float | np.number) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite, non-negative number, got {value!r}")


def _check_annotators(annotators_per_query: float) -> None:
    _check_non_negative(annotators_per_query=annotators_per_query)
    if annotators_per_query < 1:
        raise ValueError(f"annotators_per_query must be at least 1, got {annotators_per_query!r}")


def _ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, NaN when the denominator is 0 (nothing to divide by)."""
    return float(numerator / denominator) if denominator else math.nan


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else value


# --- machine judges -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MachineCost:
    """What a machine judge cost for ``pairs`` labels, and the human time it stood in for.

    ``dollars`` is tokens × the prices per million tokens; ``wall_seconds`` the time the
    calls took, divided by the requests in flight at once. ``saved`` prices the holes it
    filled (labels of pairs no human labelled) at the human seconds per judgement.
    """

    pairs: int
    holes_filled: int
    prompt_tokens: int
    completion_tokens: int
    dollars: float
    wall_seconds: float
    saved: Cost

    def as_dict(self) -> dict[str, object]:
        """The JSON shape (unknown figures become None)."""
        return {
            "pairs": self.pairs,
            "holes_filled": self.holes_filled,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "dollars": _json_number(self.dollars),
            "wall_seconds": _json_number(self.wall_seconds),
            "human_saved": self.saved.as_dict(),
            "net_dollars_saved": _json_number(self.saved.dollars - self.dollars),
        }


def machine_judging_cost(
    pairs: int,
    prompt_tokens: int,
    completion_tokens: int,
    call_seconds: float,
    *,
    input_price: float,
    output_price: float,
    concurrency: int = 1,
    human_seconds_per_judgement: float = math.nan,
    hourly_rate: float = 0.0,
    holes_filled: int | None = None,
) -> MachineCost:
    """The cost of ``pairs`` machine labels from the judge's recorded calls.

    ``prompt_tokens``, ``completion_tokens`` and ``call_seconds`` are summed over every call
    (retries and failures included: they were paid for); prices are dollars per million
    tokens, as providers quote them. ``saved`` is ``holes_filled ×
    human_seconds_per_judgement`` at ``hourly_rate``: what those labels would have cost from
    a person (NaN when the human speed is not known yet). ``holes_filled`` defaults to
    ``pairs``: every label fills a hole.

    >>> cost = machine_judging_cost(1000, 400_000, 20_000, 900.0, input_price=0.15,
    ...                             output_price=0.60, concurrency=4,
    ...                             human_seconds_per_judgement=20, hourly_rate=60)
    >>> round(cost.dollars, 4), cost.wall_seconds, round(cost.saved.hours, 2)
    (0.072, 225.0, 5.56)
    """
    _check_non_negative(
        pairs=pairs,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        call_seconds=call_seconds,
        input_price=input_price,
        output_price=output_price,
        hourly_rate=hourly_rate,
    )
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency!r}")
    filled = pairs if holes_filled is None else holes_filled
    dollars = (prompt_tokens * input_price + completion_tokens * output_price) / 1e6
    return MachineCost(
        pairs=pairs,
        holes_filled=filled,
        prompt_tokens=int(prompt_tokens),
        completion_tokens=int(completion_tokens),
        dollars=dollars,
        wall_seconds=call_seconds / concurrency,
        saved=Cost.of_seconds(filled * human_seconds_per_judgement, hourly_rate),
    )


# --- a machine judge's savings under prediction-powered inference ---------------------------------


def judge_human_correlation(human: ArrayLike, judge: ArrayLike) -> float:
    """Pearson's ρ between the humans' and the judge's per-query values on the same queries
    (the labelled sample); NaN with fewer than 3 queries or when either is constant (no
    correlation to measure). A judge that errs at random has ρ near 0; one that ranks the
    queries as the humans do, near 1."""
    human = np.asarray(human, dtype=np.float64)
    judge = np.asarray(judge, dtype=np.float64)
    if human.shape != judge.shape or human.ndim != 1:
        raise ValueError("the humans' and the judge's values must be paired, one per query")
    if len(human) < 3 or np.ptp(human) == 0 or np.ptp(judge) == 0:  # std: rounding, not 0
        return math.nan
    return float(np.corrcoef(human, judge)[0, 1])


def queries_with_judge(human_queries: int, correlation: float) -> int:
    """Human queries needed for the same CI with the judge's values on every query:
    ``n_PPI = ⌈n_human × (1 − ρ²)⌉``, at least 1.

    PPI++ with power tuning (the optimal λ = ρ σ_h / σ_j) has the variance
    ``σ_h² (1 − ρ²) / n + λ² σ_j² / N``; with the judge's values on far more queries than the
    sample (N ≫ n) the second term vanishes and n human queries do the work of
    n / (1 − ρ²) alone. The assumption: ρ, measured on the labelled sample, holds on the
    queries still to label (a random sample keeps it unbiased, not exact). A useless judge
    (ρ = 0, or not measured: NaN) saves nothing.

    >>> queries_with_judge(400, 0.8), queries_with_judge(400, 0.0)
    (144, 400)
    """
    if human_queries < 0:
        raise ValueError(f"human_queries must be >= 0, got {human_queries!r}")
    if math.isnan(correlation):
        return human_queries
    if not -1 <= correlation <= 1:
        raise ValueError(f"a correlation lies in [-1, 1], got {correlation!r}")
    needed = round(human_queries * (1 - correlation**2), 9)  # 143.99999999999997 is 144
    return max(1, math.ceil(needed)) if human_queries else 0
