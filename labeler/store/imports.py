"""Importing tasks files and golden sets."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from eval.readers import InputError
from labeler import golden
from labeler.importing import Task, collect_documents, read_tasks, tasks_from_records
from labeler.store.connection import _chunks, _marks
from labeler.store.projections import Projections


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

    def import_tasks(self, path: str | Path) -> dict:
        """Import a tasks file (JSONL or CSV, see DESIGN.md; golden-set JSONL also accepted).

        All-or-nothing: everything is validated first and written in one transaction; any
        problem raises :class:`eval.readers.InputError` (a ValueError naming file, line and
        field) and leaves the database unchanged. Queries already present with identical
        content are skipped, so importing the same file twice is a no-op; the same query_id
        with different content is an error. Returns counts: ``queries_added``,
        ``queries_unchanged``, ``candidates_added``, ``documents_added``.
        """
        with _collector_paused():
            tasks = read_tasks(path, max_grade=self.settings()["max_grade"])
            return self._import(tasks, str(path))

    def import_records(self, records: Iterable[dict], source: str = "<records>") -> dict:
        """Import task (or golden-set) records given as dicts; see :meth:`import_tasks`."""
        with _collector_paused():
            tasks = tasks_from_records(records, source, max_grade=self.settings()["max_grade"])
            return self._import(tasks, source)

    def _import(self, tasks: Sequence[Task], source: str) -> dict:
        with self._writing() as conn:
            known = self._content_hashes([task.query_id for task in tasks])
            for task in tasks:
                if task.query_id in known and known[task.query_id] != task.content_hash:
                    problem = f"{task.query_id!r} is already in the database with different content"
                    raise InputError(source, task.line, "query_id", problem)
            new = [task for task in tasks if task.query_id not in known]
            documents_added = self._add_documents(collect_documents(new, source), source)
            self._add_queries(
                [(t.query_id, t.query, t.slice, t.metadata, t.content_hash) for t in new], source
            )
            conn.executemany(
                "INSERT INTO candidates (query_id, doc_id, position, score, imported_rank) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    (task.query_id, candidate.doc_id, rank, candidate.score, rank)
                    for task in new
                    for rank, candidate in enumerate(task.candidates, start=1)
                ),
            )
            for task in new:
                if task.golden is not None:
                    self._replay_golden(task, source)
        return {
            "queries_added": len(new),
            "queries_unchanged": len(tasks) - len(new),
            "candidates_added": sum(len(task.candidates) for task in new),
            "documents_added": documents_added,
        }

    def _content_hashes(self, query_ids: Sequence[str]) -> dict[str, str]:
        hashes: dict[str, str] = {}
        for chunk in _chunks(query_ids):
            hashes.update(
                self.conn.execute(
                    "SELECT query_id, content_hash FROM queries "
                    f"WHERE query_id IN ({_marks(chunk)})",
                    chunk,
                ).fetchall()
            )
        return hashes

    def _add_queries(self, rows: Sequence[tuple[str, str, str, dict, str]], source: str) -> None:
        """Insert new queries at the end of the queue, all pending."""
        start = self.conn.execute("SELECT coalesce(max(position), 0) FROM queries").fetchone()[0]
        created_at = golden.now()
        self.conn.executemany(
            "INSERT INTO queries (query_id, position, query, slice, metadata, content_hash, "
            "source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    query_id,
                    start + i,
                    query,
                    slice_name,
                    json.dumps(metadata, ensure_ascii=False),
                    content_hash,
                    source,
                    created_at,
                )
                for i, (query_id, query, slice_name, metadata, content_hash) in enumerate(rows, 1)
            ),
        )
        per_slice: dict[str, int] = {}
        for _, _, slice_name, _, _ in rows:
            per_slice[slice_name] = per_slice.get(slice_name, 0) + 1
        for slice_name, count in per_slice.items():
            self._count("", slice_name, "pending", count)

    def _add_documents(self, documents: Mapping[str, tuple[int, str, dict]], source: str) -> int:
        """Insert new documents; fill in a known doc's empty title/text; refuse a different one.

        ``documents`` maps doc_id to (line, field prefix, {title, text, metadata}); title/text
        None = not given. An error names the line and the field (prefix + title/text).
        """
        existing: dict[str, tuple[str, str]] = {}
        if self.conn.execute("SELECT EXISTS (SELECT 1 FROM documents)").fetchone()[0]:
            for chunk in _chunks(list(documents)):
                for doc_id, title, text in self.conn.execute(
                    f"SELECT doc_id, title, text FROM documents WHERE doc_id IN ({_marks(chunk)})",
                    chunk,
                ):
                    existing[doc_id] = (title, text)
        new_rows, fill_ins = [], []
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
                fill_ins.append(
                    (doc["title"] or stored["title"], doc["text"] or stored["text"], doc_id)
                )
        last_rowid = self.conn.execute("SELECT coalesce(max(rowid), 0) FROM documents").fetchone()[
            0
        ]
        self.conn.executemany(
            "INSERT INTO documents (doc_id, title, text, metadata) VALUES (?, ?, ?, ?)", new_rows
        )
        # The full-text index is kept in step here, in bulk, rather than by a trigger per row:
        # measured 3x faster on large imports.
        self.conn.execute(
            "INSERT INTO documents_fts (rowid, title, text) "
            "SELECT rowid, title, text FROM documents WHERE rowid > ?",
            (last_rowid,),
        )
        for title, text, doc_id in fill_ins:
            self._rewrite_document(doc_id, title, text)
        return len(new_rows)

    def _rewrite_document(self, doc_id: str, title: str, text: str) -> None:
        """Change a document's title and text, and its full-text entry with them."""
        rowid, old_title, old_text = self.conn.execute(
            "SELECT rowid, title, text FROM documents WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        self.conn.execute(
            "INSERT INTO documents_fts (documents_fts, rowid, title, text) "
            "VALUES ('delete', ?, ?, ?)",
            (rowid, old_title, old_text),
        )
        self.conn.execute(
            "UPDATE documents SET title = ?, text = ? WHERE rowid = ?", (title, text, rowid)
        )
        self.conn.execute(
            "INSERT INTO documents_fts (rowid, title, text) VALUES (?, ?, ?)", (rowid, title, text)
        )

    def _replay_golden(self, task: Task, source: str) -> None:
        """Write the events that reproduce an imported golden record, then its projections;
        a record whose labels cannot come out as it says (a ``pending`` query whose judged
        docs already hold a relevant one, say) is an input error."""
        record = {
            "status": task.golden.status,
            "answerable": task.golden.answerable,
            "judgments": task.golden.judgments,
            "judged_depth": task.golden.judged_depth,
            "mode": task.golden.mode,
            "annotators": task.golden.annotators,
            "seconds": task.golden.seconds,
            "notes": task.golden.notes,
        }
        created_at = task.golden.labelled_at or golden.now()
        missing = {
            doc_id: (task.line, "", {"title": None, "text": None, "metadata": None})
            for doc_id in task.golden.judgments
        }
        self._add_documents(missing, "<golden>")
        for event in golden.events_for_record(record, self.settings()["rel_threshold"]):
            self._append(task.query_id, created_at=created_at, **event)
        self._refresh(task.query_id)
        state = self.query_state(task.query_id)
        replayed = {
            "status": golden.EXPORTED_STATUS[state["status"]],
            "answerable": state["answerable"],
        }
        for field, value in replayed.items():
            if value != record[field]:
                problem = f"{record[field]!r}, but these labels give {value!r}"
                raise InputError(source, task.line, field, problem)
