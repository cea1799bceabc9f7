"""An annotator's own queries, for the page that lists them: the queries of their queue, each
with their own verdict (never another annotator's), filtered, searched and paged in SQL."""

from __future__ import annotations

from collections.abc import Sequence

from goldset.labeler.store.labelling import Labelling, queue_rule
from goldset.labeler.store.projections import TO_DO

# An annotator's verdict on a query, from their own row of query_state (none: not started).
# "relevant" is a first relevant candidate found (its rank beside it); "miss" also covers a
# miss whose answer was attached from a search.
VERDICTS = ("relevant", "unanswerable", "miss", "in_progress", "pending", "skipped")
_VERDICT = (
    "CASE WHEN s.status IS NULL OR s.status = 'pending' THEN 'pending' "
    "WHEN s.status IN ('in_progress', 'skipped') THEN s.status "
    "WHEN s.first_relevant_rank IS NOT NULL THEN 'relevant' "
    "WHEN s.answerable THEN 'miss' ELSE 'unanswerable' END"
)
LIKE_ESCAPE = "\\"


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere, its own ``%`` and ``_`` taken literally."""
    escaped = "".join(LIKE_ESCAPE + char if char in "%_\\" else char for char in text)
    return f"%{escaped}%"


class Worklist(Labelling):
    """An annotator's own queries, filtered and paged: one statement per page."""

    def own_queries(
        self,
        annotator: str,
        *,
        slices: Sequence[str] | None = None,
        verdicts: Sequence[str] | None = None,
        text: str = "",
        limit: int = 50,
        offset: int = 0,
    ) -> dict:
        """A page of the annotator's queries, in the project's queue order, and how many match:
        ``{"total": n, "queries": [...]}``, each a dict: query_id, query, slice, verdict (one
        of :data:`VERDICTS`), first_relevant_rank and updated_at (their last change).

        Their queries are those of their queue (:meth:`in_queue`, the one queue rule): their
        assigned queries; without assignments, the shared queries they worked on and those
        still open to them (not done, or done by another and waiting for a second opinion).
        ``slices`` and ``verdicts`` keep those of the given values (None: all); ``text`` keeps
        those whose text or id holds it (case-insensitive for ASCII letters). Filters, order,
        count and page are all SQL: nothing is loaded past the page.
        """
        unknown = sorted(set(verdicts or ()) - set(VERDICTS))
        if unknown:
            raise ValueError(f"unknown verdicts {unknown}: choose among {list(VERDICTS)}")
        if limit < 1 or offset < 0:
            raise ValueError("a page needs limit ≥ 1 and offset ≥ 0")
        where, params = _filters(slices, verdicts, text)
        rows = self._rows(
            f"SELECT q.query_id, q.query, q.slice, {_VERDICT} AS verdict, "
            "s.first_relevant_rank, s.updated_at, count(*) OVER () AS total "
            "FROM queries q "
            "LEFT JOIN assignments a ON a.annotator = :annotator AND a.query_id = q.query_id "
            "LEFT JOIN query_state s ON s.query_id = q.query_id AND s.annotator = :annotator "
            f"WHERE {queue_rule('q.query_id')} AND (a.query_id IS NOT NULL "
            f"OR s.query_id IS NOT NULL OR {TO_DO} OR EXISTS (SELECT 1 FROM "
            "second_opinions p WHERE p.query_id = q.query_id AND p.first_annotator != :annotator)) "
            f"{where} ORDER BY q.position LIMIT :limit OFFSET :offset",
            {**params, "annotator": annotator, "limit": limit, "offset": offset},
        )
        total = rows[0]["total"] if rows else 0
        return {"total": total, "queries": [_without_total(row) for row in rows]}


def _filters(
    slices: Sequence[str] | None, verdicts: Sequence[str] | None, text: str
) -> tuple[str, dict]:
    """The SQL conditions (each starting with AND) of :meth:`Worklist.own_queries`' filters,
    and their named parameters."""
    where, params = [], {}
    if slices is not None:
        names = {f"slice{index}": name for index, name in enumerate(slices)}
        where.append(f"q.slice IN ({_named(names) or 'NULL'})")
        params |= names
    if verdicts is not None:
        names = {f"verdict{index}": name for index, name in enumerate(verdicts)}
        where.append(f"{_VERDICT} IN ({_named(names) or 'NULL'})")
        params |= names
    if text:
        where.append(
            f"(q.query LIKE :pattern ESCAPE '{LIKE_ESCAPE}' "
            f"OR q.query_id LIKE :pattern ESCAPE '{LIKE_ESCAPE}')"
        )
        params["pattern"] = like_pattern(text)
    return "".join(f"AND {condition} " for condition in where), params


def _named(params: dict) -> str:
    """``:a, :b`` for the named parameters ``params``."""
    return ", ".join(f":{name}" for name in params)


def _without_total(row: dict) -> dict:
    row.pop("total")
    return row
