"""Labelling: the work queue and the actions, each one event in the log."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from goldset.eval.validation import control_character
from goldset.labeler import golden
from goldset.labeler.pooling import (
    next_to_judge,
)
from goldset.labeler.store.connection import _marks
from goldset.labeler.store.corpus import published
from goldset.labeler.store.log import StaleTarget
from goldset.labeler.store.projections import TO_DO, Projections, Rederivation
from goldset.labeler.store.sampling import Sampling

ANY_GRADE = object()  # Store.judge without a compare-and-set on the doc's current grade
# SQLite's primary result codes for a write the file refused: SQLITE_READONLY, SQLITE_IOERR,
# SQLITE_FULL (an extended code carries its primary one in its low byte).
WRITE_REFUSED_CODES = {8, 10, 13}


def is_write_failure(error: BaseException) -> bool:
    """Whether ``error`` is an action's write that the file refused (full disk, read-only
    file, I/O error): nothing was written, and the same write may succeed once the cause is
    gone (see :class:`goldset.labeler.judging.WriteFailed`)."""
    code = getattr(error, "sqlite_errorcode", None)
    return (
        isinstance(error, sqlite3.Error) and code is not None and code & 0xFF in WRITE_REFUSED_CODES
    )


def _in_queue(query: str) -> str:
    """SQL: the query whose id is the column ``query`` is in the queue of ``:annotator`` —
    assigned to them, or, when they have no assignment, assigned to nobody (the shared
    queue). The one queue rule: what :meth:`Labelling.next_query` offers and what
    :meth:`Labelling.in_queue` allows."""
    return (
        "(EXISTS (SELECT 1 FROM assignments a WHERE a.annotator = :annotator "
        f"AND a.query_id = {query}) OR (NOT EXISTS (SELECT 1 FROM assignments a "
        "WHERE a.annotator = :annotator) AND NOT EXISTS (SELECT 1 FROM assignments a "
        f"WHERE a.query_id = {query})))"
    )


class Labelling(Projections, Sampling):
    """Labelling: the work queue and the actions, each one event in the log."""

    def _refresh(self, query_id: str, annotators: Sequence[str] | None = None) -> None:
        """Re-derive the query's projections (see :meth:`Projections._refresh`), and whether
        it waits for a second annotator first: every path that refreshes a query after its
        events (actions, decisions, a new protocol, a rebuild) keeps the queue rule true."""
        super()._refresh(query_id, annotators)
        self._refresh_second_opinions([query_id])

    def _publish_rederived(self, found: Rederivation) -> list[str]:
        """Write a bulk re-derivation (see :meth:`Projections._publish_rederived`), and
        whether the queries it changed wait for a second annotator, in one statement."""
        written = super()._publish_rederived(found)
        self._refresh_second_opinions(written)
        return written

    def configure(
        self,
        *,
        mode: str | None = None,
        max_grade: int | None = None,
        rel_threshold: int | None = None,
        depth: int | None = None,
        by: str = "cli",
    ) -> dict:
        """Change the labelling protocol; returns it whole. ``max_grade=1`` is a binary
        project; ``depth=0`` judges every candidate. A change is logged with ``by`` and the
        time (see :meth:`protocol_log`); settings given at their current value log nothing."""
        if mode is not None and mode not in golden.MODES:
            raise ValueError(f"mode must be one of {golden.MODES}, got {mode!r}")
        if control_character(by) is not None:  # the change log prints it, a line per change
            raise ValueError(f"who makes the change cannot hold a control character: {by!r}")
        for name, value, least in (
            ("max_grade", max_grade, 1),
            ("rel_threshold", rel_threshold, 1),
            ("depth", depth, 0),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < least
            ):
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        given = dict(mode=mode, max_grade=max_grade, rel_threshold=rel_threshold, depth=depth)
        # Every labelled query is re-derived under the new protocol outside the write lock
        # (see _rederive); the one transaction that changes the protocol writes what changed.
        settings, changes = self._new_protocol(given)
        if not changes:
            return settings
        with self._staging():
            return self._change_protocol(given, self._rederive(settings), by)

    def _change_protocol(self, given: dict, found: Rederivation, by: str) -> dict:
        """The one write transaction of :meth:`configure`: the new settings, their log entry
        and the labelled queries' projections re-derived under them (``found``)."""
        with self._writing() as conn:
            settings, changes = self._new_protocol(given)
            if not changes:
                return settings
            conn.executemany(
                "INSERT INTO settings (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [(key, str(value)) for key, value in changes.items()],
            )
            conn.execute(
                "INSERT INTO protocol_log (changed_by, changed_at, changes, settings) "
                "VALUES (?, ?, ?, ?)",
                (by, golden.now(), json.dumps(changes), json.dumps(settings)),
            )
            self._publish_rederived(found)
            # What counts as a disagreement, for every query; a new scale unbinds the trust.
            if changes.keys() & {"rel_threshold", "max_grade"}:
                self._refresh_second_opinions()
        return self.settings()

    def _new_protocol(self, given: dict) -> tuple[dict, dict]:
        """The protocol with the ``given`` settings (None: unchanged), and those that change
        it; ValueError when it would be inconsistent or below a grade already given."""
        before = self.settings()
        changes = {k: v for k, v in given.items() if v is not None and v != before[k]}
        settings = {**before, **changes}
        if settings["rel_threshold"] > settings["max_grade"]:
            raise ValueError(
                f"rel_threshold {settings['rel_threshold']} is above max_grade "
                f"{settings['max_grade']}: nothing could be relevant"
            )
        highest = self._value("SELECT max(grade) FROM labels") or 0
        if settings["max_grade"] < highest:
            raise ValueError(f"max_grade {settings['max_grade']} is below a grade given: {highest}")
        return settings, changes

    def next_candidate(self, query_id: str, annotator: str, mode: str | None = None) -> dict | None:
        """The candidate the annotator should judge next, or None when there is none left.

        First-hit mode: over a pool of several runs, the unjudged doc at the smallest rank
        among the runs whose first relevant doc is not yet known (see
        :func:`goldset.labeler.pooling.next_to_judge`); for one list, the first unjudged doc from
        the top, and None once a relevant one is found. Full mode: the first unjudged candidate.
        None with no relevant judgement means the annotator must choose unanswerable or miss
        (see :meth:`query_state`, ``needs_verdict``). ``mode`` defaults to the mode the
        annotator is using on this query, else the project's.
        """
        with self._reading():
            context = self._context(query_id)
            grades = self._grades(query_id, annotator)
            mode = mode or self._mode_of(query_id, annotator)
            display = sorted(context.positions, key=context.positions.get)
            if mode == "full":
                doc_id = next((d for d in display if d not in grades), None)
            else:
                candidate_grades = {d: g for d, g in grades.items() if d in context.positions}
                doc_id = next_to_judge(
                    context.rankings, candidate_grades, context.threshold, display
                )
        if doc_id is None:
            return None
        return next(c for c in self.candidates(query_id, annotator) if c["doc_id"] == doc_id)

    def next_query(self, annotator: str, after: str | None = None) -> str | None:
        """The next query for the annotator to work on, or None when nothing is left.

        First a query waiting for a second opinion (see :meth:`second_opinions`: a machine
        judge disagrees with the one annotator who judged it) — never to that annotator, nor
        to one who skipped it; blind, as every query is: nobody sees another's labels. Then
        open queries (not done, not skipped by this annotator), in queue order, starting
        after ``after`` and wrapping around; then the annotator's skipped queries, oldest
        skip first. An annotator with assignments gets only their assigned queries (blind to
        others' work); without assignments everyone shares one queue, and a query someone
        completed is no longer offered (but as a second opinion). ``after`` itself is never
        returned. Index-backed: no table scan per call (the second opinions are a table of
        their own, holding only the queries that wait for one).
        """
        with self._reading():
            assigned = self.conn.execute(
                "SELECT 1 FROM assignments WHERE annotator = ? LIMIT 1", (annotator,)
            ).fetchone()
            second = self._next_second_opinion(annotator, after, bool(assigned))
            if second is not None:
                return second
            sampled = self._next_sampled(annotator, after, bool(assigned))
            if sampled is not None:
                return sampled
            if assigned:
                return self._next_assigned(annotator, after)
            return self._next_shared(annotator, after)

    def _next_second_opinion(self, annotator: str, after: str | None, assigned: bool) -> str | None:
        among_queue = (
            "AND EXISTS (SELECT 1 FROM assignments a WHERE a.annotator = :annotator "
            "AND a.query_id = p.query_id AND a.open = 1) "
            if assigned
            else "AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = p.query_id) "
        )
        row = self.conn.execute(
            "SELECT p.query_id FROM second_opinions p WHERE p.first_annotator != :annotator "
            "AND p.query_id != :after AND NOT EXISTS (SELECT 1 FROM query_state s WHERE "
            "s.query_id = p.query_id AND s.annotator = :annotator AND s.status = 'skipped') "
            f"{among_queue}ORDER BY p.position LIMIT 1",
            {"annotator": annotator, "after": after or ""},
        ).fetchone()
        return row[0] if row else None

    def _next_sampled(self, annotator: str, after: str | None, assigned: bool) -> str | None:
        """In sampled labelling (see :meth:`draw_sample`), the next drawn query of the
        annotator's queue that is not labelled, in drawn order after ``after`` (wrapping
        around), else the drawn queries they skipped, oldest skip first: a skipped drawn query
        comes back before anything outside the sample. None when the sample holds no such
        query (or there is no sample): the ordinary queue follows."""
        if assigned:  # their open assignments: not done nor skipped by them
            mine = (
                "EXISTS (SELECT 1 FROM assignments a WHERE a.annotator = :annotator "
                "AND a.query_id = s.query_id AND a.open = 1)"
            )
            skipped = "EXISTS (SELECT 1 FROM assignments a WHERE a.annotator = :annotator "
            skipped += "AND a.query_id = s.query_id)"
        else:
            mine = f"{TO_DO} AND {_in_queue('s.query_id')}"
            skipped = mine
        by_me = (
            "(SELECT 1 FROM query_state k WHERE k.query_id = s.query_id "
            "AND k.annotator = :annotator AND k.status = 'skipped')"
        )
        return self._next_in_queue(
            "SELECT s.query_id FROM sample s JOIN queries q ON q.query_id = s.query_id "
            f"WHERE s.rank > :lower AND s.query_id != :after AND {mine} "
            f"AND NOT EXISTS {by_me} ORDER BY s.rank LIMIT 1",
            "SELECT s.query_id FROM sample s JOIN queries q ON q.query_id = s.query_id "
            "JOIN query_state k ON k.query_id = s.query_id AND k.annotator = :annotator "
            f"WHERE k.status = 'skipped' AND s.query_id != :after AND {skipped} "
            "ORDER BY k.last_event_id LIMIT 1",
            {
                "annotator": annotator,
                "after": after or "",
                "lower": self._queue_position("SELECT rank FROM sample WHERE query_id = ?", after),
            },
        )

    def _next_shared(self, annotator: str, after: str | None) -> str | None:
        start = self._queue_position("SELECT position FROM queries WHERE query_id = ?", after)
        return self._next_in_queue(
            f"SELECT query_id FROM queries q WHERE {TO_DO} AND position > :lower "
            "AND query_id != :after AND NOT EXISTS (SELECT 1 FROM query_state s WHERE "
            "s.query_id = q.query_id AND s.annotator = :annotator AND s.status = 'skipped') "
            f"AND {_in_queue('q.query_id')} ORDER BY position LIMIT 1",
            "SELECT s.query_id FROM query_state s JOIN queries q ON q.query_id = s.query_id "
            f"WHERE s.annotator = :annotator AND s.status = 'skipped' AND {TO_DO} "
            f"AND s.query_id != :after AND {_in_queue('s.query_id')} "
            "ORDER BY s.last_event_id LIMIT 1",
            {"annotator": annotator, "after": after or "", "lower": start},
        )

    def _next_assigned(self, annotator: str, after: str | None) -> str | None:
        start = self._queue_position(
            "SELECT position FROM assignments WHERE query_id = ? AND annotator = ?",
            after,
            annotator,
        )
        return self._next_in_queue(
            "SELECT query_id FROM assignments WHERE annotator = :annotator AND open = 1 "
            "AND position > :lower AND query_id != :after ORDER BY position LIMIT 1",
            "SELECT s.query_id FROM query_state s JOIN assignments a ON a.query_id = s.query_id "
            "AND a.annotator = s.annotator WHERE s.annotator = :annotator "
            "AND s.status = 'skipped' AND s.query_id != :after ORDER BY s.last_event_id LIMIT 1",
            {"annotator": annotator, "after": after or "", "lower": start},
        )

    def _next_in_queue(self, open_sql: str, skipped_sql: str, params: dict) -> str | None:
        """The first open query after position ``lower`` (wrapping around to the start of the
        queue), else the annotator's oldest skipped query."""
        for lower in (params["lower"], 0):
            row = self.conn.execute(open_sql, {**params, "lower": lower}).fetchone()
            if row:
                return row[0]
        row = self.conn.execute(skipped_sql, params).fetchone()
        return row[0] if row else None

    def _queue_position(self, sql: str, query_id: str | None, *params: str) -> int:
        if query_id is None:
            return 0
        row = self.conn.execute(sql, (query_id, *params)).fetchone()
        return row[0] if row else 0

    def in_queue(self, annotator: str, query_id: str) -> bool:
        """Whether ``query_id`` is a query of the project in the annotator's queue: one of
        their assigned queries, or, for an annotator without assignments, one assigned to
        nobody (the shared queue). Every query :meth:`next_query` offers is. Roles are not
        the store's: who else may open any query is :func:`goldset.labeler.team.may_open`'s rule."""
        return bool(
            self._value(
                f"SELECT 1 FROM queries WHERE query_id = :query_id AND {_in_queue(':query_id')}",
                {"query_id": query_id, "annotator": annotator},
            )
        )

    def previous_query(self, annotator: str, before: str | None = None) -> str | None:
        """The query the annotator worked on before ``before`` (most recent first), for going
        back; None when there is none. Without ``before``, their most recent query."""
        with self._reading():
            bound = None
            if before is not None:
                bound = self._value(
                    "SELECT last_event_id FROM query_state WHERE query_id = ? AND annotator = ?",
                    (before, annotator),
                )
            row = self.conn.execute(
                "SELECT query_id FROM query_state WHERE annotator = ? AND last_event_id < ? "
                f"AND query_id != ? AND {published()} ORDER BY last_event_id DESC LIMIT 1",
                (annotator, bound if bound is not None else 2**63 - 1, before or ""),
            ).fetchone()
        return row[0] if row else None

    def recent_queries(self, annotator: str, limit: int = 10) -> list[str]:
        """The queries the annotator acted on most recently, newest first (index-backed)."""
        return [
            row["query_id"]
            for row in self._rows(
                f"SELECT query_id FROM query_state WHERE annotator = ? AND {published()} "
                "ORDER BY last_event_id DESC LIMIT ?",
                (annotator, limit),
            )
        ]

    def recent_states(self, annotator: str, query_ids: Sequence[str]) -> dict[str, dict]:
        """Status, answerable and first_relevant_rank of some queries for the annotator, read
        from the maintained projection (cheap: the label page's history strip)."""
        rows = self._rows(
            "SELECT query_id, status, answerable, first_relevant_rank FROM query_state "
            f"WHERE annotator = ? AND query_id IN ({_marks(query_ids)})",
            (annotator, *query_ids),
        )
        return {row.pop("query_id"): row for row in rows}

    def resume_query(self, annotator: str) -> str | None:
        """Where the annotator left off: their most recent query if it is not finished for
        them, else :meth:`next_query`. What the app opens after a reload or a new login."""
        recent = self.previous_query(annotator)
        if recent is not None:
            status = self._value(
                "SELECT status FROM query_state WHERE query_id = ? AND annotator = ?",
                (recent, annotator),
            )
            if status in ("pending", "in_progress"):
                return recent
        return self.next_query(annotator)

    def judge(
        self,
        query_id: str,
        doc_id: str,
        grade: int,
        annotator: str,
        seconds: float = 0.0,
        mode: str = "first_hit",
        expected_grade: int | None | object = ANY_GRADE,
    ) -> int:
        """Record a grade for one of the query's candidates; returns the event id.

        When this returns, the judgement is committed (durable, see :class:`Store`). Grades
        run 0..max_grade (see :meth:`settings`); 0 is not relevant. Judging a doc again
        replaces its grade (both events stay in the log). With ``expected_grade`` (the
        annotator's grade of the doc as a page showed it, None = unjudged) the judgement is
        written only if that is still its grade, else :class:`StaleTarget` is raised and
        nothing is written.
        """
        self._check_grade(grade)
        if mode not in golden.MODES:
            raise ValueError(f"mode must be one of {golden.MODES}, got {mode!r}")
        with self._writing():
            if not self._value(
                "SELECT 1 FROM candidates WHERE query_id = ? AND doc_id = ?", (query_id, doc_id)
            ):
                raise ValueError(
                    f"doc {doc_id!r} is not a candidate of query {query_id!r} (use attach)"
                )
            if expected_grade is not ANY_GRADE:
                # Checked inside the write transaction: another tab's judgement either
                # committed before (and is seen here) or waits until this one is done.
                now = self._value(
                    "SELECT grade FROM labels WHERE query_id = ? AND annotator = ? AND doc_id = ?",
                    (query_id, annotator, doc_id),
                )
                if now != expected_grade:
                    raise StaleTarget(
                        f"doc {doc_id!r} of {query_id!r} was judged {now} meanwhile "
                        f"(the page showed {expected_grade})"
                    )
            return self._act(
                query_id,
                annotator,
                action="judge",
                doc_id=doc_id,
                grade=grade,
                mode=mode,
                seconds=seconds,
            )

    def mark(self, query_id: str, action: str, annotator: str, seconds: float = 0.0) -> int:
        """Mark the query ``unanswerable`` (no answer exists in the corpus), a ``miss`` (an
        answer should exist but the candidates hold none) or ``skip`` it (it comes back at the
        end of the queue and is exported as skipped). Returns the event id."""
        if action not in ("unanswerable", "miss", "skip"):
            raise ValueError(f"action must be unanswerable, miss or skip, got {action!r}")
        with self._writing():
            self._require_query(query_id)
            return self._act(query_id, annotator, action=action, seconds=seconds)

    def attach(
        self, query_id: str, doc_id: str, grade: int, annotator: str, seconds: float = 0.0
    ) -> int:
        """Attach a document found by search (not a candidate) with a grade — the answer the
        system missed. A relevant attached doc completes the query as a miss. Returns the
        event id."""
        self._check_grade(grade)
        with self._writing():
            self._require_query(query_id)
            if not self._value("SELECT 1 FROM documents WHERE doc_id = ?", (doc_id,)):
                raise ValueError(f"unknown document {doc_id!r}")
            if self._value(
                "SELECT 1 FROM candidates WHERE query_id = ? AND doc_id = ?", (query_id, doc_id)
            ):
                raise ValueError(f"doc {doc_id!r} is a candidate of {query_id!r}: judge it instead")
            return self._act(
                query_id, annotator, action="attach", doc_id=doc_id, grade=grade, seconds=seconds
            )

    def set_note(self, query_id: str, annotator: str, text: str) -> int:
        """Set the annotator's note on a query (the latest note counts). Returns the event id."""
        if not isinstance(text, str):
            raise ValueError("a note must be a string")
        with self._writing():
            self._require_query(query_id)
            return self._act(query_id, annotator, action="note", note=text)

    def last_undoable(self, annotator: str, query_id: str | None = None) -> dict | None:
        """The action :meth:`undo` would take back now (id, query_id, doc_id, action, grade),
        on any query or only on ``query_id``; None when there is nothing left to undo."""
        undoable = ", ".join(f"'{action}'" for action in golden.UNDOABLE_ACTIONS)
        with self._reading():
            rows = self._rows(
                "SELECT id, query_id, doc_id, action, grade FROM events e WHERE annotator = ? "
                f"AND action IN ({undoable}) AND batch IS NULL "  # not what an import replayed
                "AND (? IS NULL OR query_id = ?) "
                "AND NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id) "
                "ORDER BY id DESC LIMIT 1",
                (annotator, query_id, query_id),
            )
        return rows[0] if rows else None

    def undo(self, annotator: str, query_id: str | None = None) -> dict | None:
        """Undo the annotator's latest action not yet undone (judge, attach, unanswerable,
        miss or skip) — on whatever query it was, or only on ``query_id``: call again to go
        further back. Appends an undo event. Returns the undone event (id, query_id, doc_id,
        action, grade) plus ``undo_event_id``, or None when there is nothing left to undo."""
        with self._writing():
            undone = self.last_undoable(annotator, query_id)
            if undone is None:
                return None
            undo_id = self._act(
                undone["query_id"],
                annotator,
                action="undo",
                doc_id=undone["doc_id"],
                undoes=undone["id"],
            )
        return {**undone, "undo_event_id": undo_id}

    def _act(self, query_id: str, annotator: str, **event: object) -> int:
        """Append one event and re-derive the query's projections for the annotator (inside
        the caller's write transaction). Marks and attachments take the annotator's current
        mode on the query. Returns the event id."""
        if event["action"] in ("unanswerable", "miss", "skip", "attach"):
            event["mode"] = self._mode_of(query_id, annotator)
        event_id = self._append(query_id, annotator=annotator, **event)
        self._refresh(query_id, [annotator])
        return event_id
