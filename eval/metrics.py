"""Per-query retrieval metrics, trec_eval-conformant: the textbook.

Each metric is one short function over a :class:`~eval.ranking.Ranking` (a run ranked as
trec_eval ranks it and joined with the judgements, see :mod:`goldset.eval.ranking`), computed for
all queries at once: ``np.bincount`` over the query index does the per-query sums, so there
is no Python loop per query. In the formulas, ``rel(i)`` is 1 when the doc at rank i is
relevant (judged with grade >= the threshold), ``g(i)`` its grade (0 when unjudged) and
``R`` the number of relevant judged docs of the query.

The API: :func:`parse_metric` reads ``name@k``, :func:`rank_run` ranks a run for some
metrics, :func:`metric_values` and :func:`per_query_frame` give their per-query values and
:func:`evaluate` does all of it at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from goldset.eval.ranking import NOT_RANKED, Ranking, rank
from goldset.eval.readers import Golden, Run

if TYPE_CHECKING:  # only per_query_frame and evaluate build frames: eval itself needs no pandas
    import pandas as pd

__all__ = [
    "DEFAULT_METRICS",
    "GAINS",
    "LOWER_BOUND_FROM_FIRST_HIT",
    "METRICS",
    "NOT_FROM_FIRST_HIT",
    "NOT_RANKED",
    "Ranking",
    "evaluate",
    "hit",
    "judged",
    "metric_values",
    "miss",
    "ndcg",
    "needs_first_relevant",
    "parse_metric",
    "PerQuery",
    "per_query_frame",
    "per_query_values",
    "precision",
    "rank_run",
    "ranks_needed",
    "recall",
    "reciprocal_of",
    "reciprocal_rank",
    "relevant_in_top",
]

DEFAULT_METRICS = (
    "mrr@10",
    "hit@1",
    "hit@10",
    "miss@10",
    "recall@10",
    "precision@10",
    "ndcg@10",
    "judged@10",
)
GAINS = ("linear", "exp")
# Their denominators (all relevant docs, the ideal DCG) are unknown when only the first
# relevant doc was looked for: on first-hit queries these are not measured (docs/metrics.md).
NOT_FROM_FIRST_HIT = ("recall", "ndcg")
# Unknown docs below the first hit count as not relevant: from first-hit labels, too low.
LOWER_BOUND_FROM_FIRST_HIT = ("precision",)


# --- one small function per metric ---------------------------------------------------------


def reciprocal_rank(ranking: Ranking, k: int | None = None) -> np.ndarray:
    """Reciprocal rank: ``RR@k = 1 / min{i <= k : rel(i)}``, 0 when no relevant doc is in
    the top k (trec_eval ``recip_rank`` when k is None: no cutoff)."""
    return reciprocal_of(ranking.first_relevant_within(k))


def reciprocal_of(first: np.ndarray) -> np.ndarray:
    """``1 / rank`` of each first relevant rank, 0 where it is ``NOT_RANKED`` (none).

    >>> reciprocal_of(np.array([1, 4, NOT_RANKED])).tolist()
    [1.0, 0.25, 0.0]
    """
    found = first != NOT_RANKED
    return np.where(found, 1.0 / np.where(found, first, 1), 0.0)


def hit(ranking: Ranking, k: int) -> np.ndarray:
    """Hit rate: ``hit@k = 1 if sum_{i<=k} rel(i) > 0 else 0`` (trec_eval ``success_k``)."""
    return (ranking.first_relevant_within(k) != NOT_RANKED).astype(np.float64)


def miss(ranking: Ranking, k: int) -> np.ndarray:
    """Miss rate: ``miss@k = 1 − hit@k``, the query has no relevant doc in the top k."""
    return 1.0 - hit(ranking, k)


def relevant_in_top(ranking: Ranking, k: int) -> np.ndarray:
    """Number of relevant docs in each query's top k: ``sum_{i<=k} rel(i)``."""
    return ranking.per_query_sum(np.ones(len(ranking.rank)), ranking.relevant & ranking.top(k))


def precision(ranking: Ranking, k: int) -> np.ndarray:
    """Precision: ``P@k = sum_{i<=k} rel(i) / k``; the denominator is always k, even when
    the run returned fewer docs (as trec_eval)."""
    return relevant_in_top(ranking, k) / k


