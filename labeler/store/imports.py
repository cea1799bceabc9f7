"""Importing tasks files and golden sets."""

from __future__ import annotations

import gc
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from goldset.eval.readers import InputError
from goldset.labeler import golden
from goldset.labeler.identifiers import identifier_parts
from goldset.labeler.importing import (
    Task,
    collect_documents,
    read_tasks,
    tasks_from_records,
)
from goldset.labeler.pooling import corpus_beyond_tasks, corpus_documents, read_corpus
from goldset.labeler.store.connection import chunks, qmarks
from goldset.labeler.store.corpus import POOLED_RUN
from goldset.labeler.store.golden_rows import write_golden
from goldset.labeler.store.projections import LABEL_COLUMNS, STAGED, STATE_COLUMNS, Projections
from goldset.labeler.store.replay import (
    Replay,
    golden_plan,
    imported_rows,
    replayed,
    stored_metadata,
)

STAGE_ROWS = 20_000  # rows deleted per transaction when an unpublished import is discarded


STAGE_SECONDS = 0.3  # an import's transactions hold the write lock about this long...


STAGE_PAUSE = 0.1  # ...then let waiting writers in (see Store._in_short_transactions)


_NO_TEXT = {"title": None, "text": None, "metadata": None}  # a doc named, not described


