"""Lock contention: how long annotators' judgements wait while a large import runs.

    python bench/lock_contention.py [--queries 60000] [--candidates 20] [--writers 2]
                                    [--golden | --pool [--labelled N]]

A project holds 500 queries to label. Then ``--writers`` processes (annotators, as the app's
server would write for them) each judge one candidate after another, flat out, while the main
process imports ``--queries`` new queries × ``--candidates`` candidates — or, with
``--golden``, a golden set of that many labelled queries (first-hit records judged to depth 3,
one in ten unanswerable, one in five pooled from two runs over ``--candidates`` docs), whose
import replays every label into the log — or, with ``--pool``, pooling a new run (10 new
documents per query) over all the project's queries, imported beforehand; ``--labelled N``
first judges the first candidate of N of them relevant (as annotator ``ana``; every third
query, the first not relevant and the second relevant), so that the pool re-derives the
states of N labelled queries. Reported: the
import's time and its write transactions (how many, the longest, the most rows in one), and
for the judgements made during it the count, the median, the 99th percentile and the
longest wait (one ``Store.judge`` call, lock wait included), and any error. The import
writes in short transactions and publishes in one short one (see ``Store.import_tasks``),
so the longest wait stays near the longest of them, not the whole import.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path

from import_speed import write_tasks

from goldset.labeler.store import Store

LABELLED = 500  # queries in the project before the import, for the writers to judge


def judge_until(path: Path, writer: int, stop, results) -> None:
    """One annotator: judge candidates of the labelled queries until ``stop`` is set."""
    name = f"annotator{writer}"
    waits, errors = [], []
    with Store(path) as store:
        query, rank = 0, 1
        while not stop.is_set():
            started = time.perf_counter()
            try:
                store.judge(f"q{query}", f"d{query}-{rank - 1}", 0, name, seconds=1.0)
            except Exception as error:  # noqa: BLE001 - counted and reported, never expected
                errors.append(repr(error))
            waits.append(time.perf_counter() - started)
            query, rank = (query + 1) % LABELLED, rank % 20 + 1
    results.put((waits, errors))


def label_first(store: Store, count: int) -> None:
    """Judge the first candidate of queries ``q0``.. ``q{count - 1}`` relevant (every third:
    the first not relevant, the second relevant), through the store's own action path, a
    thousand queries a transaction to keep the setup fast."""
    for start in range(0, count, 1_000):
        with store._writing():
            for n in range(start, min(start + 1_000, count)):
                grades = (0, 1) if n % 3 == 0 else (1,)
                for rank, grade in enumerate(grades):
                    store._act(
                        f"q{n}",
                        "ana",
                        action="judge",
                        doc_id=f"d{n}-{rank}",
                        grade=grade,
                        mode="first_hit",
                        seconds=1.0,
                    )


def write_golden(path: Path, first: int, count: int, candidates: int) -> None:
    """A synthetic golden set of ``count`` done queries (``q{first}`` on), as an export has them."""
    with path.open("w", encoding="utf-8") as handle:
        for n in range(first, first + count):
            docs = [f"d{n}-{c}" for c in range(candidates)]
            record = {
                "query_id": f"q{n}",
                "query": f"question {n}",
                "slice": "head" if n % 3 else "tail",
                "status": "done",
                "answerable": n % 10 != 7,
                "judgments": dict.fromkeys(docs[:3], 0) | ({docs[2]: 1} if n % 10 != 7 else {}),
                "first_relevant_rank": None if n % 10 == 7 else 3,
                "judged_depth": 3,
                "mode": "first_hit",
                "annotators": ["ana"],
                "seconds": 12.5,
                "labelled_at": "2026-11-30T10:01:02Z",
                "notes": "",
            }
            if n % 5 == 0:  # pooled: the candidates beyond the judged ones come with it
                order = [docs[2], *docs[:2], *docs[3:]]
                record["judgments"] = {docs[2]: 1}
                record["first_relevant_rank"], record["judged_depth"] = 1, 1
                record["answerable"] = True
                record["pool"] = {"order": order, "runs": {"A": order, "B": order[:1] + order[3:]}}
            handle.write(json.dumps(record) + "\n")


def write_run(path: Path, queries: int) -> None:
    """A TREC run over queries ``q0``..: for each, the first 10 documents of the next one."""
    with path.open("w", encoding="utf-8") as handle:
        for q in range(queries):
            for rank in range(1, 11):
                handle.write(f"q{q} Q0 d{(q + 1) % queries}-{rank - 1} {rank} {11 - rank} B\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=60_000)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--writers", type=int, default=2)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--golden", action="store_true", help="import a golden set instead")
    kind.add_argument("--pool", action="store_true", help="pool a run over them instead")
    parser.add_argument(
        "--labelled", type=int, default=0, help="with --pool: label this many queries first"
    )
    args = parser.parse_args()
    if args.labelled and not args.pool:
        parser.error("--labelled goes with --pool")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        labelled, tasks = folder / "labelled.jsonl", folder / "tasks.jsonl"
        write_tasks(labelled, LABELLED, 20)
        if args.golden:
            write_golden(tasks, LABELLED, args.queries, args.candidates)
        else:
            write_tasks(tasks, LABELLED + args.queries, args.candidates)
        path = folder / "project.db"
        with Store(path) as store:
            store.import_tasks(labelled)
            if args.pool:  # the queries are there already: the run is pooled over them all
                store.import_tasks(tasks)
                tasks = folder / "B.trec"
                write_run(tasks, LABELLED + args.queries)
                label_first(store, args.labelled)
        # the same generator: the first LABELLED queries of the big file are already there
        context = multiprocessing.get_context("spawn")
        stop, results = context.Event(), context.Queue()
        writers = [
            context.Process(target=judge_until, args=(path, n, stop, results))
            for n in range(args.writers)
        ]
        for writer in writers:
            writer.start()
        time.sleep(2.0)  # the writers are up and judging
        transactions: list[tuple[float, int]] = []
        with Store(path) as store:
            store.transaction_observer = lambda seconds, rows: transactions.append((seconds, rows))
            started = time.perf_counter()
            if args.pool:
                counts = store.pool(None, None, [tasks], depth=10)
                counts["queries_added"] = counts["queries_touched"]
            else:
                counts = store.import_tasks(tasks)
            import_seconds = time.perf_counter() - started
        stop.set()
        waits, errors = [], []
        for _ in writers:
            more_waits, more_errors = results.get()
            waits += more_waits
            errors += more_errors
        for writer in writers:
            writer.join()
    waits.sort()
    kind = "golden records" if args.golden else f"queries x {args.candidates} candidates"
    kind = "queries pooled over (a new run, 10 docs each)" if args.pool else kind
    print(
        f"import of {counts['queries_added']:,} {kind}: "
        f"{import_seconds:.1f} s, {args.writers} writers judging meanwhile"
    )
    print(
        f"import's write transactions: {len(transactions)}; longest "
        f"{max(seconds for seconds, _ in transactions) * 1000:.0f} ms, most rows in one "
        f"{max(rows for _, rows in transactions):,}"
    )
    longest = sorted(enumerate(transactions, 1), key=lambda item: -item[1][0])[:5]
    print(
        "longest: "
        + ", ".join(f"#{n} {sec * 1000:.0f} ms ({rows:,} rows)" for n, (sec, rows) in longest)
    )
    print(
        f"judgements: {len(waits):,}; wait median {statistics.median(waits) * 1000:.1f} ms, "
        f"p99 {waits[int(len(waits) * 0.99)] * 1000:.1f} ms, longest {waits[-1] * 1000:.0f} ms"
    )
    print(f"errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print(f"load average: {', '.join(f'{load:.1f}' for load in os.getloadavg())}")


if __name__ == "__main__":
    main()
