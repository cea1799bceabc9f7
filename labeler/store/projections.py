"""Projections of the log (labels, query state, progress, the golden projection), refreshed
with each event."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from goldset.labeler import golden
from goldset.labeler.golden import Decision, Event, GoldenLabel, QueryContext, QueryState
from goldset.labeler.store.connection import chunks, qmarks
from goldset.labeler.store.corpus import UNPUBLISHED_HIDDEN, published
from goldset.labeler.store.golden_rows import (
    golden_labels,
    golden_rows,
    stored_decision,
    stored_label,
    stored_state,
    unpacked,
    write_golden,
)
from goldset.labeler.store.log import CANDIDATES_JSON, RANKS_JSON, LogMark, query_context
from goldset.labeler.store.states import EXACT, STORED_STATE_JSON, States


def progress_key(status: str, answerable: bool) -> str:
    """The ``progress`` counter a status counts in: a done query called unanswerable
    counts apart."""
    return "unanswerable" if status == "done" and not answerable else status


def _counter(state: QueryState | GoldenLabel) -> str:
    """The progress counter a state or a golden label counts in."""
    return progress_key(state.status, state.answerable)


# The non-zero ``progress`` counters of ``:annotator`` and of the golden status ('').
PROGRESS_SQL = (
    "SELECT annotator, slice, state, n FROM progress WHERE annotator IN ('', :annotator) AND n != 0"
)


def progress_summary(rows: Sequence[Sequence], annotator: str | None) -> dict[str, dict[str, int]]:
    """:meth:`Projections.progress` of the counters ``rows`` (annotator, slice, state, n) of
    ``annotator`` (None: of the golden status) and of the golden status."""
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for name, slice_name, state, n in rows:
        counts.setdefault(name, {}).setdefault(slice_name, {})[state] = n
    golden_counts = counts.get("", {})
    if annotator is None:
        return {s: _progress_summary(c, sum(c.values())) for s, c in golden_counts.items()}
    mine = counts.get(annotator, {})
    has_assignments = any(states.get("assigned") for states in mine.values())
    summary = {}
    for slice_name in sorted(set(golden_counts) | set(mine)):
        states = mine.get(slice_name, {})
        total = (
            states.get("assigned", 0)
            if has_assignments
            else sum(golden_counts.get(slice_name, {}).values())
        )
        summary[slice_name] = _progress_summary(states, total)
    return summary


def _progress_summary(counts: Mapping[str, int], total: int) -> dict[str, int]:
    unanswerable = counts.get("unanswerable", 0)
    done = counts.get("done", 0) + unanswerable
    skipped, in_progress = counts.get("skipped", 0), counts.get("in_progress", 0)
    return {
        "total": total,
        "done": done,
        "unanswerable": unanswerable,
        "skipped": skipped,
        "in_progress": in_progress,
        "pending": total - done - skipped - in_progress,
    }


STATE_COLUMNS = (
    *("query_id", "annotator", "slice", "status", "answerable", "needs_verdict", "mode"),
    *("first_relevant_rank", "judged_depth", "seconds", "last_event_id", "updated_at", "note"),
    "holes",
)
_STATE_SQL = (
    f"INSERT OR REPLACE INTO query_state ({', '.join(STATE_COLUMNS)}) "
    f"VALUES ({qmarks(STATE_COLUMNS)})"
)
LABEL_COLUMNS = ("query_id", "annotator", "doc_id", "grade", "event_id")
_LABEL_SQL = f"INSERT INTO labels ({', '.join(LABEL_COLUMNS)}) VALUES ({qmarks(LABEL_COLUMNS)})"
_FROM_EVENTS = ("seconds", "last_event_id", "updated_at", "note")  # of a state: events alone


def _state_row(query_id: str, annotator: str, slice_name: str, state: QueryState) -> tuple:
    """The ``query_state`` row of a state (see :data:`_STATE_SQL`)."""
    return (
        *(query_id, annotator, slice_name, state.status, int(state.answerable)),
        *(int(state.needs_verdict), state.mode, state.first_relevant_position, state.judged_depth),
        *(state.seconds, state.last_event_id, state.updated_at, state.note, state.holes),
    )


def _label_rows(query_id: str, annotator: str, state: QueryState) -> list[tuple]:
    """The ``labels`` rows of a state (see :data:`_LABEL_SQL`)."""
    return [
        (query_id, annotator, doc_id, grade, state.label_events[doc_id])
        for doc_id, grade in state.grades.items()
    ]


def _label_changes(
    query_id: str, annotator: str, old: QueryState | None, state: QueryState
) -> tuple[list[str], list[tuple]]:
    """What replacing the stored state ``old`` (None: none) by ``state`` changes in
    ``labels``: the docs whose label is gone, and the rows that are new or changed."""
    before = {} if old is None else {d: (old.grades[d], e) for d, e in old.label_events.items()}
    gone = [doc_id for doc_id in before if doc_id not in state.grades]
    rows = _label_rows(query_id, annotator, state)
    return gone, [row for row in rows if before.get(row[2]) != row[3:]]


def _tally(counts: dict[tuple[str, str, str], int], key: tuple[str, str, str], delta: int) -> None:
    """Add ``delta`` to the progress counter ``key`` of ``counts``."""
    counts[key] = counts.get(key, 0) + delta


def _is_open(state: QueryState) -> int:
    """``assignments.open`` for a state: the query is still to do for the annotator (not
    done nor skipped, or done with holes left)."""
    return int(state.status not in ("done", "skipped") or bool(state.holes))


# SQL over ``queries q``: the query has work left — not done, or done with holes (docs a
# pooled run ranks above its first relevant one, unjudged). Matches the queries_open index.
TO_DO = "(q.status != 'done' OR q.holes > 0)"

CATCH_UPS = 3  # passes over the queries acted on while a re-derivation ran (see _rederive)

STAGED = "goldset_staged_"  # prefix of an import's TEMP tables (see Imports._stage_rows)
REDERIVED = STAGED + "rederived_"  # ...and of a re-derivation's, dropped with them

# The columns of a state that the candidates and the protocol decide (the others are the
# keys, the slice and _FROM_EVENTS): all that a re-derivation changes in a stored state.
_RECOMPUTED = (
    *("status", "answerable", "needs_verdict", "mode", "first_relevant_rank", "judged_depth"),
    "holes",
)
# A re-derivation's rows, staged in TEMP tables of the connection (see Projections._rederive):
# table -> columns. "states" rows with ``whole`` 0 differ from the stored state only in
# _RECOMPUTED; the others are new, or differ in what only events decide.
_REDERIVED_COLUMNS = {
    "states": (*STATE_COLUMNS, "whole"),
    "label_keys": ("query_id", "annotator"),
    "labels": LABEL_COLUMNS,
    "opens": ("query_id", "annotator", "open"),
    "golden_keys": ("query_id",),
    "golden": ("query_id", "doc_id", "grade", "seq", "source", "decision_id"),
    "heads": ("query_id", "status", "answerable", "golden_mode", "holes"),
}


@dataclass
class Rederivation:
    """What re-deriving some queries' projections outside the write lock found changed
    (see :meth:`Projections._rederive`): rows per table, each starting with its query id,
    until they are staged for the publishing transaction, and the progress deltas per
    query."""

    mark: LogMark  # what it covers: events and decisions up to it, imports published up to it
    settings: dict  # the protocol it derived under
    scope: Collection[str] | None  # queries the change concerns (None: all)
    rows: dict[str, list[tuple]] = field(
        default_factory=lambda: {table: [] for table in _REDERIVED_COLUMNS}
    )
    counts: dict[str, dict[tuple[str, str, str], int]] = field(default_factory=dict)
    total: dict[tuple[str, str, str], int] = field(default_factory=dict)  # of every query
    stated: set[str] = field(default_factory=set)  # the queries whose states change

    def count(self, query_id: str, key: tuple[str, str, str], delta: int) -> None:
        """Add ``delta`` to the query's share of the progress counter ``key``."""
        mine = self.counts.setdefault(query_id, {})
        mine[key] = mine.get(key, 0) + delta
        self.total[key] = self.total.get(key, 0) + delta

    def changed(
        self,
        query_id: str,
        annotator: str,
        slice_name: str,
        state: QueryState,
        old: QueryState | None,
    ) -> None:
        """Record the rows that replace the stored state ``old`` (None: none) by ``state``."""
        row = _state_row(query_id, annotator, slice_name, state)
        whole = old is None or any(
            getattr(old, name) != getattr(state, name) for name in _FROM_EVENTS
        )
        self.rows["states"].append((*row, int(whole)))
        self.stated.add(query_id)
        if old is None or (old.grades, old.label_events) != (state.grades, state.label_events):
            self.rows["label_keys"].append((query_id, annotator))
            self.rows["labels"] += _label_rows(query_id, annotator, state)
        if old is None or _is_open(old) != _is_open(state):
            self.rows["opens"].append((query_id, annotator, _is_open(state)))
        if old is not None:
            self.count(query_id, (annotator, slice_name, _counter(old)), -1)
        self.count(query_id, (annotator, slice_name, _counter(state)), 1)

    def relabelled(
        self, query_id: str, slice_name: str, label: GoldenLabel, before: GoldenLabel
    ) -> None:
        """Record the rows that replace the golden label ``before`` by ``label``."""
        replaced, rows, heads = golden_rows([(query_id, label)], {query_id: before})
        self.rows["golden_keys"] += replaced
        self.rows["golden"] += rows
        self.rows["heads"] += heads
        if _counter(before) != _counter(label):
            self.count(query_id, ("", slice_name, _counter(before)), -1)
            self.count(query_id, ("", slice_name, _counter(label)), 1)

    def forget(self, query_ids: Collection[str]) -> None:
        """Drop the deltas and changes it counts of these queries (to derive them again)."""
        for query_id in query_ids:
            for key, delta in self.counts.pop(query_id, {}).items():
                self.total[key] -= delta
        self.stated.difference_update(query_ids)

    def written(self, redo: Collection[str]) -> list[str]:
        """The queries whose states it changes, but those in ``redo``."""
        return list(self.stated.difference(redo))

    def counts_but(self, redo: Collection[str]) -> dict[tuple[str, str, str], int]:
        """The progress deltas of every query but those in ``redo`` (computed beforehand:
        the few queries redone are taken out)."""
        total = dict(self.total)
        for query_id in redo:
            for key, delta in self.counts.get(query_id, {}).items():
                total[key] -= delta
        return total


