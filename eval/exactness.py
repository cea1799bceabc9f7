"""Per-run exactness of MRR@k and hit@k on partial (first-hit) labels.

A golden set labelled first-hit knows, for each query, the docs judged on the way down to a
first relevant one. A run ranked against it scores every unjudged doc as non-relevant, so its
figures on a query are **exact** only when nothing unjudged could have changed them:

    exact@k(q) = 1  iff  every doc ranked above f_k(q) is judged,

where ``f_k(q)`` is the rank of the run's first judged relevant doc within its top k, or
``k + 1`` when there is none (then its whole top k must be judged: an unjudged doc there
might be the hit the run is not credited with). Otherwise an unjudged doc above the first hit
might be relevant, so the query's RR@k and hit@k are *lower bounds*: the true value can only
be higher. ``exact@k`` is the share of queries with exact@k(q) = 1.

Each report gives, per run and slice: that share, the figures over the exact queries (exact,
though over a subset) and the figure over all queries (a lower bound unless every query is
exact). judged@k cannot tell these apart: a run with a few unjudged docs *above* its hits is
understated, one with the same share *below* them is exact.

Pure numpy over a :class:`~eval.ranking.Ranking`: no pandas, no labeller.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from goldset.eval.metrics import PerQuery
from goldset.eval.ranking import NOT_RANKED, Ranking

EXACT_METRICS = ("mrr", "hit")  # the figures whose exactness exact@k tells
EXACT_CUTOFF = 10  # the k of exact@k in reports


def unjudged_above_first_hit(ranking: Ranking, k: int) -> np.ndarray:
    """Per query: how many unjudged docs the run ranks above ``f_k(q)`` (see the module),
    the docs whose judgement could still change its RR@k or hit@k."""
    ranking.top(k)  # refuses a cutoff deeper than the rows held
    first = ranking.first_relevant_within(k)
    bound = np.where(first == NOT_RANKED, k + 1, first)
    above = ranking.rank < bound[ranking.query_index]
    return np.bincount(
        ranking.query_index[above & ~ranking.judged], minlength=ranking.query_count
    ).astype(np.int64)


def exact_queries(ranking: Ranking, k: int) -> np.ndarray:
    """Per query: True when the run's MRR@k and hit@k are exact (``exact@k(q) = 1``)."""
    return unjudged_above_first_hit(ranking, k) == 0


def exactness_summary(
    exact: np.ndarray, per_query: PerQuery, k: int, rows: np.ndarray | None = None
) -> dict:
    """exact@k over the queries at ``rows`` (None: all) with the figures beside it:
    ``queries``, ``exact`` (count), ``share`` (exact@k, None without queries) and, for each of
    mrr@k and hit@k that ``per_query`` holds, ``{"exact": mean over the exact queries (None
    when none is), "lower_bound": mean over all}``."""
    rows = np.arange(len(exact)) if rows is None else rows
    chosen = exact[rows]
    summary: dict = {
        "queries": len(rows),
        "exact": int(chosen.sum()),
        "share": float(chosen.mean()) if len(rows) else None,
        "figures": {},
    }
    for name in EXACT_METRICS:
        spec = f"{name}@{k}"
        if spec not in per_query.metrics:
            continue
        values = per_query.values[rows, per_query.metrics.index(spec)]
        summary["figures"][spec] = {
            "exact": float(values[chosen].mean()) if chosen.any() else None,
            "lower_bound": float(values.mean()) if len(rows) else None,
        }
    return summary


def exactness_report(
    ranking: Ranking, per_query: PerQuery, k: int, slices: Mapping[str, np.ndarray]
) -> dict | None:
    """exact@k of a run (see :func:`exactness_summary`) over all queries, and per slice
    (``slices``: slice name -> rows of ``per_query``, whose rows are the ranking's queries):
    ``{"k": k, "all": summary, "slices": {name: summary}}``; None when no query was
    labelled first-hit (labels of another kind say nothing of what was left unjudged on
    purpose), or when ``per_query`` holds neither mrr@k nor hit@k."""
    if not ranking.first_hit.any():
        return None
    if not any(f"{name}@{k}" in per_query.metrics for name in EXACT_METRICS):
        return None
    exact = exact_queries(ranking, k)
    return {
        "k": k,
        "all": exactness_summary(exact, per_query, k),
        "slices": {
            name: exactness_summary(exact, per_query, k, rows) for name, rows in slices.items()
        },
    }


def inexact_lines(run: str, exactness: Mapping | None) -> list[str]:
    """What a reader of ``run``'s figures must know when some are not exact: one line for
    the whole set and one per slice whose exact@k is below 1 (none when all are exact)."""
    if exactness is None:
        return []
    groups = [("", exactness["all"]), *((f" on {n}", s) for n, s in exactness["slices"].items())]
    lines = []
    for where, summary in groups:
        if summary["share"] is None or summary["share"] == 1.0:
            continue
        k = exactness["k"]
        mrr = summary["figures"].get(f"mrr@{k}")
        figure = (
            f"; MRR@{k} ≥ {mrr['lower_bound']:.3f} over all"
            + ("" if mrr["exact"] is None else f", {mrr['exact']:.3f} over the exact ones")
            if mrr
            else ""
        )
        lines.append(
            f"{run}{where}: exact@{k} {summary['share']:.1%} ({summary['exact']} of "
            f"{summary['queries']} queries have every doc above their first hit judged)"
            f"{figure}: label its holes for exact figures"
        )
    return lines
