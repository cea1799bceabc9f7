"""Projections of the log (labels, query state, progress, the golden projection), refreshed
with each event."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from goldset.labeler import golden
from goldset.labeler.golden import GoldenLabel, QueryContext, QueryState
from goldset.labeler.store.connection import _chunks, _marks
from goldset.labeler.store.corpus import UNPUBLISHED_HIDDEN, published
from goldset.labeler.store.golden_rows import golden_labels, golden_rows, write_golden
from goldset.labeler.store.log import LogMark
from goldset.labeler.store.states import States


def _progress_key(status: str, answerable: bool) -> str:
    return "unanswerable" if status == "done" and not answerable else status


def _counter(state: QueryState | GoldenLabel) -> str:
    """The progress counter a state or a golden label counts in."""
    return _progress_key(state.status, state.answerable)


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


_STATE_COLUMNS = (
    *("query_id", "annotator", "slice", "status", "answerable", "needs_verdict", "mode"),
    *("first_relevant_rank", "judged_depth", "seconds", "last_event_id", "updated_at", "note"),
    "holes",
)
_STATE_SQL = (
    f"INSERT OR REPLACE INTO query_state ({', '.join(_STATE_COLUMNS)}) "
    f"VALUES ({_marks(_STATE_COLUMNS)})"
)
_LABEL_COLUMNS = ("query_id", "annotator", "doc_id", "grade", "event_id")
_LABEL_SQL = f"INSERT INTO labels ({', '.join(_LABEL_COLUMNS)}) VALUES ({_marks(_LABEL_COLUMNS)})"
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
    "states": (*_STATE_COLUMNS, "whole"),
    "label_keys": ("query_id", "annotator"),
    "labels": _LABEL_COLUMNS,
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


class Projections(States):
    """Projections of the log (labels, query state, progress), refreshed with each event."""

    def _refresh(self, query_id: str, annotators: Sequence[str] | None = None) -> None:
        """Re-derive the projections of ``query_id`` for these annotators (default: everyone
        who acted on it) from the log, then its golden label (:func:`goldset.labeler.golden.merge`,
        the one merge rule) into the golden projection. Inside a write transaction."""
        everyone = annotators is None
        if everyone:
            annotators = [
                row[0]
                for row in self.conn.execute(
                    "SELECT DISTINCT annotator FROM events WHERE query_id = ?", (query_id,)
                )
            ]
        context = self._context(query_id)
        slice_name = self._value("SELECT slice FROM queries WHERE query_id = ?", (query_id,))
        fresh = {}
        for annotator in annotators:
            fresh[annotator] = golden.derive_state(self._events(query_id, annotator), context)
            self._store_state(query_id, annotator, slice_name, fresh[annotator])
        # The annotators not refreshed count as stored (none are left when everyone was).
        others = {} if everyone else self._states([query_id]).get(query_id, {})
        decision = self._decisions([query_id]).get(query_id)
        label = golden.merge({**others, **fresh}, decision, context)
        before = self._golden([query_id])[query_id]
        if _counter(before) != _counter(label):
            self._count("", slice_name, _counter(before), -1)
            self._count("", slice_name, _counter(label), 1)
        write_golden(self.conn, [(query_id, label)], {query_id: before})

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
        for chunk in _chunks(list(query_ids)):
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
                        f"SELECT query_id, slice FROM queries WHERE query_id IN ({_marks(chunk)})",
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
                    f"INSERT INTO temp.{REDERIVED}{table} VALUES ({_marks(columns)})",
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
            f"INSERT INTO labels ({', '.join(_LABEL_COLUMNS)}) {staged('labels')}",
            f"INSERT OR REPLACE INTO query_state ({', '.join(_STATE_COLUMNS)}) "
            f"{staged('states', _STATE_COLUMNS)} AND t.whole",
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
        self, query_id: str, annotator: str, slice_name: str, state: QueryState
    ) -> None:
        old = self.conn.execute(
            "SELECT status, answerable FROM query_state WHERE query_id = ? AND annotator = ?",
            (query_id, annotator),
        ).fetchone()
        if old:
            self._count(annotator, slice_name, _progress_key(old[0], bool(old[1])), -1)
        self._count(annotator, slice_name, _counter(state), 1)
        self.conn.execute(
            "DELETE FROM labels WHERE query_id = ? AND annotator = ?", (query_id, annotator)
        )
        self.conn.executemany(_LABEL_SQL, _label_rows(query_id, annotator, state))
        self.conn.execute(_STATE_SQL, _state_row(query_id, annotator, slice_name, state))
        self.conn.execute(
            "UPDATE assignments SET open = ? WHERE annotator = ? AND query_id = ?",
            (_is_open(state), annotator, query_id),
        )

    def _count(self, annotator: str, slice_name: str, state: str, delta: int) -> None:
        self.conn.execute(
            "INSERT INTO progress (annotator, slice, state, n) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (annotator, slice, state) DO UPDATE SET n = n + excluded.n",
            (annotator, slice_name, state, delta),
        )

    def _add_counts(self, counts: Mapping[tuple[str, str, str], int]) -> None:
        """Add to the ``progress`` counters: (annotator, slice, state) -> delta."""
        self.conn.executemany(
            "INSERT INTO progress (annotator, slice, state, n) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (annotator, slice, state) DO UPDATE SET n = n + excluded.n",
            [(*key, n) for key, n in counts.items() if n],
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
        maintained counters: cheap at any size.
        """
        with self._reading():
            golden_counts = self._counts("")
            if annotator is None:
                return {s: _progress_summary(c, sum(c.values())) for s, c in golden_counts.items()}
            mine = self._counts(annotator)
            has_assignments = any(counts.get("assigned") for counts in mine.values())
        summary = {}
        for slice_name in sorted(set(golden_counts) | set(mine)):
            counts = mine.get(slice_name, {})
            total = (
                counts.get("assigned", 0)
                if has_assignments
                else sum(golden_counts.get(slice_name, {}).values())
            )
            summary[slice_name] = _progress_summary(counts, total)
        return summary

    def _counts(self, annotator: str) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for slice_name, state, n in self.conn.execute(
            "SELECT slice, state, n FROM progress WHERE annotator = ? AND n != 0", (annotator,)
        ):
            counts.setdefault(slice_name, {})[state] = n
        return counts

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