# What _refresh reads of a query ``:query_id``, in one statement: each part a JSON value.
_EVENT_JSON = (
    "json_object('id', e.id, 'query_id', e.query_id, 'annotator', e.annotator, "
    "'action', e.action, 'doc_id', e.doc_id, 'grade', e.grade, 'mode', e.mode, "
    f"'seconds', {EXACT.format('e.seconds')}, 'note', e.note, 'undoes', e.undoes, "
    "'created_at', e.created_at)"
)
_THEIRS = "(:everyone OR {table}.annotator IN (SELECT value FROM json_each(:annotators)))"
_RECORD_SQL = f"""
SELECT q.slice, q.status, q.answerable, q.golden_mode, q.holes,
  {CANDIDATES_JSON} AS candidates,
  {RANKS_JSON} AS ranks,
  (SELECT json_group_array(json_array(s.annotator, {STORED_STATE_JSON}))
   FROM query_state s WHERE s.query_id = q.query_id) AS states,
  (SELECT json_group_array(json_array(l.annotator, l.doc_id, l.grade, l.event_id))
   FROM labels l WHERE l.query_id = q.query_id) AS labels,
  (SELECT json_group_array(json_array(g.doc_id, g.grade, g.seq, g.source, g.decision_id))
   FROM golden_judgments g WHERE g.query_id = q.query_id) AS golden,
  (SELECT json_object('id', a.id, 'query_id', a.query_id, 'reviewer', a.reviewer,
     'judgments', a.judgments, 'answerable', a.answerable, 'adopted', a.adopted,
     'note', a.note, 'created_at', a.created_at)
   FROM adjudications a WHERE a.query_id = q.query_id ORDER BY a.id DESC LIMIT 1) AS decision,
  (SELECT json_group_array({_EVENT_JSON}) FROM events e
   WHERE e.query_id = q.query_id AND {_THEIRS.format(table="e")}) AS events,
  (SELECT json_group_object(a.annotator, a.open) FROM assignments a
   WHERE a.query_id = q.query_id AND {_THEIRS.format(table="a")}) AS opens,
  (SELECT value FROM settings WHERE key = 'second_opinion_judge') AS judge
FROM queries q WHERE q.query_id = :query_id
"""


