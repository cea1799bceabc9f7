"""The append-only judgement log: appending events, reading a query's events and context."""

from __future__ import annotations

import math

from labeler import golden
from labeler.golden import Event, QueryContext
from labeler.store.corpus import POOLED_RUN, UNPUBLISHED_HIDDEN
from labeler.store.settings import Settings

IMPORT_RUN = "import"  # provenance name of a list imported from a tasks file


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
        settings = self.settings()
        positions: dict[str, int] = {}
        imported: list[tuple[int, str]] = []
        for doc_id, position, imported_rank in self.conn.execute(
            "SELECT doc_id, position, imported_rank FROM candidates WHERE query_id = :query_id "
            "AND (:depth = 0 OR position <= :depth) ORDER BY position",
            {"query_id": query_id, "depth": settings["depth"]},
        ):
            positions[doc_id] = position
            if imported_rank is not None:
                imported.append((imported_rank, doc_id))
        rankings: dict[str, list[str]] = {}
        if imported:
            rankings[IMPORT_RUN] = [doc_id for _, doc_id in sorted(imported)]
        for run, doc_id in self.conn.execute(
            f"SELECT run, doc_id FROM pool_ranks WHERE query_id = ? AND {POOLED_RUN} "
            "ORDER BY run, rank",
            (query_id,),
        ):
            if doc_id in positions:
                rankings.setdefault(run, []).append(doc_id)
        return QueryContext(rankings, positions, settings["rel_threshold"], settings["mode"])

    def _events(self, query_id: str, annotator: str) -> list[Event]:
        return [
            Event(**row)
            for row in self._rows(
                "SELECT id, query_id, annotator, action, doc_id, grade, mode, seconds, note, "
                "undoes, created_at FROM events WHERE query_id = ? AND annotator = ? ORDER BY id",
                (query_id, annotator),
            )
        ]

    def _all_query_ids_with_events(self) -> list[str]:
        """Every query with events or an adjudication: those with projections to derive."""
        return [
            row[0]
            for row in self.conn.execute(
                f"SELECT query_id FROM events WHERE {UNPUBLISHED_HIDDEN} "
                f"UNION SELECT query_id FROM adjudications WHERE {UNPUBLISHED_HIDDEN}"
            )
        ]
