"""Labelling: the work queue and the actions, each one event in the log."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from goldset.eval.validation import control_character
from goldset.labeler import golden
from goldset.labeler.golden import Event
from goldset.labeler.store.corpus import published
from goldset.labeler.store.log import StaleTarget
from goldset.labeler.store.projections import (
    PROGRESS_SQL,
    TO_DO,
    Projections,
    QueryRecord,
    Rederivation,
    progress_summary,
)
from goldset.labeler.store.sampling import Sampling
from goldset.labeler.store.states import next_doc

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


def queue_rule(query: str) -> str:
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


def _skipped_by_me(query: str) -> str:
    """SQL: ``:annotator`` skipped the query whose id is the column ``query``."""
    return (
        "EXISTS (SELECT 1 FROM query_state k WHERE k.query_id = "
        f"{query} AND k.annotator = :annotator AND k.status = 'skipped')"
    )


def _wrapping(sql: str, lower: str) -> list[str]:
    """The open queries of a queue after position ``lower`` (SQL), then from its start: ``sql``
    with its ``{lower}`` filled in both ways."""
    return [sql.format(lower=lower), sql.format(lower="0")]


def _queue_sql(assigned: bool) -> list[str]:
    """The queries :meth:`Labelling.next_query` offers ``:annotator`` after ``:after``, best
    first, each SQL for at most one query id, for an annotator with assignments or without
    (the shared queue): a second opinion, then the drawn sample (open queries after
    ``:after`` in drawn order, wrapping around, then skipped ones), then the annotator's
    queue the same way."""
    if assigned:
        among = (
            "EXISTS (SELECT 1 FROM assignments a WHERE a.annotator = :annotator "
            "AND a.query_id = {query} AND a.open = 1)"
        )
        second = among.format(query="p.query_id")
        mine, skipped = (
            among.format(query="s.query_id"),
            (
                "EXISTS (SELECT 1 FROM assignments a WHERE a.annotator = :annotator "
                "AND a.query_id = s.query_id)"
            ),
        )
        queue = _wrapping(
            "SELECT query_id FROM assignments WHERE annotator = :annotator AND open = 1 "
            "AND position > {lower} AND query_id != :after ORDER BY position LIMIT 1",
            "coalesce((SELECT position FROM assignments WHERE query_id = :after "
            "AND annotator = :annotator), 0)",
        ) + [
            "SELECT s.query_id FROM query_state s JOIN assignments a "
            "ON a.query_id = s.query_id AND a.annotator = s.annotator "
            "WHERE s.annotator = :annotator AND s.status = 'skipped' AND s.query_id != :after "
            "ORDER BY s.last_event_id LIMIT 1"
        ]
    else:
        second = "NOT EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = p.query_id)"
        mine = skipped = f"{TO_DO} AND {queue_rule('s.query_id')}"
        queue = _wrapping(
            f"SELECT query_id FROM queries q WHERE {TO_DO} AND position > {{lower}} "
            f"AND query_id != :after AND NOT {_skipped_by_me('q.query_id')} "
            f"AND {queue_rule('q.query_id')} ORDER BY position LIMIT 1",
            "coalesce((SELECT position FROM queries WHERE query_id = :after), 0)",
        ) + [
            "SELECT s.query_id FROM query_state s JOIN queries q ON q.query_id = s.query_id "
            f"WHERE s.annotator = :annotator AND s.status = 'skipped' AND {TO_DO} "
            f"AND s.query_id != :after AND {queue_rule('s.query_id')} "
            "ORDER BY s.last_event_id LIMIT 1"
        ]
    sampled = "SELECT s.query_id FROM sample s JOIN queries q ON q.query_id = s.query_id "
    return [
        "SELECT p.query_id FROM second_opinions p WHERE p.first_annotator != :annotator "
        f"AND p.query_id != :after AND NOT {_skipped_by_me('p.query_id')} AND {second} "
        "ORDER BY p.position LIMIT 1",
        *_wrapping(
            f"{sampled}WHERE s.rank > {{lower}} AND s.query_id != :after AND {mine} "
            f"AND NOT {_skipped_by_me('s.query_id')} ORDER BY s.rank LIMIT 1",
            "coalesce((SELECT rank FROM sample WHERE query_id = :after), 0)",
        ),
        f"{sampled}JOIN query_state k ON k.query_id = s.query_id AND k.annotator = :annotator "
        f"WHERE k.status = 'skipped' AND s.query_id != :after AND {skipped} "
        "ORDER BY k.last_event_id LIMIT 1",
        *queue,
    ]


def _first_of(queries: list[str]) -> str:
    """SQL: the first query id that one of ``queries`` finds (each is run only when those
    before it found none: SQLite's coalesce stops at the first value)."""
    return "coalesce(" + ", ".join(f"({sql})" for sql in queries) + ")"


# The query Labelling.next_query offers: one statement, whichever queue applies.
_NEXT_QUERY_SQL = (
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM assignments WHERE annotator = :annotator) "
    f"THEN {_first_of(_queue_sql(assigned=True))} "
    f"ELSE {_first_of(_queue_sql(assigned=False))} END"
)