@dataclass(frozen=True)
class QueryRecord:
    """What refreshing a query's projections reads (see :meth:`Projections._refresh`), in one
    statement: its context (candidates, ranks), its stored projection (every annotator's
    state with its labels, the golden label, ``assignments.open`` of the annotators read),
    the decision that counts, and the events of the annotators read (all of them, or those
    asked for), oldest first. ``judge``: the machine judge named for second opinions, if any.
    """

    query_id: str
    slice: str
    candidates: list[tuple]
    ranks: list[tuple]
    states: dict[str, QueryState]
    golden: GoldenLabel
    decision: Decision | None
    events: dict[str, list[Event]]
    opens: dict[str, int]
    judge: str | None

    @classmethod
    def of(cls, query_id: str, row: Mapping) -> QueryRecord:
        """The record of a row of :data:`_RECORD_SQL`."""
        labels: dict[str, list[tuple[str, int, int]]] = {}
        for annotator, doc_id, grade, event_id in sorted(
            json.loads(row["labels"]), key=lambda label: label[3]
        ):
            labels.setdefault(annotator, []).append((doc_id, grade, event_id))
        events: dict[str, list[Event]] = {}
        for event in sorted(json.loads(row["events"]), key=lambda event: event["id"]):
            events.setdefault(event["annotator"], []).append(Event(**event))
        head = (row["status"], row["answerable"], row["golden_mode"], row["holes"])
        return cls(
            query_id,
            row["slice"],
            [tuple(candidate) for candidate in json.loads(row["candidates"])],
            [tuple(rank) for rank in json.loads(row["ranks"])],
            {
                annotator: stored_state(state, labels.get(annotator, []))
                for annotator, state in json.loads(row["states"])
            },
            stored_label(head, json.loads(row["golden"])),
            stored_decision(json.loads(row["decision"])) if row["decision"] else None,
            events,
            json.loads(row["opens"]),
            row["judge"],
        )

    @property
    def acting(self) -> list[str]:
        """The annotators whose events it holds."""
        return sorted(self.events)

    def with_event(self, event: Event) -> QueryRecord:
        """The record with one more event, appended since it was read."""
        mine = [*self.events.get(event.annotator, []), event]
        return replace(self, events={**self.events, event.annotator: mine})


