"""Projections of the log (labels, query state, progress, the golden projection), refreshed
with each event."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labeler import golden
from labeler.golden import QueryState
from labeler.store.corpus import UNPUBLISHED_HIDDEN, published
from labeler.store.golden_rows import golden_labels, write_golden
from labeler.store.states import States


def _progress_key(status: str, answerable: bool) -> str:
    return "unanswerable" if status == "done" and not answerable else status


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


class Projections(States):
    """Projections of the log (labels, query state, progress), refreshed with each event."""

    def _refresh(self, query_id: str, annotators: Sequence[str] | None = None) -> None:
        """Re-derive the projections of ``query_id`` for these annotators (default: everyone
        who acted on it) from the log, then its golden label (:func:`labeler.golden.merge`,
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
        label = golden.merge({**others, **fresh}, self._decisions([query_id]).get(query_id))
        before = self._golden([query_id])[query_id]
        if (before.status, before.answerable) != (label.status, label.answerable):
            self._count("", slice_name, _progress_key(before.status, before.answerable), -1)
            self._count("", slice_name, _progress_key(label.status, label.answerable), 1)
        write_golden(self.conn, [(query_id, label)], {query_id: before})

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
        self._count(annotator, slice_name, _progress_key(state.status, state.answerable), 1)
        self.conn.execute(
            "DELETE FROM labels WHERE query_id = ? AND annotator = ?", (query_id, annotator)
        )
        self.conn.executemany(
            "INSERT INTO labels (query_id, annotator, doc_id, grade, event_id) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (query_id, annotator, doc_id, grade, state.label_events[doc_id])
                for doc_id, grade in state.grades.items()
            ],
        )
        self.conn.execute(
            "INSERT OR REPLACE INTO query_state (query_id, annotator, slice, status, answerable, "
            "needs_verdict, mode, first_relevant_rank, judged_depth, seconds, last_event_id, "
            "updated_at, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                query_id,
                annotator,
                slice_name,
                state.status,
                int(state.answerable),
                int(state.needs_verdict),
                state.mode,
                state.first_relevant_rank,
                state.judged_depth,
                state.seconds,
                state.last_event_id,
                state.updated_at,
                state.note,
            ),
        )
        self.conn.execute(
            "UPDATE assignments SET open = ? WHERE annotator = ? AND query_id = ?",
            (int(state.status not in ("done", "skipped")), annotator, query_id),
        )

    def _count(self, annotator: str, slice_name: str, state: str, delta: int) -> None:
        self.conn.execute(
            "INSERT INTO progress (annotator, slice, state, n) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (annotator, slice, state) DO UPDATE SET n = n + excluded.n",
            (annotator, slice_name, state, delta),
        )

    def rebuild_projections(self) -> None:
        """Recompute every projection (labels, query states, counts, the golden projection)
        from the log alone. The result must equal what the incremental updates produced.
        Waits for a running import or pool (whose staged rows it would otherwise delete)."""
        with self._import_lock(), self._writing() as conn:
            for table in ("labels", "query_state", "progress", "golden_judgments"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute(
                "UPDATE queries SET status = 'pending', answerable = 1, golden_mode = NULL"
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
