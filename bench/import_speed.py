"""Import speed: 50,000 queries x 20 candidates through the store vs plain sqlite3.executemany.

    python bench/import_speed.py [--queries 50000] [--candidates 20]

Both sides start from an empty project database with the store's schema (the same tables,
indexes and full-text triggers), so the ratio is what the store adds on top of writing the
rows: reading and validating the JSONL, hashing each query for idempotent re-imports, and
its bookkeeping. A third figure shows the same executemany into bare tables (no indexes,
no full-text index), to show what the schema itself costs. Target: store <= 2x executemany.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path

from labeler.store import Store

WORDS = (
    "parse retry upload stream bucket token client request timeout page cursor index shard "
    "replica schema migrate cache evict lease lock queue batch chunk encode decode vector"
).split()


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


def rows_of(path: Path) -> tuple[list, list, list]:
    """The rows the store writes for the tasks file, for the executemany baseline."""
    queries, documents, candidates = [], [], []
    with path.open(encoding="utf-8") as handle:
        for position, line in enumerate(handle, start=1):
            record = json.loads(line)
            queries.append(
                (record["query_id"], position, record["query"], record["slice"], "{}", "h", "b", "t")
            )
            for rank, c in enumerate(record["candidates"], start=1):
                documents.append((c["doc_id"], c["title"], c["text"]))
                candidates.append((record["query_id"], c["doc_id"], rank, c["score"], rank))
    return queries, documents, candidates


def executemany(conn: sqlite3.Connection, rows: tuple[list, list, list]) -> None:
    """One transaction of plain executemany calls."""
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
        print(f"{args.queries:,} queries x {args.candidates} candidates "
              f"({len(rows[2]):,} candidate rows, {tasks.stat().st_size / 2**20:.0f} MiB JSONL)")

        Store(folder / "baseline.db").close()  # same schema, empty
        baseline = sqlite3.connect(folder / "baseline.db", isolation_level=None)
        raw_seconds = timed(lambda: executemany(baseline, rows))
        baseline.close()

        bare = bare_tables(folder / "bare.db")
        bare_seconds = timed(lambda: executemany(bare, rows))
        bare.close()

        store = Store(folder / "store.db")
        store_seconds = timed(lambda: store.import_tasks(tasks))
        store.close()

    print(f"store.import_tasks (read + validate + write): {store_seconds:7.2f} s")
    print(f"sqlite3.executemany, same schema:             {raw_seconds:7.2f} s")
    print(f"sqlite3.executemany, bare tables:             {bare_seconds:7.2f} s")
    print(f"ratio store / executemany (same schema):      {store_seconds / raw_seconds:7.2f}x")


if __name__ == "__main__":
    main()