def recall(ranking: Ranking, k: int) -> np.ndarray:
    """Recall: ``R@k = sum_{i<=k} rel(i) / R``, 0 when the query has no relevant doc."""
    found = relevant_in_top(ranking, k)
    total = ranking.relevant_count
    return np.divide(found, total, out=np.zeros(len(total)), where=total > 0)


def ndcg(ranking: Ranking, k: int, gain: str = "linear") -> np.ndarray:
    """Normalised DCG: ``nDCG@k = DCG@k / IDCG@k`` with ``DCG@k = sum_{i<=k} gain(g(i)) /
    log2(i + 1)``; 0 when the ideal is 0.

    ``gain(g) = g`` (``linear``, trec_eval's default) or ``2^g − 1`` (``exp``); grades <= 0
    gain nothing. IDCG@k is the DCG of all the query's judged grades sorted best first, cut
    at k. The relevance threshold does not apply, as in trec_eval.
    """
    gains = _gain(ranking.grade, gain)
    dcg = ranking.per_query_sum(gains / np.log2(ranking.rank + 1.0), ranking.top(k))
    ideal = _gain(ranking.ideal_grades[:, :k], gain)
    ideal_dcg = (ideal / np.log2(np.arange(2, ideal.shape[1] + 2))).sum(axis=1)
    return np.divide(dcg, ideal_dcg, out=np.zeros(len(dcg)), where=ideal_dcg > 0)


def judged(ranking: Ranking, k: int) -> np.ndarray:
    """Judged share: ``judged@k = |judged ∩ top k| / min(k, retrieved)``, the share of the
    run's top k that have a judgement (coverage); 0 where the run retrieved nothing.

    Against labels that list only relevant docs (a BEIR ``qrels.tsv``) it is the share of
    the top k known to be relevant instead; the report says so (``judged_relevant_only``).
    """
    judged_count = ranking.per_query_sum(
        np.ones(len(ranking.rank)), ranking.judged & ranking.top(k)
    )
    shown = np.minimum(ranking.retrieved, k)
    return np.divide(judged_count, shown, out=np.zeros(len(shown)), where=shown > 0)


def _gain(grades: np.ndarray, gain: str) -> np.ndarray:
    positive = np.maximum(grades, 0).astype(np.float64)
    return positive if gain == "linear" else np.exp2(positive) - 1.0


METRICS = {
    "mrr": reciprocal_rank,
    "hit": hit,
    "miss": miss,
    "precision": precision,
    "recall": recall,
    "ndcg": ndcg,
    "judged": judged,
}


# --- the API -------------------------------------------------------------------------------


# No run ranks more documents for one query; a larger cutoff would only overflow the arrays.
MAX_CUTOFF = 1_000_000_000


def parse_metric(spec: str) -> tuple[str, int | None]:
    """Split ``name@k`` into its name and cutoff; only ``mrr`` may go without a cutoff.

    >>> parse_metric("ndcg@10"), parse_metric("mrr")
    (('ndcg', 10), ('mrr', None))
    """
    name, _, cutoff = spec.partition("@")
    if name not in METRICS:
        raise ValueError(f"unknown metric {spec!r}; known: {', '.join(METRICS)} (as name@k)")
    if not cutoff:
        if name != "mrr":
            raise ValueError(f"metric {spec!r} needs a cutoff, e.g. {name}@10")
        return name, None
    if not cutoff.isdigit() or not 1 <= int(cutoff) <= MAX_CUTOFF:
        raise ValueError(
            f"metric {spec!r}: the cutoff must be a whole number from 1 to {MAX_CUTOFF:,}"
        )
    return name, int(cutoff)


def ranks_needed(metrics: Sequence[str]) -> int:
    """How many top ranks per query the cut-off ``metrics`` look at.

    One rank more than the largest cutoff, so that a score tie across the cutoff shows.
    (``mrr`` without a cutoff needs more, on some queries: see :func:`needs_first_relevant`.)

    >>> ranks_needed(["mrr@10", "ndcg@5"])
    11
    """
    cutoffs = [cutoff for _, cutoff in map(parse_metric, metrics) if cutoff is not None]
    return max(cutoffs, default=0) + 1


def needs_first_relevant(metrics: Sequence[str]) -> bool:
    """Whether ``metrics`` need each query ranked down to its first relevant doc (``mrr``)."""
    return any(cutoff is None for _, cutoff in map(parse_metric, metrics))


