"""Import speed: 50,000 queries x 20 candidates through the store vs plain sqlite3.executemany.

    python bench/import_speed.py [--queries 50000] [--candidates 20]

The baseline is plain ``sqlite3.executemany`` of the rows the store writes (queries,
documents, candidates) into an empty project database with the store's schema, in one
transaction, then the one bulk statement that fills the full-text index (the store indexes
documents for search; without it the baseline would write less than the store does). The
ratio is what the store adds on top: reading and validating the JSONL, hashing each query
for idempotent re-imports, its bookkeeping. Also shown: the executemany alone, and into bare
tables (no indexes). Target: store <= 2x the baseline.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path

from goldset.labeler.store import Store

WORDS = [
    *("parse", "retry", "upload", "stream", "bucket", "token", "client", "request", "timeout"),
    *("page", "cursor", "index", "shard", "replica", "schema", "migrate", "cache", "evict"),
    *("lease", "lock", "queue", "batch", "chunk", "encode", "decode", "vector"),
]


def write_tasks(path: Path, queries: int, candidates: int) -> None:
    """A synthetic tasks JSONL: every candidate is its own document with a short text."""
    with path.open("w", encoding="utf-8") as handle:
        for q in range(queries):
            words = [WORDS[(q * 7 + i) % len(WORDS)] for i in range(4)]
            record = {
                "query_id": f"q{q}",
                "query": " ".join(words),
                "slice": "head" if q % 3 else "tail",
                "candidates": [
                    {
                        "doc_id": f"d{q}-{c}",
                        "title": f"{words[c % 4]}_{c}()",
                        "text": " ".join(WORDS[(q + c + i) % len(WORDS)] for i in range(24)),
                        "score": float(candidates - c),
                    }
                    for c in range(candidates)
                ],
            }
            handle.write(json.dumps(record) + "\n")


def import_synthetic(store: Store, queries: int, candidates: int) -> float:
    """Import the synthetic tasks of :func:`write_tasks` into ``store``; the seconds it took."""
    with tempfile.TemporaryDirectory() as scratch:
        tasks = Path(scratch) / "tasks.jsonl"
        write_tasks(tasks, queries, candidates)
        started = time.perf_counter()
        store.import_tasks(tasks)
        return time.perf_counter() - started


def rows_of(path: Path) -> tuple[list, list, list]:
    """The rows the store writes for the tasks file, for the executemany baseline."""
    queries, documents, candidates = [], [], []
    with path.open(encoding="utf-8") as handle:
        for position, line in enumerate(handle, start=1):
            record = json.loads(line)
            queries.append(
                (
                    record["query_id"],
                    position,
                    record["query"],
                    record["slice"],
                    "{}",
                    "h",
                    "b",
                    "t",
                )
            )
            for rank, c in enumerate(record["candidates"], start=1):
                documents.append((c["doc_id"], c["title"], c["text"]))
                candidates.append((record["query_id"], c["doc_id"], rank, c["score"], rank))
    return queries, documents, candidates


def executemany(
    conn: sqlite3.Connection, rows: tuple[list, list, list], full_text: bool = False
) -> None:
    """One transaction of plain executemany calls (then, if asked, the full-text index)."""
    queries, documents, candidates = rows
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        "INSERT INTO queries (query_id, position, query, slice, metadata, content_hash, source, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        queries,
    )
    conn.executemany("INSERT INTO documents (doc_id, title, text) VALUES (?, ?, ?)", documents)
    conn.executemany(
        "INSERT INTO candidates (query_id, doc_id, position, score, imported_rank) "
        "VALUES (?, ?, ?, ?, ?)",
        candidates,
    )
    if full_text:
        conn.execute(
            "INSERT INTO documents_fts (rowid, title, text) "
            "SELECT rowid, title, text FROM documents"
        )
    conn.execute("COMMIT")


def bare_tables(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=wal")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(
        "CREATE TABLE queries (query_id, position, query, slice, metadata, content_hash, source, "
        "created_at); CREATE TABLE documents (doc_id, title, text); "
        "CREATE TABLE candidates (query_id, doc_id, position, score, imported_rank);"
    )
    return conn


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument("--candidates", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        tasks = folder / "tasks.jsonl"
        write_tasks(tasks, args.queries, args.candidates)
        rows = rows_of(tasks)
        print(
            f"{args.queries:,} queries x {args.candidates} candidates "
            f"({len(rows[2]):,} candidate rows, {tasks.stat().st_size / 2**20:.0f} MiB JSONL)"
        )

        timings = {}
        for name, full_text in (("indexed", True), ("plain", False)):
            Store(folder / f"{name}.db").close()  # the store's schema, empty
            baseline = sqlite3.connect(folder / f"{name}.db", isolation_level=None)
            timings[name] = timed(lambda: executemany(baseline, rows, full_text))  # noqa: B023
            baseline.close()

        bare = bare_tables(folder / "bare.db")
        bare_seconds = timed(lambda: executemany(bare, rows))
        bare.close()

        store = Store(folder / "store.db")
        store_seconds = timed(lambda: store.import_tasks(tasks))
        store.close()

    print(f"store.import_tasks (read, validate, write):   {store_seconds:7.2f} s")
    print(f"executemany + full-text index (baseline):     {timings['indexed']:7.2f} s")
    print(f"executemany alone, same schema:               {timings['plain']:7.2f} s")
    print(f"executemany alone, bare tables:               {bare_seconds:7.2f} s")
    print(
        f"ratio store / baseline:                       {store_seconds / timings['indexed']:7.2f}x"
    )
    print(f"ratio store / executemany alone:              {store_seconds / timings['plain']:7.2f}x")


if __name__ == "__main__":
    main()