class Projections(States):
    """Projections of the log (labels, query state, progress), refreshed with each event."""

    def _refresh(
        self,
        query_id: str,
        annotators: Sequence[str] | None = None,
        record: QueryRecord | None = None,
    ) -> QueryRecord:
        """Re-derive the projections of ``query_id`` for these annotators (default: everyone
        who acted on it) from the log, then its golden label (:func:`goldset.labeler.golden.merge`,
        the one merge rule) into the golden projection. Inside a write transaction.

        ``record``: the query as :meth:`_record` read it in this transaction, with any event
        appended since (see :meth:`Labelling._act`); read here when not given. Returns it.
        Writes only what changed (the list: :meth:`Labelling._act`).
        """
        if record is None:
            record = self._record(query_id, annotators)
        context = query_context(record.candidates, record.ranks, self.settings())
        acting = record.acting if annotators is None else annotators
        fresh = {
            annotator: golden.derive_state(record.events.get(annotator, []), context)
            for annotator in acting
        }
        counts: dict[tuple[str, str, str], int] = {}
        for annotator, state in fresh.items():
            self._store_state(record, annotator, state, counts)
        # The annotators not refreshed count as stored (none are left when everyone was).
        others = {} if annotators is None else record.states
        label = golden.merge({**others, **fresh}, record.decision, context)
        _tally(counts, ("", record.slice, _counter(record.golden)), -1)
        _tally(counts, ("", record.slice, _counter(label)), 1)
        self._add_counts(counts)
        write_golden(self.conn, [(query_id, label)], {query_id: record.golden})
        return record

    def _record(self, query_id: str, annotators: Sequence[str] | None = None) -> QueryRecord:
        """What :meth:`_refresh` reads of a query, in one statement (see :class:`QueryRecord`):
        the events of ``annotators`` (None: everyone's). ValueError for an unknown query."""
        row = self._rows(
            _RECORD_SQL,
            {
                "query_id": query_id,
                "everyone": annotators is None,
                "annotators": json.dumps(list(annotators or ())),
            },
        )
        if not row:
            raise ValueError(f"unknown query {query_id!r}")
        return QueryRecord.of(query_id, row[0])

    def _rederive(
        self,
        settings: Mapping[str, object],
        scope: Collection[str] | None = None,
        context: Callable[[str], QueryContext] | None = None,
    ) -> Rederivation:
        """Re-derive the projections of the labelled queries of ``scope`` (every query whose
        projections a change concerns; None: all) as :meth:`_refresh` would under
        ``settings`` (and each query's ``context``, default: read from the store), OUTSIDE
        the write lock, keeping only what differs from the stored ones, staged in TEMP
        tables (inside :meth:`_staging`) for :meth:`_publish_rederived` to write. The
        queries acted on meanwhile are derived again, up to :data:`CATCH_UPS` times, so that
        few are left for the publishing transaction."""
        with self._reading():
            mark = self._log_mark()  # no later than the queries it covers
            pending = self._labelled_in(scope)
        found = Rederivation(mark, dict(settings), scope)
        with self._scratch() as conn:  # TEMP tables: no lock taken
            for table, columns in _REDERIVED_COLUMNS.items():
                conn.execute(f"DROP TABLE IF EXISTS temp.{REDERIVED}{table}")
                conn.execute(f"CREATE TEMP TABLE {REDERIVED}{table} ({', '.join(columns)})")
        for catch_up in range(CATCH_UPS + 1):
            self._derive(found, pending, context)
            with self._reading():
                now, acted = self._log_mark(), self._acted_since(found.mark)
            pending = sorted(acted if scope is None else acted & set(scope))
            if not pending or catch_up == CATCH_UPS:
                break
            # what is derived now covers the log up to ``now``; an import published since
            # the first pass still voids it all (see _publish_rederived)
            found.mark = replace(now, batches=found.mark.batches)
        return found

    def _derive(
        self,
        found: Rederivation,
        query_ids: Sequence[str],
        context: Callable[[str], QueryContext] | None,
    ) -> None:
        """Derive these queries' projections into ``found`` and its TEMP tables (see
        :meth:`_rederive`), in place of what they held of them."""
        found.forget(set(query_ids))
        for chunk in chunks(list(query_ids)):
            with self._reading():
                contexts = (
                    {q: context(q) for q in chunk}
                    if context is not None
                    else self._contexts(chunk, found.settings)
                )
                events = self._events_of(chunk)
                stored, befores = self._states(chunk), self._golden(chunk)
                decisions = self._decisions(chunk)
                slices = dict(
                    self.conn.execute(
                        f"SELECT query_id, slice FROM queries WHERE query_id IN ({qmarks(chunk)})",
                        chunk,
                    ).fetchall()
                )
            for query_id in chunk:
                fresh = {
                    annotator: golden.derive_state(mine, contexts[query_id])
                    for annotator, mine in events.get(query_id, {}).items()
                }
                slice_name = slices[query_id]
                for annotator, state in fresh.items():
                    old = stored.get(query_id, {}).get(annotator)
                    if state != old:
                        found.changed(query_id, annotator, slice_name, state, old)
                label = golden.merge(fresh, decisions.get(query_id), contexts[query_id])
                if label != befores[query_id]:
                    found.relabelled(query_id, slice_name, label, befores[query_id])
        with self._scratch() as conn:
            for table, columns in _REDERIVED_COLUMNS.items():
                conn.execute(
                    f"DELETE FROM temp.{REDERIVED}{table} WHERE query_id IN "
                    "(SELECT value FROM json_each(?))",
                    (json.dumps(list(query_ids)),),
                )
                conn.executemany(
                    f"INSERT INTO temp.{REDERIVED}{table} VALUES ({qmarks(columns)})",
                    found.rows[table],
                )
                found.rows[table] = []

    @contextmanager
    def _staging(self) -> Iterator[None]:
        """Room for an import's or a re-derivation's TEMP tables (see
        :meth:`Imports._stage_rows`, :meth:`_rederive`), dropped at the end."""
        try:
            yield
        finally:
            with self._scratch() as conn:
                for (name,) in conn.execute(
                    "SELECT name FROM temp.sqlite_master WHERE type = 'table' AND name LIKE ?",
                    (STAGED + "%",),
                ).fetchall():
                    conn.execute(f"DROP TABLE temp.{name}")

    def _publish_rederived(self, found: Rederivation) -> list[str]:
        """Inside the publishing write transaction: write what :meth:`_rederive` staged, a
        statement per table, and re-derive here (:meth:`_refresh`) the queries of its scope
        that were acted on since its mark, from their newest events. When the protocol or
        the candidates may have changed meanwhile (another protocol change, an import
        published), every labelled query of the scope is re-derived here instead. Returns
        the queries written in bulk whose states changed."""
        if self.settings() != found.settings or self._log_mark().batches != found.mark.batches:
            for query_id in self._labelled_in(found.scope):
                self._refresh(query_id)
            return []
        acted = self._acted_since(found.mark)
        redo = acted if found.scope is None else acted & set(found.scope)
        params = {"redo": json.dumps(sorted(redo))}
        kept = "t.query_id NOT IN (SELECT value FROM json_each(:redo))"

        def staged(table: str, columns: Sequence[str] | None = None) -> str:
            names = ", ".join(f"t.{name}" for name in columns or _REDERIVED_COLUMNS[table])
            return f"SELECT {names} FROM temp.{REDERIVED}{table} t WHERE {kept}"

        recomputed = ", ".join(f"{name} = t.{name}" for name in _RECOMPUTED)
        for sql in (
            f"DELETE FROM labels WHERE (query_id, annotator) IN ({staged('label_keys')})",
            f"INSERT INTO labels ({', '.join(LABEL_COLUMNS)}) {staged('labels')}",
            f"INSERT OR REPLACE INTO query_state ({', '.join(STATE_COLUMNS)}) "
            f"{staged('states', STATE_COLUMNS)} AND t.whole",
            f"UPDATE query_state AS s SET {recomputed} FROM temp.{REDERIVED}states t "
            f"WHERE s.query_id = t.query_id AND s.annotator = t.annotator AND NOT t.whole "
            f"AND {kept}",
            f"UPDATE assignments AS a SET open = t.open FROM temp.{REDERIVED}opens t "
            f"WHERE a.query_id = t.query_id AND a.annotator = t.annotator AND {kept}",
            f"DELETE FROM golden_judgments WHERE query_id IN ({staged('golden_keys')})",
            f"INSERT INTO golden_judgments ({', '.join(_REDERIVED_COLUMNS['golden'])}) "
            f"{staged('golden')}",
            "UPDATE queries AS q SET status = t.status, answerable = t.answerable, "
            f"golden_mode = t.golden_mode, holes = t.holes FROM temp.{REDERIVED}heads t "
            f"WHERE q.query_id = t.query_id AND {kept}",
        ):
            self.conn.execute(sql, params)
        self._add_counts(found.counts_but(redo))
        for query_id in sorted(redo):
            self._refresh(query_id)
        return found.written(redo)

    def _labelled_in(self, scope: Collection[str] | None) -> list[str]:
        """The queries with events or a decision, of ``scope`` (None: all)."""
        labelled = self._all_query_ids_with_events()
        return labelled if scope is None else [q for q in labelled if q in scope]

    def _refresh_golden(self, query_ids: Sequence[str]) -> None:
        """Re-merge the golden labels of these queries from their stored states and decisions
        (rows written in bulk, as an import's), into the golden projection."""
        write_golden(self.conn, golden_labels(self.conn, query_ids))

    def _store_state(
        self,
        record: QueryRecord,
        annotator: str,
        state: QueryState,
        counts: dict[tuple[str, str, str], int],
    ) -> None:
        """Write one annotator's fresh state of the record's query: its row, the labels that
        changed, ``assignments.open`` if it changed, and its progress deltas into ``counts``."""
        query_id, old = record.query_id, record.states.get(annotator)
        if old is not None:
            _tally(counts, (annotator, record.slice, _counter(old)), -1)
        _tally(counts, (annotator, record.slice, _counter(state)), 1)
        gone, changed = _label_changes(query_id, annotator, old, state)
        if gone:
            self.conn.execute(
                "DELETE FROM labels WHERE query_id = ? AND annotator = ? AND doc_id IN "
                "(SELECT value FROM json_each(?))",
                (query_id, annotator, json.dumps(gone)),
            )
        if changed:
            self.conn.execute(
                f"INSERT OR REPLACE INTO labels {unpacked(5)}", (json.dumps(changed),)
            )
        self.conn.execute(_STATE_SQL, _state_row(query_id, annotator, record.slice, state))
        if record.opens.get(annotator, _is_open(state)) != _is_open(state):
            self.conn.execute(
                "UPDATE assignments SET open = ? WHERE annotator = ? AND query_id = ?",
                (_is_open(state), annotator, query_id),
            )

    def _count(self, annotator: str, slice_name: str, state: str, delta: int) -> None:
        """Add ``delta`` to one ``progress`` counter."""
        self._add_counts({(annotator, slice_name, state): delta})

    def _add_counts(self, counts: Mapping[tuple[str, str, str], int]) -> None:
        """Add to the ``progress`` counters, (annotator, slice, state) -> delta, in one
        statement (none when every delta is 0)."""
        rows = [(*key, n) for key, n in counts.items() if n]
        if rows:
            self.conn.execute(
                "INSERT INTO progress (annotator, slice, state, n) "
                f"{unpacked(4)} WHERE true "  # WHERE: the upsert's parsing needs it after FROM
                "ON CONFLICT (annotator, slice, state) DO UPDATE SET n = n + excluded.n",
                (json.dumps(rows),),
            )

    def _after_migrating(self) -> None:
        """Re-derive, once, every labelled query's projections when a migration marked them
        stale (``stale_projections``: derived under an older rule), as a protocol change
        does: outside the write lock, then one transaction writes what changed and clears
        the mark (unless another process did it meanwhile: the deltas are counted once)."""
        if not self._value("SELECT EXISTS (SELECT 1 FROM stale_projections)"):
            return
        with self._staging():
            found = self._rederive(self.settings())
            with self._writing() as conn:
                if conn.execute("DELETE FROM stale_projections").rowcount:
                    self._publish_rederived(found)

    def rebuild_projections(self) -> None:
        """Recompute every projection (labels, query states, counts, the golden projection)
        from the log alone. The result must equal what the incremental updates produced.
        Waits for a running import or pool (whose staged rows it would otherwise delete)."""
        with self._import_lock(), self._writing() as conn:
            for table in ("labels", "query_state", "progress", "golden_judgments"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM stale_projections")  # re-derived here
            conn.execute(
                "UPDATE queries SET status = 'pending', answerable = 1, golden_mode = NULL, "
                "holes = 0"
            )
            conn.execute("UPDATE assignments SET open = 1")
            conn.executemany(
                "INSERT INTO progress (annotator, slice, state, n) VALUES ('', ?, 'pending', ?)",
                conn.execute("SELECT slice, count(*) FROM queries GROUP BY slice").fetchall(),
            )
            conn.executemany(
                "INSERT INTO progress (annotator, slice, state, n) VALUES (?, ?, 'assigned', ?)",
                conn.execute(
                    "SELECT a.annotator, q.slice, count(*) FROM assignments a "
                    "JOIN queries q ON q.query_id = a.query_id GROUP BY a.annotator, q.slice"
                ).fetchall(),
            )
            for query_id in self._all_query_ids_with_events():
                self._refresh(query_id)

    def progress(self, annotator: str | None = None) -> dict[str, dict[str, int]]:
        """Counts per slice ("" = no slice): total, done (unanswerable included), unanswerable,
        skipped, in_progress, pending.

        With no annotator, the golden status of every query. For an annotator, their own work:
        total is their assigned queries (all queries when they have no assignments). Read from
        maintained counters, in one statement: cheap at any size.
        """
        rows = self._rows(PROGRESS_SQL, {"annotator": annotator or ""})
        return progress_summary([tuple(row.values()) for row in rows], annotator)

    def status(self) -> dict:
        """The project at a glance: golden progress per slice, judgements (current labels),
        events, annotators who acted, documents, pooled runs, and the settings."""
        with self._reading():
            return {
                "path": str(self.path),
                "queries": self._value("SELECT count(*) FROM queries"),
                "slices": self.progress(),
                "judgements": self._value(f"SELECT count(*) FROM labels WHERE {published()}"),
                "events": self._value(f"SELECT count(*) FROM events WHERE {UNPUBLISHED_HIDDEN}"),
                "annotators": [
                    row[0]
                    for row in self.conn.execute(
                        f"SELECT DISTINCT annotator FROM query_state WHERE {published()} "
                        "ORDER BY annotator"
                    )
                ],
                "documents": self._value("SELECT count(*) FROM documents"),
                "runs": self._rows("SELECT name, depth, sha256, pooled_at FROM runs ORDER BY name"),
                "settings": self.settings(),
            }