# The columns an import stages (see Imports._stage_rows), as the replay gives their values.
_QUERY_COLUMNS = (
    *("query_id", "position", "query", "slice", "metadata", "content_hash", "source"),
    *("created_at", "status", "answerable", "golden_mode", "holes"),
)
_EVENT_COLUMNS = (
    *("id", "query_id", "doc_id", "annotator", "action", "grade", "mode", "seconds", "note"),
    "created_at",
)
_DECISION_COLUMNS = (
    *("id", "query_id", "reviewer", "judgments", "answerable", "adopted", "note", "created_at"),
)
POOL_COLUMNS = ("query_id", "run", "rank", "doc_id", "score")
# The tables where an unpublished batch leaves rows keyed only by their (missing) query.
_ORPHANED = ("labels", "query_state", "golden_judgments", "pool_ranks")


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a bulk import.

    An import allocates millions of small containers, none in reference cycles; the
    collector's repeated passes over them took a large share of the import time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Imports(Projections):
    """Importing tasks files and golden sets."""

    def import_tasks(self, path: str | Path, corpus: str | Path | None = None) -> dict:
        """Import a tasks file (JSONL or CSV, see docs/formats.md; golden-set JSONL accepted too).

        All-or-nothing: everything is validated first; any problem raises
        :class:`goldset.eval.readers.InputError` (a ValueError naming file, line and field) and
        leaves the database unchanged. Queries already present with identical content are skipped,
        so importing the same file twice is a no-op; the same query_id with different content
        is an error. Returns counts: ``queries_added``, ``queries_unchanged``,
        ``candidates_added``, ``documents_added``.

        A large import never holds the write lock for long (annotators keep labelling):
        everything is computed first, outside the lock, then written in short transactions
        (about :data:`STAGE_SECONDS` each) that readers cannot see yet — its documents,
        candidates and pool ranks, and for golden records the replayed events, labels,
        states, decisions and golden projection (see :meth:`_stage_replay`) — and the last
        short transaction publishes them by inserting the queries, their golden status
        included (measured in bench/lock_contention.py --golden). Readers see all of it or
        none; a crash leaves nothing visible, and the next import deletes what it left.

        With ``corpus`` (a BEIR ``corpus.jsonl``), its documents are added by the same
        all-or-nothing import, as :meth:`add_corpus` adds them: a refused corpus leaves the
        tasks unimported too. ``corpus_documents_added`` counts those not already there.
        """
        with _collector_paused():
            tasks = read_tasks(path, max_grade=self.settings()["max_grade"])
            extra = None if corpus is None else corpus_documents(read_corpus(corpus))
            return self._import(tasks, str(path), extra, str(corpus))

    def import_records(self, records: Iterable[dict], source: str = "<records>") -> dict:
        """Import task (or golden-set) records given as dicts; see :meth:`import_tasks`."""
        with _collector_paused():
            tasks = tasks_from_records(records, source, max_grade=self.settings()["max_grade"])
            return self._import(tasks, source)

    def _import(
        self,
        tasks: Sequence[Task],
        source: str,
        corpus: Mapping[str, tuple[int, str, dict]] | None = None,
        corpus_source: str = "",
    ) -> dict:
        with self._import_lock():
            known = self._content_hashes([task.query_id for task in tasks])
            for task in tasks:
                if task.query_id in known and known[task.query_id] != task.content_hash:
                    problem = f"{task.query_id!r} is already in the database with different content"
                    raise InputError(source, task.line, "query_id", problem)
            new = [task for task in tasks if task.query_id not in known]
            plans = {
                task.query_id: golden_plan(task, source, self.settings()["max_grade"])
                for task in new
                if task.golden is not None
            }
            documents = collect_documents(new, source)
            for task in new:
                if task.query_id in plans:
                    for doc_id in plans[task.query_id].doc_ids:
                        documents.setdefault(doc_id, (task.line, "", _NO_TEXT))
            beyond = corpus_beyond_tasks(corpus or {}, documents, corpus_source)
            new_documents, fill_ins = self._new_documents(documents, source)
            corpus_rows, corpus_fill_ins = self._new_documents(beyond, corpus_source)
            new_documents += corpus_rows
            fill_ins.update(corpus_fill_ins)
            replay = replayed(new, plans, self.settings(), source)
            candidates = [
                row
                for task in new
                for row in (
                    plans[task.query_id].candidate_rows(task.query_id)
                    if task.query_id in plans
                    else imported_rows(task)
                )
            ]
            with self._batch(source) as batch, self._staging():
                self._stage_documents(new_documents, batch)
                self._stage_candidates(candidates, batch)
                known_runs = {row[0] for row in self.conn.execute("SELECT name FROM runs")}
                self._stage_ranks([row for row in replay.pool_ranks if row[1] not in known_runs])
                if replay.queries:  # golden records
                    self._stage_replay(replay, batch)
                counts = self._stage_queries(
                    [
                        (t.query_id, t.query, t.slice, stored_metadata(t), t.content_hash)
                        for t in new
                    ],
                    source,
                    dict(replay.golden),
                )
                # ranks of the new queries under runs already pooled: a reader of a run's
                # ranks does not go through their queries, so they wait for the publishing
                self._stage_rows(
                    "pool_ranks",
                    POOL_COLUMNS,
                    [r for r in replay.pool_ranks if r[1] in known_runs],
                )
                with self._foreign_keys_off(), self._writing():
                    self._publish_queries()
                    for doc_id, (title, text) in fill_ins.items():
                        self._rewrite_document(doc_id, title, text)
                    self.conn.executemany(
                        "INSERT INTO runs (name, path, sha256, depth, pooled_at) "
                        "VALUES (?, ?, '', ?, ?) "
                        "ON CONFLICT (name) DO UPDATE SET depth = max(depth, excluded.depth)",
                        [(run, source, depth, golden.now()) for run, depth in replay.runs.items()],
                    )
                    self._publish_staged("pool_ranks", POOL_COLUMNS)
                    self._add_counts(_merged_counts(counts, replay.counts))
                    self._publish(batch)
        added = {
            "queries_added": len(new),
            "queries_unchanged": len(tasks) - len(new),
            "candidates_added": len(candidates),
            "documents_added": len(new_documents) - len(corpus_rows),
        }
        return added if corpus is None else {**added, "corpus_documents_added": len(corpus_rows)}

    def _discard_abandoned(self) -> None:
        """Under :meth:`_import_lock`: delete any batch a dead importer left unpublished, then
        what the layer below discards."""
        for (batch,) in self.conn.execute(
            "SELECT id FROM import_batches WHERE published_at IS NULL"
        ).fetchall():
            self._discard_batch(batch)
        super()._discard_abandoned()

    @contextmanager
    def _batch(self, source: str) -> Iterator[int]:
        """A new import batch; deleted again (in short transactions) if anything fails."""
        with self._writing() as conn:
            batch = conn.execute(
                "INSERT INTO import_batches (source, started_at) VALUES (?, ?)",
                (source, golden.now()),
            ).lastrowid
        try:
            yield batch
        except BaseException:
            self._discard_batch(batch)
            raise

    def _publish(self, batch: int) -> None:
        """Inside the publishing transaction: the batch visible, its join mark fixed (_seal)."""
        self._seal(batch)
        self.conn.execute(
            "UPDATE import_batches SET published_at = ? WHERE id = ?", (golden.now(), batch)
        )

    def _seal(self, batch: int) -> None:
        """Inside the publishing transaction: the log's last event id, after which the batch's
        candidates join their pools (``last_event``; a golden record's, after the events it
        replays): a verdict covers only the candidates its annotator could see."""
        self.conn.execute(
            "UPDATE import_batches SET last_event = "
            "(SELECT coalesce(max(id), 0) FROM events) WHERE id = ? AND last_event IS NULL",
            (batch,),
        )

    def _stage_documents(self, rows: Sequence[tuple], batch: int) -> None:
        """Insert new documents and their full-text entries, in short transactions. The
        full-text index is filled in bulk per chunk rather than by a trigger per row, which
        is quicker on large imports (bench/import_speed.py)."""

        def insert(conn: sqlite3.Connection, chunk: Sequence[tuple]) -> None:
            (last_rowid,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM documents").fetchone()
            conn.executemany(
                "INSERT INTO documents (doc_id, title, text, metadata, batch, parts) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(*row, batch, identifier_parts(row[0], row[1])) for row in chunk],
            )
            conn.execute(
                "INSERT INTO documents_fts (rowid, title, text, parts) "
                "SELECT rowid, title, text, parts FROM documents WHERE rowid > ?",
                (last_rowid,),
            )

        self._in_short_transactions(rows, insert)

    def _stage_candidates(self, rows: Sequence[tuple], batch: int) -> None:
        """Insert candidates in short transactions, before their queries exist: no reader
        reaches a candidate but through its query, so they stay invisible until the batch is
        published (foreign keys are checked off meanwhile, on this connection only)."""

        def insert(conn: sqlite3.Connection, chunk: Sequence[tuple]) -> None:
            conn.executemany(
                "INSERT INTO candidates (query_id, doc_id, position, score, imported_rank, "
                "batch) VALUES (?, ?, ?, ?, ?, ?)",
                [(*row, batch) for row in chunk],
            )

        with self._foreign_keys_off():
            self._in_short_transactions(rows, insert)

    def _stage_ranks(self, rows: Sequence[tuple]) -> None:
        """Insert ``pool_ranks`` rows (query_id, run, rank, doc_id, score) of queries not
        published or runs not registered yet, in short transactions: readers count a rank
        only with its query and its run (see ``corpus.POOLED_RUN``), and a batch never
        published is cleared of them (see :meth:`_discard_batch`)."""
        sql = _insert("pool_ranks", POOL_COLUMNS)
        with self._foreign_keys_off():
            self._in_short_transactions(rows, lambda conn, chunk: conn.executemany(sql, chunk))

    def _in_short_transactions(
        self,
        rows: Sequence[tuple],
        write: Callable[[sqlite3.Connection, Sequence[tuple]], None],
        size: int = 1_000,
    ) -> None:
        """``write`` consecutive chunks of ``rows`` (the first of ``size``), each in its own
        write transaction sized to last about :data:`STAGE_SECONDS` (from the pace of the
        previous one), with a pause of :data:`STAGE_PAUSE` between them. The pause lets
        waiting writers in: SQLite's busy handler polls (every 100 ms once it has waited a
        while), it does not queue, so back-to-back transactions would starve an annotator's
        press for seconds (measured in bench/lock_contention.py)."""
        start = 0
        while start < len(rows):
            began = time.perf_counter()
            with self._writing() as conn:
                write(conn, rows[start : start + size])
            took = max(time.perf_counter() - began, 1e-3)
            start += size
            size = max(100, min(size * 2, int(size * STAGE_SECONDS / took)))
            if start < len(rows):
                time.sleep(STAGE_PAUSE)

    def _discard_batch(self, batch: int) -> None:
        """Delete an unpublished batch's rows, :data:`STAGE_ROWS` a transaction, then the batch."""
        deleted = 1
        while deleted:
            with self._writing() as conn:
                deleted = conn.execute(
                    "DELETE FROM candidates WHERE (query_id, doc_id) IN (SELECT query_id, doc_id "
                    "FROM candidates WHERE batch = ? LIMIT ?)",
                    (batch, STAGE_ROWS),
                ).rowcount
        deleted = 1
        while deleted:
            with self._writing() as conn:
                rows = conn.execute(
                    "SELECT rowid, title, text, parts FROM documents WHERE batch = ? LIMIT ?",
                    (batch, STAGE_ROWS // 4),
                ).fetchall()
                conn.executemany(
                    "INSERT INTO documents_fts (documents_fts, rowid, title, text, parts) "
                    "VALUES ('delete', ?, ?, ?, ?)",
                    rows,
                )
                conn.executemany("DELETE FROM documents WHERE rowid = ?", [(r[0],) for r in rows])
                deleted = len(rows)
        for table in ("events", "adjudications"):  # see the append-only triggers
            deleted = 1
            while deleted:
                with self._writing() as conn:
                    deleted = conn.execute(
                        f"DELETE FROM {table} WHERE id IN "
                        f"(SELECT id FROM {table} WHERE batch = ? LIMIT ?)",
                        (batch, STAGE_ROWS),
                    ).rowcount
        # The projections and pool ranks of the batch's queries: rows whose query is missing,
        # the queries being published last (see _stage_replay, Pool._stage_fresh_pools).
        orphans = sorted(
            {
                row[0]
                for table in _ORPHANED
                for row in self.conn.execute(
                    f"SELECT DISTINCT query_id FROM {table} t WHERE NOT EXISTS "
                    "(SELECT 1 FROM queries q WHERE q.query_id = t.query_id)"
                )
            }
        )
        for chunk in chunks(orphans):
            with self._writing() as conn:
                for table in _ORPHANED:
                    conn.execute(f"DELETE FROM {table} WHERE query_id IN ({qmarks(chunk)})", chunk)
        deleted = 1  # the ranks of known queries under a run never registered (Pool.pool)
        while deleted:
            with self._writing() as conn:
                deleted = conn.execute(
                    "DELETE FROM pool_ranks WHERE (query_id, run, rank) IN (SELECT query_id, run, "
                    f"rank FROM pool_ranks WHERE NOT {POOLED_RUN} LIMIT ?)",
                    (STAGE_ROWS,),
                ).rowcount
        with self._writing() as conn:
            conn.execute("DELETE FROM import_batches WHERE id = ?", (batch,))

    def _content_hashes(self, query_ids: Sequence[str]) -> dict[str, str]:
        hashes: dict[str, str] = {}
        for chunk in chunks(query_ids):
            hashes.update(
                self.conn.execute(
                    "SELECT query_id, content_hash FROM queries "
                    f"WHERE query_id IN ({qmarks(chunk)})",
                    chunk,
                ).fetchall()
            )
        return hashes

    def _stage_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
        """Copy ``rows`` (values of ``columns`` of ``table``) into a TEMP table of this
        connection, without the write lock (see :meth:`Connection._scratch`);
        :meth:`_publish_staged` then copies them into ``table`` with one statement."""
        names = ", ".join(columns)
        with self._scratch() as conn:
            conn.execute(f"DROP TABLE IF EXISTS temp.{STAGED}{table}")
            conn.execute(
                f"CREATE TEMP TABLE {STAGED}{table} AS SELECT {names} FROM main.{table} WHERE 0"
            )
            conn.executemany(
                f"INSERT INTO temp.{STAGED}{table} ({names}) VALUES ({qmarks(columns)})", rows
            )

    def _publish_staged(
        self,
        table: str,
        columns: Sequence[str],
        values: Mapping[str, str] | None = None,
        params: Mapping[str, object] | None = None,
        conflict: str = "",
    ) -> None:
        """Inside the publishing transaction: insert the rows staged for ``table``, each
        column's value as staged or the SQL expression ``values`` gives for it (over the
        staged columns and ``params``: an id shifted past the log's last, say); ``conflict``:
        an upsert clause (``ON CONFLICT ... DO UPDATE ...``)."""
        values = values or {}
        targets = [*columns, *(name for name in values if name not in columns)]
        self.conn.execute(
            f"INSERT INTO main.{table} ({', '.join(targets)}) "
            f"SELECT {', '.join(values.get(name, name) for name in targets)} "
            f"FROM temp.{STAGED}{table} WHERE true {conflict}",  # WHERE: the upsert's parse
            params or {},
        )

    def _stage_queries(
        self,
        rows: Sequence[tuple[str, str, str, dict, str]],
        source: str,
        heads: Mapping[str, golden.GoldenLabel] | None = None,
    ) -> dict[tuple[str, str, str], int]:
        """Stage new queries (query_id, query, slice, metadata, content_hash), to go at the
        end of the queue with the golden status, answerability and mode of their label in
        ``heads`` (pending without one); returns the pending counts they add to ``progress``
        (per slice; the replay counts the rest)."""
        created_at, heads = golden.now(), heads or {}
        pending = golden.GoldenLabel("pending", True, None)
        self._stage_rows(
            "queries",
            _QUERY_COLUMNS,
            (
                (
                    query_id,
                    position,
                    query,
                    slice_name,
                    json.dumps(metadata, ensure_ascii=False),
                    content_hash,
                    source,
                    created_at,
                    (head := heads.get(query_id, pending)).status,
                    int(head.answerable),
                    head.mode,
                    head.holes,
                )
                for position, (query_id, query, slice_name, metadata, content_hash) in enumerate(
                    rows, 1
                )
            ),
        )
        counts: dict[tuple[str, str, str], int] = {}
        for _, _, slice_name, _, _ in rows:
            key = ("", slice_name, "pending")
            counts[key] = counts.get(key, 0) + 1
        return counts

    def _publish_queries(self) -> None:
        """Inside the publishing transaction: the staged queries, after the queue's last."""
        start = self.conn.execute("SELECT coalesce(max(position), 0) FROM queries").fetchone()[0]
        self._publish_staged(
            "queries", _QUERY_COLUMNS, {"position": "position + :start"}, {"start": start}
        )

    def _new_documents(
        self, documents: Mapping[str, tuple[int, str, dict]], source: str
    ) -> tuple[list[tuple], dict[str, tuple[str, str]]]:
        """Split documents into new rows (doc_id, title, text, metadata) and fill-ins of a
        known doc's empty title/text (doc_id -> (title, text)); refuse a different one.

        ``documents`` maps doc_id to (line, field prefix, {title, text, metadata}); title/text
        None = not given. An error names the line and the field (prefix + title/text).
        """
        existing: dict[str, tuple[str, str]] = {}
        if self.conn.execute("SELECT EXISTS (SELECT 1 FROM documents)").fetchone()[0]:
            for chunk in chunks(list(documents)):
                for doc_id, title, text in self.conn.execute(
                    f"SELECT doc_id, title, text FROM documents WHERE doc_id IN ({qmarks(chunk)})",
                    chunk,
                ):
                    existing[doc_id] = (title, text)
        new_rows, fill_ins = [], {}
        for doc_id, (line, prefix, doc) in documents.items():
            if doc_id not in existing:
                metadata = (
                    json.dumps(doc["metadata"], ensure_ascii=False) if doc["metadata"] else None
                )
                new_rows.append((doc_id, doc["title"] or "", doc["text"] or "", metadata))
                continue
            stored = dict(zip(("title", "text"), existing[doc_id], strict=True))
            for name in ("title", "text"):
                if doc[name] and stored[name] and doc[name] != stored[name]:
                    problem = f"doc {doc_id!r} is already in the database with a different {name}"
                    raise InputError(source, line, prefix + name, problem)
            if any(doc[name] and not stored[name] for name in ("title", "text")):
                fill_ins[doc_id] = (doc["title"] or stored["title"], doc["text"] or stored["text"])
        return new_rows, fill_ins

    def _rewrite_document(self, doc_id: str, title: str, text: str) -> None:
        """Change a document's title and text, and its full-text entry with them."""
        rowid, *old = self.conn.execute(
            "SELECT rowid, title, text, parts FROM documents WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        self.conn.execute(
            "INSERT INTO documents_fts (documents_fts, rowid, title, text, parts) "
            "VALUES ('delete', ?, ?, ?, ?)",
            (rowid, *old),
        )
        parts = identifier_parts(doc_id, title)
        self.conn.execute(
            "UPDATE documents SET title = ?, text = ?, parts = ? WHERE rowid = ?",
            (title, text, parts, rowid),
        )
        self.conn.execute(
            "INSERT INTO documents_fts (rowid, title, text, parts) VALUES (?, ?, ?, ?)",
            (rowid, title, text, parts),
        )

    def _stage_replay(self, replay: Replay, batch: int) -> None:
        """Write the events, projections and decisions that reproduce imported golden records
        (computed beforehand by :func:`replayed`), and the golden projection of their queries
        as the replay merged it, in short transactions before the queries are published: no
        reader reaches them but through a published query (see :func:`corpus.published`; the
        events and decisions carry the import ``batch``, which also keeps them off every undo
        stack). Their ids are the replay's own numbers shifted into a block reserved first,
        so annotators' events written meanwhile come after them."""
        bases = self._reserve_ids(
            {"events": len(replay.events), "adjudications": len(replay.decisions)}
        )
        base, decided = bases["events"], bases["adjudications"]
        batched = (*_DECISION_COLUMNS, "batch")
        rows = (
            (
                _insert("events", (*_EVENT_COLUMNS, "batch")),
                [(number + base, *row, batch) for number, *row in replay.events],
            ),
            (_insert("labels", LABEL_COLUMNS), [(*r[:4], r[4] + base) for r in replay.labels]),
            (
                _insert("query_state", STATE_COLUMNS),
                [(*row[:10], row[10] + base, *row[11:]) for row in replay.states],
            ),
            (
                _insert("adjudications", batched),
                [(number + decided, *row, batch) for number, row in enumerate(replay.decisions, 1)],
            ),
        )
        with self._foreign_keys_off():
            for sql, table_rows in rows:
                self._in_short_transactions(
                    table_rows, lambda conn, chunk, sql=sql: conn.executemany(sql, chunk)
                )
            # what _refresh_golden would merge again from the rows just written, merged already
            self._in_short_transactions(
                [_shifted(*item, base, decided) for item in replay.golden], write_golden
            )

    def _reserve_ids(self, counts: Mapping[str, int]) -> dict[str, int]:
        """Reserve a block of ``count`` ids in each AUTOINCREMENT ``table``, for rows written
        over several transactions: returns, per table, the id before its block. New rows
        that others insert meanwhile get ids after it (SQLite gives max(seq, max(id)) + 1)."""
        bases = {}
        with self._writing() as conn:
            for table, count in counts.items():
                (base,) = conn.execute(
                    "SELECT max(coalesce(max(id), 0), coalesce((SELECT seq FROM sqlite_sequence "
                    f"WHERE name = '{table}'), 0)) FROM {table}"
                ).fetchone()
                reserved = (base + count, table)
                if not conn.execute(
                    "UPDATE sqlite_sequence SET seq = ? WHERE name = ?", reserved
                ).rowcount:
                    conn.execute("INSERT INTO sqlite_sequence (seq, name) VALUES (?, ?)", reserved)
                bases[table] = base
        return bases


def _insert(table: str, columns: Sequence[str]) -> str:
    """An INSERT of one row of ``columns`` into ``table``, for executemany."""
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({qmarks(columns)})"


def _shifted(
    query_id: str, label: golden.GoldenLabel, base: int, decided: int
) -> tuple[str, golden.GoldenLabel]:
    """A replayed golden label with the ids the log gave its events and decision."""
    if label.decision_id is not None:  # ordered by the decision's own list
        return query_id, replace(label, decision_id=label.decision_id + decided)
    return query_id, replace(label, order={d: event + base for d, event in label.order.items()})


def _merged_counts(*parts: Mapping[tuple[str, str, str], int]) -> dict[tuple[str, str, str], int]:
    """Progress deltas summed key by key."""
    merged: dict[tuple[str, str, str], int] = {}
    for part in parts:
        for key, n in part.items():
            merged[key] = merged.get(key, 0) + n
    return merged