# The action Labelling.undo takes back for ``:annotator`` (on ``:scope`` only, unless NULL):
# their latest undoable action not undone yet, nor replayed by an import.
_LAST_UNDOABLE_SQL = (
    "SELECT id, query_id, doc_id, action, grade FROM events e WHERE annotator = :annotator "
    f"AND action IN ({', '.join(repr(action) for action in golden.UNDOABLE_ACTIONS)}) "
    "AND batch IS NULL AND (:scope IS NULL OR query_id = :scope) "
    "AND NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id) "
    "ORDER BY id DESC LIMIT 1"
)
# The history strip's states: ``:annotator``'s, of the queries ``:recent`` (a JSON array).
_RECENT_STATES_SQL = (
    "SELECT query_id, status, answerable, first_relevant_rank FROM query_state "
    "WHERE annotator = :annotator AND query_id IN (SELECT value FROM json_each(:recent))"
)
# What the label page shows of ``:annotator`` beside the queries (see Labelling.desk), each
# part one JSON value, in one statement.
_DESK_SQL = f"""
SELECT ({_NEXT_QUERY_SQL}) AS ahead,
  (SELECT json_object('id', id, 'query_id', query_id, 'doc_id', doc_id, 'action', action,
     'grade', grade) FROM ({_LAST_UNDOABLE_SQL})) AS last_action,
  (SELECT json_group_array(json_array(annotator, slice, state, n)) FROM ({PROGRESS_SQL}))
    AS progress,
  (SELECT json_group_array(json_array(query_id, status, answerable, first_relevant_rank))
   FROM ({_RECENT_STATES_SQL})) AS recent
"""


@dataclass(frozen=True)
class Desk:
    """What the label page shows of an annotator beside the queries themselves (see
    :meth:`Labelling.desk`): the query completing the open one leads to (``ahead``, see
    :meth:`Labelling.next_query`), the action Z would take back (``last_action``, see
    :meth:`Labelling.last_undoable`), their ``progress`` (see :meth:`Projections.progress`)
    and the states of their recent queries (``recent``, see :meth:`Labelling.recent_states`).
    """

    ahead: str | None
    last_action: dict | None
    progress: dict[str, dict[str, int]]
    recent: dict[str, dict]


