"""Evaluation brought up to date query by query: when the labels of a few queries change, the
ranking and the golden set's version of the whole set are spliced from what was kept and
what those queries give, instead of being computed again over every query.

Both equal what :func:`goldset.eval.metrics.rank_run` and
:attr:`goldset.eval.readers.Golden.version` give
on the updated golden set (tests/test_live_incremental.py holds them equal): a query's rows
of a ranking depend only on its own labels and results, and the version sums a hash per row.

In short::

    kept = rank_run(golden, run, DEFAULT_METRICS)  # once
    fresh = rank_run(golden_of_changed_queries, run_of_changed_queries, DEFAULT_METRICS)
    ranking = spliced_ranking(kept, fresh, updated_golden.scored_query_ids())
    version = readers.version_of(updated_digests(golden.digests, old_labels, new_labels))
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from goldset.eval.columns import as_strings, lookup
from goldset.eval.groups import ranges
from goldset.eval.ranking import Ranking
from goldset.eval.readers import Digests, Golden

__all__ = ["spliced_ranking", "updated_digests"]

_ROW_FIELDS = ("query_index", "rank", "score", "grade", "judged", "relevant")
_QUERY_FIELDS = ("retrieved", "relevant_count", "first_hit")
_WORD = 1 << 64  # row hashes are summed modulo 2**64 (numpy's uint64 sum)


def spliced_ranking(kept: Ranking, fresh: Ranking, query_ids: np.ndarray) -> Ranking:
    """The ranking of ``query_ids`` (the updated golden set's scored queries, in its order):
    each query's rows from ``fresh`` where it ranks that query, else from ``kept``.

    ``kept`` and ``fresh`` are rankings of the same run with the same options, ``fresh``
    of the changed queries only; every query of ``query_ids`` must be in one of them.
    Raises ValueError otherwise.
    """
    if (kept.ranked_to, kept.to_first_relevant) != (fresh.ranked_to, fresh.to_first_relevant):
        raise ValueError("the kept and the fresh rankings hold different ranks")
    wanted = as_strings(np.asarray(query_ids, dtype=object))
    in_fresh, in_kept = lookup(wanted, fresh.query_ids), lookup(wanted, kept.query_ids)
    from_fresh = in_fresh >= 0
    if (~from_fresh & (in_kept < 0)).any():
        raise ValueError("a query is in neither the kept nor the fresh ranking")
    # Rows of both rankings, one after the other; each query's rows are a range of them.
    kept_starts, kept_lengths = _row_ranges(kept)
    fresh_starts, fresh_lengths = _row_ranges(fresh)
    fresh_starts += len(kept.query_index)
    starts = np.where(from_fresh, fresh_starts[in_fresh], kept_starts[in_kept])
    lengths = np.where(from_fresh, fresh_lengths[in_fresh], kept_lengths[in_kept])
    rows = ranges(starts, lengths)
    spliced = {
        name: np.concatenate([getattr(kept, name), getattr(fresh, name)])[rows]
        for name in _ROW_FIELDS
    }
    spliced["query_index"] = np.repeat(np.arange(len(wanted)), lengths)

    def per_query(kept_values: np.ndarray, fresh_values: np.ndarray) -> np.ndarray:
        values = kept_values[np.maximum(in_kept, 0)]
        values[from_fresh] = fresh_values[in_fresh[from_fresh]]
        return values

    spliced |= {
        name: per_query(getattr(kept, name), getattr(fresh, name)) for name in _QUERY_FIELDS
    }
    spliced["ideal_grades"] = per_query(*_same_width(kept.ideal_grades, fresh.ideal_grades))
    spliced["ideal_grades"] = _trimmed(spliced["ideal_grades"])
    return replace(kept, query_ids=np.asarray(query_ids, dtype=object), **spliced)


def updated_digests(digests: Digests, before: Golden, after: Golden) -> Digests:
    """``digests`` (:attr:`Golden.digests` of a golden set) once the rows of ``before`` are
    replaced by those of ``after`` (the same queries' old and new labels)."""
    removed, added = before.digests, after.digests
    return Digests(
        *(
            (whole - old + new) % _WORD
            for whole, old, new in zip(digests, removed, added, strict=True)
        )
    )


def _row_ranges(ranking: Ranking) -> tuple[np.ndarray, np.ndarray]:
    """Each query's first row and number of rows (rows are grouped by query, in order)."""
    lengths = np.bincount(ranking.query_index, minlength=ranking.query_count)
    return np.cumsum(lengths) - lengths, lengths


def _same_width(*grades: np.ndarray) -> list[np.ndarray]:
    """Padded 2-D grade arrays, padded with 0 to the widest of them."""
    width = max(values.shape[1] for values in grades)
    return [np.pad(values, ((0, 0), (0, width - values.shape[1]))) for values in grades]


def _trimmed(ideal: np.ndarray) -> np.ndarray:
    """Ideal grades padded to the longest list they hold (at least one column), as a
    ranking of all the queries pads them."""
    width = max(1, int((ideal > 0).sum(axis=1).max())) if len(ideal) else 1
    return ideal[:, :width]