def rank_run(golden: Golden, run: Run, metrics: Sequence[str] | None = None, **options) -> Ranking:
    """Rank ``run`` over the golden set's scored queries for ``metrics`` (None: every rank).

    Only the rows the metrics need are kept: metrics cut at k need each query's top k rows;
    ``mrr`` without a cutoff needs all the rows of the queries that have no relevant doc in
    those ranks. The ranking refuses other metrics that would need deeper ranks.
    ``options`` are those of :func:`goldset.eval.ranking.rank`: rel_threshold, depth, keep_order,
    abstain_below and single_precision.
    """
    if metrics is None:
        return rank(golden, run, **options)
    return rank(
        golden,
        run,
        top=ranks_needed(metrics),
        to_first_relevant=needs_first_relevant(metrics),
        **options,
    )


def metric_values(ranking: Ranking, spec: str, gain: str = "linear") -> np.ndarray:
    """Per-query values of one metric given as ``name@k`` (e.g. ``"ndcg@10"``).

    Recall and nDCG are NaN (not measured) on the queries labelled in first-hit mode:
    only their first relevant doc is known, so the figure would come out too high.
    A cutoff deeper than the ranking holds is refused with a ValueError.
    """
    name, cutoff = parse_metric(spec)
    function = METRICS[name]
    if name == "ndcg":
        values = function(ranking, cutoff, gain=gain)
    else:
        values = function(ranking, cutoff) if cutoff is not None else function(ranking)
    if name in NOT_FROM_FIRST_HIT and ranking.first_hit.any():
        values = np.where(ranking.first_hit, np.nan, values)
    return values


@dataclass(frozen=True, eq=False)
class PerQuery:
    """Per-query metric values as arrays: row i is query ``query_ids[i]``, column j metric
    ``metrics[j]``; NaN where a metric is not measured on a query."""

    query_ids: np.ndarray
    metrics: tuple[str, ...]
    values: np.ndarray

    @classmethod
    def of(cls, per_query: PerQuery | pd.DataFrame) -> PerQuery:
        """``per_query`` itself, or a frame indexed by query_id with a column per metric."""
        if isinstance(per_query, PerQuery):
            return per_query
        query_ids = per_query.index.to_numpy(dtype=object)
        return cls(query_ids, tuple(per_query.columns), per_query.to_numpy(dtype=np.float64))

    def take(self, rows: np.ndarray) -> PerQuery:
        """Only the queries at ``rows``, in that order."""
        return PerQuery(self.query_ids[rows], self.metrics, self.values[rows])

    def frame(self) -> pd.DataFrame:
        """The values as a DataFrame indexed by query_id, one column per metric."""
        import pandas as pd  # only a caller that asks for a frame pays for pandas

        columns = {spec: self.values[:, column] for column, spec in enumerate(self.metrics)}
        return pd.DataFrame(columns, index=pd.Index(self.query_ids, name="query_id"))


def per_query_values(ranking: Ranking, metrics: Sequence[str], gain: str = "linear") -> PerQuery:
    """Per-query values of ``metrics`` (each named once, in order of first mention)."""
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")
    specs = tuple(dict.fromkeys(metrics))
    values = np.empty((ranking.query_count, len(specs)))
    for column, spec in enumerate(specs):
        values[:, column] = metric_values(ranking, spec, gain)
    return PerQuery(ranking.query_ids, specs, values)


def per_query_frame(ranking: Ranking, metrics: Sequence[str], gain: str = "linear") -> pd.DataFrame:
    """Per-query values of ``metrics``, indexed by query_id (one column per metric)."""
    return per_query_values(ranking, metrics, gain).frame()


def evaluate(
    golden: Golden,
    run: Run,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    gain: str = "linear",
    **options,
) -> pd.DataFrame:
    """Per-query metric values for every answerable, done golden query.

    Returns a DataFrame indexed by query_id with one column per metric. A query the run
    does not contain scores 0 (trec_eval ``-c``): it is a miss, so its miss@k is 1.
    ``options`` are those of :func:`rank_run`: rel_threshold, depth, keep_order,
    abstain_below and single_precision.
    """
    return per_query_frame(rank_run(golden, run, metrics, **options), metrics, gain)
