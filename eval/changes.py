"""Which queries changed between two rankings of the same golden set: the queries behind a
comparison's means, that a reviewer reads first (new misses before anything else)."""

from __future__ import annotations

import numpy as np

from goldset.eval.ids import query_id_order
from goldset.eval.metrics import NOT_RANKED, Ranking, reciprocal_rank
from goldset.eval.readers import Golden

CHANGE_CUTOFF = 10  # changed queries are read at rank 10, as the gate's mrr@10 and miss@10


def changed_queries(
    golden: Golden, baseline: Ranking, candidate: Ranking, cutoff: int = CHANGE_CUTOFF
) -> dict[str, list[dict[str, object]]]:
    """The queries behind a comparison, largest change first.

    Both rankings are of the same golden set (same queries, same order). Lists:
    ``new_misses`` (a relevant doc in the baseline's top ``cutoff``, none in the
    candidate's), ordered by the rank lost, best first; ``new_hits`` (the reverse), by the rank
    gained; ``worse`` and ``better`` (a hit in both, the first relevant rank moved), by the
    change of RR@cutoff. Ties go by query id in natural order (:func:`query_id_order`). Each item:
    query_id, slice, baseline_rank and candidate_rank (first relevant rank within the
    cutoff, None when there is none).
    """
    before = baseline.first_relevant_within(cutoff)
    after = candidate.first_relevant_within(cutoff)
    hit_before, hit_after = before != NOT_RANKED, after != NOT_RANKED
    rr_change = reciprocal_rank(candidate, cutoff) - reciprocal_rank(baseline, cutoff)
    lists = {
        "new_misses": (hit_before & ~hit_after, before),
        "new_hits": (~hit_before & hit_after, after),
        "worse": (hit_before & hit_after & (after > before), rr_change),
        "better": (hit_before & hit_after & (after < before), -rr_change),
    }
    slices = golden.query_values("slice", baseline.query_ids)
    query_ids = baseline.query_ids
    changed = {}
    for name, (selected, order_key) in lists.items():
        positions = np.flatnonzero(selected)
        by_change = np.lexsort((query_id_order(query_ids[positions]), order_key[positions]))
        changed[name] = [
            {
                "query_id": query_ids[position],
                "slice": slices[position],
                "baseline_rank": rank_or_none(before[position]),
                "candidate_rank": rank_or_none(after[position]),
            }
            for position in positions[by_change]
        ]
    return changed


def rank_or_none(rank: int) -> int | None:
    """A first relevant rank as JSON gives it: None when there is none."""
    return None if rank == NOT_RANKED else int(rank)