class Labelling(Projections, Sampling):
    """Labelling: the work queue and the actions, each one event in the log."""

    def _refresh(
        self,
        query_id: str,
        annotators: Sequence[str] | None = None,
        record: QueryRecord | None = None,
    ) -> QueryRecord:
        """Re-derive the query's projections (see :meth:`Projections._refresh`), and whether
        it waits for a second annotator first: every path that refreshes a query after its
        events (actions, decisions, a new protocol, a rebuild) keeps the queue rule true."""
        record = super()._refresh(query_id, annotators, record)
        # With no judge named, second_opinions is empty: naming none empties it (trust_judge),
        # and only a named judge's disagreements fill it.
        if record.judge is not None:
            self._refresh_second_opinions([query_id])
        return record

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
            self._forget("settings")
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
            mode = mode or self._mode_of(query_id, annotator)
            doc_id = next_doc(self._context(query_id), self._grades(query_id, annotator), mode)
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
        return self._value(_NEXT_QUERY_SQL, {"annotator": annotator, "after": after or ""})

    def in_queue(self, annotator: str, query_id: str) -> bool:
        """Whether ``query_id`` is a query of the project in the annotator's queue: one of
        their assigned queries, or, for an annotator without assignments, one assigned to
        nobody (the shared queue). Every query :meth:`next_query` offers is. Roles are not
        the store's: who else may open any query is :func:`goldset.labeler.team.may_open`'s rule."""
        return bool(
            self._value(
                f"SELECT 1 FROM queries WHERE query_id = :query_id AND {queue_rule(':query_id')}",
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
            _RECENT_STATES_SQL, {"annotator": annotator, "recent": json.dumps(list(query_ids))}
        )
        return {row.pop("query_id"): row for row in rows}

    def desk(self, annotator: str, after: str | None, recent: Sequence[str]) -> Desk:
        """What the label page shows of ``annotator`` beside the queries (see :class:`Desk`),
        in one statement: the query after ``after`` (None: none open, and none fetched
        ahead) and the states of the ``recent`` queries."""
        (row,) = self._rows(
            _DESK_SQL,
            {"annotator": annotator, "after": after or "", "scope": None}
            | {"recent": json.dumps(list(recent))},
        )
        recent_states = {
            query_id: {"status": status, "answerable": answerable, "first_relevant_rank": first}
            for query_id, status, answerable, first in json.loads(row["recent"])
        }
        return Desk(
            ahead=row["ahead"] if after is not None else None,
            last_action=json.loads(row["last_action"]) if row["last_action"] else None,
            progress=progress_summary(json.loads(row["progress"]), annotator),
            recent=recent_states,
        )

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
        if mode not in golden.MODES:
            raise ValueError(f"mode must be one of {golden.MODES}, got {mode!r}")
        with self._writing():
            self._check_grade(grade)
            record = self._record(query_id, [annotator])
            if doc_id not in {candidate[0] for candidate in record.candidates}:
                raise ValueError(
                    f"doc {doc_id!r} is not a candidate of query {query_id!r} (use attach)"
                )
            if expected_grade is not ANY_GRADE:
                # Checked inside the write transaction: another tab's judgement either
                # committed before (and is seen here) or waits until this one is done.
                mine = record.states.get(annotator)
                now = mine.grades.get(doc_id) if mine else None
                if now != expected_grade:
                    raise StaleTarget(
                        f"doc {doc_id!r} of {query_id!r} was judged {now} meanwhile "
                        f"(the page showed {expected_grade})"
                    )
            judged = {"doc_id": doc_id, "grade": grade, "mode": mode, "seconds": seconds}
            return self._act(record, annotator, action="judge", **judged)

    def mark(self, query_id: str, action: str, annotator: str, seconds: float = 0.0) -> int:
        """Mark the query ``unanswerable`` (no answer exists in the corpus), a ``miss`` (an
        answer should exist but the candidates hold none) or ``skip`` it (it comes back at the
        end of the queue and is exported as skipped). Returns the event id."""
        if action not in ("unanswerable", "miss", "skip"):
            raise ValueError(f"action must be unanswerable, miss or skip, got {action!r}")
        with self._writing():
            record = self._record(query_id, [annotator])
            return self._act(record, annotator, action=action, seconds=seconds)

    def attach(
        self, query_id: str, doc_id: str, grade: int, annotator: str, seconds: float = 0.0
    ) -> int:
        """Attach a document found by search (not a candidate) with a grade — the answer the
        system missed. A relevant attached doc completes the query as a miss. Returns the
        event id."""
        with self._writing():
            self._check_grade(grade)
            record = self._record(query_id, [annotator])
            if not self._value("SELECT 1 FROM documents WHERE doc_id = ?", (doc_id,)):
                raise ValueError(f"unknown document {doc_id!r}")
            if doc_id in {candidate[0] for candidate in record.candidates}:
                raise ValueError(f"doc {doc_id!r} is a candidate of {query_id!r}: judge it instead")
            return self._act(
                record, annotator, action="attach", doc_id=doc_id, grade=grade, seconds=seconds
            )

    def set_note(self, query_id: str, annotator: str, text: str) -> int:
        """Set the annotator's note on a query (the latest note counts). Returns the event id."""
        if not isinstance(text, str):
            raise ValueError("a note must be a string")
        with self._writing():
            record = self._record(query_id, [annotator])
            return self._act(record, annotator, action="note", note=text)

    def last_undoable(self, annotator: str, query_id: str | None = None) -> dict | None:
        """The action :meth:`undo` would take back now (id, query_id, doc_id, action, grade),
        on any query or only on ``query_id``; None when there is nothing left to undo."""
        rows = self._rows(_LAST_UNDOABLE_SQL, {"annotator": annotator, "scope": query_id})
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
                self._record(undone["query_id"], [annotator]),
                annotator,
                action="undo",
                doc_id=undone["doc_id"],
                undoes=undone["id"],
            )
        return {**undone, "undo_event_id": undo_id}

    def _act(self, record: QueryRecord, annotator: str, **event: object) -> int:
        """Append one event of ``annotator`` on the record's query and refresh what it
        changes (inside the caller's write transaction, ``record`` read in it with the
        annotator's events); returns the event id. Marks and attachments take the
        annotator's current mode on the query.

        What one action writes — and so what one key press writes, in its one transaction
        (:meth:`Store.key_press`) — is listed here; each row after the event only when it
        changes:

        ====================  ============================================================
        ``events``            the event (the log; everything below is derived from it)
        ``labels``            the annotator's grades of the query's docs that changed
        ``query_state``       the annotator's state of the query (status, holes, verdict...)
        ``assignments``       ``open``, when the query is assigned to them
        ``progress``          the counters the annotator's and the golden status move between
        ``golden_judgments``  the query's golden grades, merged (:func:`golden.merge`)
        ``queries``           the golden status, answerability, mode and holes of the query
        ``second_opinions``   whether the query waits for a second annotator (a judge named)
        ``key_presses``       the press's (page, seq), for a key press (see :meth:`_writing`)
        ====================  ============================================================
        """
        if event["action"] in ("unanswerable", "miss", "skip", "attach"):
            mine = record.states.get(annotator)
            event["mode"] = mine.mode if mine else self.settings()["mode"]
        created_at = golden.now()
        event_id = self._append(
            record.query_id, annotator=annotator, created_at=created_at, **event
        )
        appended = Event(
            id=event_id,
            query_id=record.query_id,
            annotator=annotator,
            created_at=created_at,
            **{**event, "seconds": float(event.get("seconds", 0.0))},
        )
        self._refresh(record.query_id, [annotator], record.with_event(appended))
        return event_id
