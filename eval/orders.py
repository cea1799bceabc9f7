"""One ranking, one figure: where a run's tied scores make two orders of it possible.

A run's order is its scores, descending, ties broken by doc id descending (trec_eval); its
*own* order is the order of its lines (``keep_order``: what a system that kept its list, or
the project's stored candidate lists, shows). When a query's top k holds tied scores the two
can differ, and so can MRR@k and hit@k: a report then gives the figures in both orders, so
that nobody reads two numbers for one ranking without knowing why.

Pure numpy over :class:`~eval.ranking.Ranking`: no pandas, no labeller.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from goldset.eval.metrics import PerQuery, per_query_values, rank_run
from goldset.eval.ranking import Ranking
from goldset.eval.readers import Golden, Run

ORDER_METRICS = ("mrr@10", "hit@10")  # the figures whose two orders a report gives


def tied_queries(ranking: Ranking) -> int:
    """How many queries hold two equal scores (as compared) among their ranked rows."""
    same_query = np.diff(ranking.query_index) == 0
    # Neighbours compared, not subtracted: inf − inf is NaN, and a tie at ±inf is a tie.
    tied = same_query & (ranking.score[1:] == ranking.score[:-1])
    # counted with bincount: np.unique would import numpy.ma on eval's lean path
    per_query = np.bincount(ranking.query_index[1:][tied], minlength=ranking.query_count)
    return int(np.count_nonzero(per_query))


def _means(per_query: PerQuery, metrics: Sequence[str]) -> dict[str, float]:
    return {
        spec: float(per_query.values[:, per_query.metrics.index(spec)].mean())
        for spec in metrics
        if len(per_query.query_ids)
    }


def two_orders(
    golden: Golden,
    run: Run,
    ranking: Ranking,
    per_query: PerQuery,
    keep_order: bool = False,
    **options,
) -> dict | None:
    """The figures of :data:`ORDER_METRICS` in both orders of ``run`` when its tied scores
    make them differ, else None. ``ranking`` and ``per_query``: the run as the report ranked
    it (by score, or in its own order with ``keep_order``); ``options`` as
    :func:`goldset.eval.ranking.rank`'s. Returns ``{"tied_queries": n, "score_order": {metric:
    mean}, "own_order": {metric: mean}}``. The other order is ranked only when there are
    ties: a run without any costs one pass over its rows."""
    metrics = [spec for spec in ORDER_METRICS if spec in per_query.metrics]
    ties = tied_queries(ranking)
    if not metrics or not ties:
        return None
    other = rank_run(golden, run, metrics, keep_order=not keep_order, **options)
    figures = {
        keep_order: _means(per_query, metrics),
        not keep_order: _means(per_query_values(other, metrics), metrics),
    }
    if figures[True] == figures[False]:
        return None
    return {"tied_queries": ties, "score_order": figures[False], "own_order": figures[True]}
