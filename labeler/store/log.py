"""The append-only judgement log: appending events, reading a query's events and context."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from goldset.labeler import golden
from goldset.labeler.golden import Event, QueryContext
from goldset.labeler.store.connection import qmarks
from goldset.labeler.store.corpus import POOLED_RUN, UNPUBLISHED_HIDDEN
from goldset.labeler.store.settings import Settings

IMPORT_RUN = "import"  # provenance name of a list imported from a tasks file


# SQL: the join mark of a candidate ``c`` (see QueryContext.joined): the log's last event
# id when its import or pool was published; 0 for one added before marks were kept.
JOIN_MARK = "coalesce((SELECT b.last_event FROM import_batches b WHERE b.id = c.batch), 0)"
JOINED = f"{JOIN_MARK} AS joined"
# SQL over ``queries q``: the query's candidates (doc_id, position, imported_rank, join mark)
# and its pooled runs' ranks (run, rank, doc_id), each as a JSON array of rows, for
# query_context: a query's context read within another statement about it.
CANDIDATES_JSON = (
    f"(SELECT json_group_array(json_array(c.doc_id, c.position, c.imported_rank, {JOIN_MARK})) "
    "FROM candidates c WHERE c.query_id = q.query_id)"
)
RANKS_JSON = (
    "(SELECT json_group_array(json_array(p.run, p.rank, p.doc_id)) FROM pool_ranks p "
    f"WHERE p.query_id = q.query_id AND p.{POOLED_RUN})"
)


def query_context(
    candidates: Iterable[tuple[str, int, int | None, int]],
    ranks: Iterable[tuple[str, int, str]],
    settings: Mapping[str, object],
) -> QueryContext:
    """A query's context under the protocol ``settings``: its candidates (doc_id, position,
    imported_rank, joined: see :data:`JOINED`) within the depth, the imported list (by
    imported rank) and each run's ranking (ranks: run, rank, doc_id; by run name, then rank)
    of them. The one rule, for the store's reads and for a pool's new order computed before
    it is written."""
    depth = settings["depth"]
    shown = sorted(
        (position, doc_id, imported_rank, joined)
        for doc_id, position, imported_rank, joined in candidates
        if depth == 0 or position <= depth
    )
    positions = {doc_id: position for position, doc_id, _, _ in shown}
    rankings: dict[str, list[str]] = {}
    imported = sorted((rank, doc_id) for _, doc_id, rank, _ in shown if rank is not None)
    if imported:
        rankings[IMPORT_RUN] = [doc_id for _, doc_id in imported]
    for run, _, doc_id in sorted(ranks):
        if doc_id in positions:
            rankings.setdefault(run, []).append(doc_id)
    joined = {doc_id: mark for _, doc_id, _, mark in shown if mark}
    return QueryContext(rankings, positions, settings["rel_threshold"], settings["mode"], joined)


@dataclass(frozen=True)
class LogMark:
    """The last event, decision and published import batch ids at one moment: what a
    re-derivation read (see :meth:`Projections._rederive`); anything later is redone."""

    events: int
    decisions: int
    batches: int


class StaleTarget(ValueError):
    """A press aimed at what a page showed, which has changed since (e.g. in another tab)."""


class Log(Settings):
    """The append-only judgement log: appending events, reading a query's events and context."""

    def _check_grade(self, grade: int) -> None:
        max_grade = self.settings()["max_grade"]
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= max_grade:
            raise ValueError(f"grade must be an integer in 0..{max_grade}, got {grade!r}")

    def _require_query(self, query_id: str) -> None:
        if not self._value("SELECT 1 FROM queries WHERE query_id = ?", (query_id,)):
            raise ValueError(f"unknown query {query_id!r}")

    def _append(
        self,
        query_id: str,
        *,
        annotator: str,
        action: str,
        doc_id: str | None = None,
        grade: int | None = None,
        mode: str | None = None,
        seconds: float = 0.0,
        note: str | None = None,
        undoes: int | None = None,
        created_at: str | None = None,
        batch: int | None = None,
    ) -> int:
        """Append one event (inside the caller's write transaction); returns its id. ``batch``:
        the import that replayed it (such events are on nobody's undo stack)."""
        if not isinstance(annotator, str) or not annotator:
            raise ValueError("annotator must be a non-empty string")
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not 0 <= seconds < math.inf
        ):
            raise ValueError(f"seconds must be a number >= 0, got {seconds!r}")
        cursor = self.conn.execute(
            "INSERT INTO events (query_id, doc_id, annotator, action, grade, mode, seconds, note, "
            "undoes, created_at, batch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                query_id,
                doc_id,
                annotator,
                action,
                grade,
                mode,
                float(seconds),
                note,
                undoes,
                created_at or golden.now(),
                batch,
            ),
        )
        return cursor.lastrowid

    def _context(self, query_id: str) -> QueryContext:
        """The query's candidates within the protocol's depth, and each run's ranking of them."""
        return self._contexts([query_id], self.settings())[query_id]

    def _contexts(
        self, query_ids: Sequence[str], settings: Mapping[str, object]
    ) -> dict[str, QueryContext]:
        """:meth:`_context` of each of these queries (at most :data:`CHUNK`) under
        ``settings``, read in two statements."""
        marks = qmarks(query_ids)
        candidates: dict[str, list[tuple]] = {query_id: [] for query_id in query_ids}
        for query_id, *row in self.conn.execute(
            f"SELECT query_id, doc_id, position, imported_rank, {JOINED} FROM candidates c "
            f"WHERE query_id IN ({marks})",
            query_ids,
        ):
            candidates[query_id].append(row)
        ranks: dict[str, list[tuple]] = {}
        for query_id, *row in self.conn.execute(
            f"SELECT query_id, run, rank, doc_id FROM pool_ranks WHERE query_id IN ({marks}) "
            f"AND {POOLED_RUN}",
            query_ids,
        ):
            ranks.setdefault(query_id, []).append(row)
        return {
            query_id: query_context(rows, ranks.get(query_id, ()), settings)
            for query_id, rows in candidates.items()
        }

    def _log_mark(self) -> LogMark:
        """How far the log, the decisions and the published imports have got (read it in the
        snapshot that decides what a re-derivation covers)."""
        return LogMark(
            *self.conn.execute(
                "SELECT (SELECT coalesce(max(id), 0) FROM events), "
                "(SELECT coalesce(max(id), 0) FROM adjudications), "
                "(SELECT coalesce(max(id), 0) FROM import_batches WHERE published_at IS NOT NULL)"
            ).fetchone()
        )

    def _acted_since(self, mark: LogMark) -> set[str]:
        """The published queries with an event or a decision after ``mark``."""
        return {
            row[0]
            for row in self.conn.execute(
                f"SELECT query_id FROM events WHERE id > ? AND ({UNPUBLISHED_HIDDEN}) "
                f"UNION SELECT query_id FROM adjudications WHERE id > ? AND ({UNPUBLISHED_HIDDEN})",
                (mark.events, mark.decisions),
            )
        }

    def _events_of(self, query_ids: Sequence[str]) -> dict[str, dict[str, list[Event]]]:
        """Every event on these queries (at most :data:`CHUNK`): query_id -> annotator ->
        events, oldest first."""
        found: dict[str, dict[str, list[Event]]] = {}
        for row in self._rows(
            "SELECT id, query_id, annotator, action, doc_id, grade, mode, seconds, note, "
            f"undoes, created_at FROM events WHERE query_id IN ({qmarks(query_ids)}) "
            "ORDER BY query_id, annotator, id",
            query_ids,
        ):
            found.setdefault(row["query_id"], {}).setdefault(row["annotator"], []).append(
                Event(**row)
            )
        return found

    def _all_query_ids_with_events(self) -> list[str]:
        """Every query with events or an adjudication: those with projections to derive."""
        return [
            row[0]
            for row in self.conn.execute(
                f"SELECT query_id FROM events WHERE {UNPUBLISHED_HIDDEN} "
                f"UNION SELECT query_id FROM adjudications WHERE {UNPUBLISHED_HIDDEN}"
            )
        ]
