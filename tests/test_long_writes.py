"""A large import holds the write lock only briefly at a time and stays all-or-nothing:
judgements written meanwhile are all stored once, readers see all of it or none, and a crash
halfway leaves nothing visible and nothing in the way of a retry. (Not timed: the waits are
measured by bench/lock_contention.py.)"""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from goldset.labeler.store import Store
from goldset.labeler.store import connection as store_connection
from goldset.labeler.store import imports as store_imports  # the import's pacing lives there

CANDIDATES = 20


def write_golden(path, first: int, count: int) -> str:
    """Done first-hit records judged to depth 3 (the third relevant), one in five pooled."""
    with path.open("w", encoding="utf-8") as handle:
        for n in range(first, first + count):
            docs = [f"g{n}-{c}" for c in range(CANDIDATES)]
            record = {
                "query_id": f"q{n}",
                "query": f"question {n}",
                "status": "done",
                "answerable": True,
                "judgments": {docs[0]: 0, docs[1]: 0, docs[2]: 1},
                "first_relevant_rank": 3,
                "judged_depth": 3,
                "mode": "first_hit",
                "annotators": ["ana"],
                "seconds": 9.0,
                "labelled_at": "2026-11-30T10:01:02Z",
                "notes": "",
            }
            if n % 5 == 0:
                record["pool"] = {"order": docs, "runs": {"A": docs, "B": docs[2:]}}
            handle.write(json.dumps(record) + "\n")
    return str(path)


def write_tasks(path, first: int, count: int) -> str:
    with path.open("w", encoding="utf-8") as handle:
        for n in range(first, first + count):
            record = {
                "query_id": f"q{n}",
                "query": f"question {n}",
                "candidates": [
                    {"doc_id": f"d{n}-{c}", "title": f"needle {n} {c}", "text": "hay " * 20}
                    for c in range(CANDIDATES)
                ],
            }
            handle.write(json.dumps(record) + "\n")
    return str(path)


@pytest.fixture
def paced_project(make_project, tmp_path, monkeypatch):
    """A project of 50 queries to label, and a 600-query tasks file to import into it.
    Transactions are kept tiny so that even this import takes many of them."""
    monkeypatch.setattr(store_imports, "STAGE_SECONDS", 0.005)
    monkeypatch.setattr(store_imports, "STAGE_PAUSE", 0.002)
    path = make_project(write_tasks(tmp_path / "labelled.jsonl", 0, 50))
    return path, write_tasks(tmp_path / "big.jsonl", 50, 600)


@pytest.fixture
def golden_set(tmp_path):
    """A 600-query golden set (labels to replay) to import into the project."""
    return write_golden(tmp_path / "golden.jsonl", 50, 600)


def judged_meanwhile(path, work) -> dict[str, int]:
    """Run ``work()`` while three annotators judge the project's first 50 queries flat out;
    check that no judgement failed and each was stored exactly once; return the count of
    judgements per annotator."""
    stop, done, errors = threading.Event(), {}, []

    def annotator(name: str) -> None:
        count = 0
        with Store(path) as store:
            while not stop.is_set() or count < 20:
                query = count % 50
                try:
                    store.judge(f"q{query}", f"d{query}-{count // 50 % CANDIDATES}", 0, name)
                except Exception as error:  # noqa: BLE001 - the test asserts there is none
                    errors.append(error)
                count += 1
                time.sleep(0.002)  # an annotator's pace, compressed
        done[name] = count

    writers = [threading.Thread(target=annotator, args=(f"a{n}",)) for n in range(3)]
    for writer in writers:
        writer.start()
    work()
    stop.set()
    for writer in writers:
        writer.join()
    assert errors == []
    with Store(path) as store:
        stored = dict(
            store.conn.execute(
                "SELECT annotator, count(*) FROM events WHERE batch IS NULL GROUP BY annotator"
            )
        )
        duplicates = store.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM events GROUP BY id HAVING count(*) > 1)"
        ).fetchone()[0]
    assert stored == done and duplicates == 0
    return done


@pytest.mark.parametrize("kind", ["tasks", "golden set"])
def test_judgements_during_a_large_import_are_all_stored_exactly_once(
    paced_project, golden_set, kind
):
    path, big = paced_project
    big = golden_set if kind == "golden set" else big
    counts = {}

    def work() -> None:
        with Store(path) as store:
            counts.update(store.import_tasks(big))

    judged_meanwhile(path, work)
    assert counts["queries_added"] == 600


def seen_during_import(path, big, look) -> set:
    """What ``look(store)`` returned, read in snapshots over and over while ``big`` was
    imported into the project at ``path`` (and once after)."""
    seen, stop = set(), threading.Event()

    def reader() -> None:
        with Store(path) as store:
            while not stop.is_set():
                with store.snapshot():
                    seen.add(look(store))

    watcher = threading.Thread(target=reader)
    watcher.start()
    with Store(path) as store:
        store.import_tasks(big)
    time.sleep(0.1)
    stop.set()
    watcher.join()
    return seen


def test_readers_see_all_of_an_import_or_none_of_it(paced_project):
    path, big = paced_project

    def look(store: Store) -> tuple:
        queries = store.conn.execute("SELECT count(*) FROM queries").fetchone()[0]
        candidates = store.conn.execute(
            "SELECT count(*) FROM candidates c JOIN queries q USING (query_id)"
        ).fetchone()[0]
        found = len(store.search("500", limit=100)) > 0  # query 500's docs
        # the two run frames read candidates without starting from a query
        frames = len(store.candidate_run_frame()), len(store.top_ranked_frame(None, 5))
        return queries, candidates, found, *frames

    seen = seen_during_import(path, big, look)
    after = (650, 650 * CANDIDATES, True, 650 * CANDIDATES, 650 * 5)
    assert seen <= {(50, 50 * CANDIDATES, False, 50 * CANDIDATES, 50 * 5), after}
    assert after in seen


def test_readers_see_all_of_a_golden_set_import_or_none_of_it(paced_project, golden_set):
    path, _ = paced_project

    def look(store: Store) -> tuple:
        # its events, labels and states are written before its queries: every reader that
        # does not start from a query must still see them only with their queries
        status = store.status()
        _, judgments = store.golden_frames()
        return (
            status["queries"],
            status["events"],
            status["judgements"],
            tuple(status["annotators"]),
            len(store.events_frame()),
            len(judgments),
            len(store.completed_depths()),
            len(store.candidate_run_frame()),
            len(store.top_ranked_frame(None, 5)),
            tuple(store.recent_queries("ana", 1)),
            store.progress()[""]["done"],
        )

    seen = seen_during_import(path, golden_set, look)
    before = (50, 0, 0, (), 0, 0, 0, 50 * CANDIDATES, 50 * 5, (), 0)
    pooled = 120 * CANDIDATES + 480 * 3  # one in five pooled over all its docs
    after = (650, 1800, 1800, ("ana",), 1800, 1800, 600, 1000 + pooled, 250 + 120 * 5 + 480 * 3)
    after += (("q649",), 600)
    assert seen <= {before, after}
    assert after in seen


def test_a_golden_set_import_publishes_only_its_queries_at_the_end(paced_project, golden_set):
    path, _ = paced_project
    transactions = []
    with Store(path) as store:
        store.transaction_observer = lambda seconds, rows: transactions.append(rows)
        store.import_tasks(golden_set)
        replayed = sum(
            store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("events", "labels", "query_state", "golden_judgments")
        )
    *bulk, publish = transactions
    # the queries, with their golden status already; a few counters and runs: the replayed
    # log and its projections were written before, in transactions of their own
    assert 600 <= publish <= 600 + 20
    assert sum(bulk) >= replayed + 600 * 3 and len(bulk) > 10


def test_pooling_new_queries_stages_their_pools_before_publishing(paced_project, tmp_path):
    path, _ = paced_project
    corpus, queries = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"c{n}", "text": f"corpus {n}"}) + "\n" for n in range(500)),
        encoding="utf-8",
    )
    queries.write_text(
        "".join(json.dumps({"_id": f"p{n}", "text": f"pooled {n}"}) + "\n" for n in range(300)),
        encoding="utf-8",
    )
    runs = []
    for name, offset in (("A", 0), ("B", 5)):
        run = tmp_path / f"{name}.trec"
        run.write_text(
            "".join(
                f"p{n} Q0 c{(n + offset + rank) % 500} {rank} {20 - rank} {name}\n"
                for n in range(300)
                for rank in range(1, 11)
            ),
            encoding="utf-8",
        )
        runs.append(run)
    transactions = []
    with Store(path) as store:
        store.transaction_observer = lambda seconds, rows: transactions.append(rows)
        counts = store.pool(corpus, queries, runs, depth=10)
        ranks = store.conn.execute("SELECT count(*) FROM pool_ranks").fetchone()[0]
        first = store.candidates("p0")
    assert counts["queries_added"] == 300 and counts["queries_touched"] == 300
    assert ranks == 300 * 2 * 10 and counts["candidates_added"] == 300 * 15
    # fused: c6..c10 are in both runs' top 10 and come first, then A's first
    assert [c["doc_id"] for c in first[:6]] == [f"c{n}" for n in (6, 7, 8, 9, 10, 1)]
    assert transactions[-1] < 300 * 2  # the queries and counters, not the ranks or candidates
    assert len(transactions) > 5


def test_a_failing_pool_leaves_none_of_its_staged_ranks(paced_project, tmp_path, monkeypatch):
    path, _ = paced_project
    corpus, queries, run = tmp_path / "c.jsonl", tmp_path / "q.jsonl", tmp_path / "A.trec"
    corpus.write_text(
        "".join(json.dumps({"_id": f"c{n}", "text": "x"}) + "\n" for n in range(50)),
        encoding="utf-8",
    )
    queries.write_text(
        "".join(json.dumps({"_id": f"p{n}", "text": "y"}) + "\n" for n in range(200)),
        encoding="utf-8",
    )
    run.write_text(
        "".join(f"p{n} Q0 c{r} {r} {50 - r} A\n" for n in range(200) for r in range(1, 11)),
        encoding="utf-8",
    )

    def fail(self):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Store, "_publish_queries", fail)
    with Store(path) as store:
        with pytest.raises(RuntimeError, match="disk full"):
            store.pool(corpus, queries, [run], depth=10)
        left = [
            store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("queries", "candidates", "pool_ranks", "runs", "documents")
        ]
    assert left == [50, 50 * CANDIDATES, 0, 0, 50 * CANDIDATES]


def test_a_failing_import_leaves_nothing_behind(paced_project, monkeypatch):
    path, big = paced_project
    original = Store._stage_candidates

    def fail_halfway(self, rows, batch):
        original(self, rows[: len(rows) // 2], batch)
        raise RuntimeError("disk full")

    monkeypatch.setattr(Store, "_stage_candidates", fail_halfway)
    with Store(path) as store:
        with pytest.raises(RuntimeError, match="disk full"):
            store.import_tasks(big)
        left = [
            store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("queries", "candidates", "documents", "import_batches")
        ]
    assert left == [50, 50 * CANDIDATES, 50 * CANDIDATES, 1]  # the first import's batch


KILLED_IMPORT = """
import sys
from goldset.labeler.store import Store, imports
imports.STAGE_SECONDS, imports.STAGE_PAUSE = 0.005, 0.05
Store(sys.argv[1]).import_tasks(sys.argv[2])
"""


UNPUBLISHED_CANDIDATES = (
    "SELECT count(*) FROM candidates WHERE batch IN "
    "(SELECT id FROM import_batches WHERE published_at IS NULL)"
)
UNPUBLISHED_LABELS = (  # a golden set's replayed log is written, its labels in part
    "SELECT count(*) FROM labels l WHERE NOT EXISTS "
    "(SELECT 1 FROM queries q WHERE q.query_id = l.query_id)"
)


@pytest.mark.parametrize(
    ("kind", "written"),
    [
        ("tasks", UNPUBLISHED_CANDIDATES),
        ("golden set", UNPUBLISHED_CANDIDATES),
        ("golden set", UNPUBLISHED_LABELS),
    ],
    ids=["tasks", "golden set, candidates written", "golden set, log written"],
)
def test_an_import_killed_halfway_shows_nothing_and_a_retry_completes(
    paced_project, golden_set, kind, written
):
    path, big = paced_project
    golden = kind == "golden set"
    big = golden_set if golden else big
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    importer = subprocess.Popen([sys.executable, "-c", KILLED_IMPORT, str(path), big], env=env)
    staged = 0
    with Store(path) as store:
        deadline = time.monotonic() + 120
        while staged < 900 and time.monotonic() < deadline:
            staged = store.conn.execute(written).fetchone()[0]
        importer.send_signal(signal.SIGKILL)
        importer.wait()
        assert staged >= 900  # killed with part of the import written
        status = store.status()
        assert (status["queries"], status["events"], status["judgements"]) == (50, 0, 0)
        assert status["annotators"] == [] and store.events_frame().empty
        assert store.golden_frames()[1].empty and store.recent_queries("ana") == []
        assert store.search("60") == []  # query 60's docs only (any word matches)
        counts = store.import_tasks(big)
        assert counts["queries_added"] == 600
        candidates = 600 * 3 + 120 * (CANDIDATES - 3) if golden else 600 * CANDIDATES
        assert counts["candidates_added"] == candidates
        done = store.progress()[""]["done"]
        unpublished = store.conn.execute(
            "SELECT count(*) FROM import_batches WHERE published_at IS NULL"
        ).fetchone()[0]
        stored = [
            store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("candidates", "events", "labels", "query_state", "golden_judgments")
        ]
    assert unpublished == 0 and done == (600 if golden else 0)
    replayed = [1800, 1800, 600, 1800] if golden else [0, 0, 0, 0]
    assert stored == [50 * CANDIDATES + candidates, *replayed]  # the dead import's are gone


def test_a_refused_pool_leaves_none_of_its_staged_corpus(paced_project, tmp_path):
    path, _ = paced_project
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"c{n}", "text": f"corpus {n}"}) + "\n" for n in range(3_000)),
        encoding="utf-8",
    )
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"_id": "p1", "text": "pooled"}) + "\n", encoding="utf-8")
    run = tmp_path / "A.trec"
    run.write_text("p1 Q0 c1 1 2.0 A\np1 Q0 not-in-corpus 2 1.0 A\n", encoding="utf-8")
    with Store(path) as store:
        with pytest.raises(ValueError, match="not-in-corpus"):
            store.pool(corpus, queries, [run], depth=10)
        documents = store.conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        assert store.search("corpus") == []
    assert documents == 50 * CANDIDATES


def test_an_export_in_progress_lets_annotators_write(paced_project):
    path, _ = paced_project
    with Store(path) as exporter, Store(path, timeout=0.5) as annotator:
        records = exporter.iter_golden_records()
        first = next(records)  # the export holds its read snapshot from here to the end
        annotator.judge("q1", "d1-0", 1, "ana")
        rest = list(records)
    assert first["query_id"] == "q0" and len(rest) == 49
    with Store(path) as store:
        assert store.labels("q1") == {"d1-0": 1}  # committed while the export was reading


def traced_transactions(store: Store) -> list[list[str]]:
    """The statements of each transaction that ``store`` runs from now on, as SQLite traces
    them (an ``executemany`` once per row)."""
    transactions: list[list[str]] = []

    def trace(sql: str) -> None:
        if sql.startswith("BEGIN"):
            transactions.append([])
        elif transactions and store.conn.in_transaction:
            transactions[-1].append(sql)

    store.conn.set_trace_callback(trace)
    return transactions


def published_in(transactions: list[list[str]]) -> list[str]:
    """The statements of the transaction that published an import or a pool."""
    return next(
        statements
        for statements in transactions
        if any(sql.startswith("UPDATE import_batches SET published_at") for sql in statements)
    )


def two_runs(tmp_path, queries: int) -> tuple:
    """A corpus of 100 docs, ``queries`` queries p0.., and runs A and B (B's top 10 starts
    3 docs further down the corpus): the paths of corpus, queries and the runs by name."""
    corpus, topics = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"c{n}", "text": "x"}) + "\n" for n in range(100)),
        encoding="utf-8",
    )
    topics.write_text(
        "".join(json.dumps({"_id": f"p{n}", "text": "y"}) + "\n" for n in range(queries)),
        encoding="utf-8",
    )
    runs = {}
    for name, offset in (("A", 0), ("B", 3)):
        runs[name] = tmp_path / f"{name}.trec"
        runs[name].write_text(
            "".join(
                f"p{n} Q0 c{(n + offset + r) % 100} {r} {20 - r} {name}\n"
                for n in range(queries)
                for r in range(1, 11)
            ),
            encoding="utf-8",
        )
    return corpus, topics, runs


@pytest.mark.parametrize("queries", [40, 400])
def test_pooling_a_run_over_known_queries_publishes_in_statements_not_per_query(tmp_path, queries):
    corpus, topics, runs = two_runs(tmp_path, queries)
    with Store(tmp_path / "project.db") as store:
        store.pool(corpus, topics, [runs["A"]], depth=10)
        store.judge("p0", "c1", 1, "ana")  # done in first-hit: B's top 10 (no c1) its holes
        transactions = traced_transactions(store)
        counts = store.pool(None, None, [runs["B"]], depth=10)
        done, holes = store.progress()[""]["done"], store.query_state("p0")["holes"]
    assert counts["queries_touched"] == queries and counts["candidates_added"] == 3 * queries
    assert (done, holes) == (1, 10)  # still in the golden set, with work left
    # the new run's ranks are written before (in short transactions, hidden until the run is
    # registered); publishing is the same few bulk statements at either size: nothing per
    # query
    assert len(transactions) >= 3 and len(published_in(transactions)) < 40


def test_re_deriving_labelled_queries_publishes_in_statements_not_per_query(tmp_path):
    written = {}
    for queries in (40, 400):
        folder = tmp_path / str(queries)
        folder.mkdir()
        corpus, topics, runs = two_runs(folder, queries)
        with Store(folder / "project.db") as store:
            store.pool(corpus, topics, [runs["A"]], depth=10)
            for n in range(queries):  # A's first: done, B's top its holes; grade 2 reopens
                store.judge(f"p{n}", f"c{(n + 1) % 100}", 1, "ana")
            transactions = traced_transactions(store)
            store.pool(None, None, [runs["B"]], depth=10)
            pooled = published_in(transactions)
            del transactions[:]
            store.configure(rel_threshold=2)
            (configured,) = [t for t in transactions if any("protocol_log" in s for s in t)]
            reopened = store.progress("ana")[""]["in_progress"]
        assert reopened == queries
        written[queries] = (len(pooled), len(configured))
    # every labelled query's state changed twice, in the same few statements at either size
    assert written[40] == written[400] and max(written[400]) < 40


def test_a_golden_import_writes_the_golden_projection_that_its_rows_merge_to(tmp_path):
    from goldset.labeler.store.golden_rows import golden_labels, stored_golden

    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with Store(source) as store:
        store.import_tasks(write_tasks(tmp_path / "a.jsonl", 0, 6))
        store.judge("q0", "d0-0", 0, "ana")
        store.judge("q0", "d0-0", 1, "bob")  # they disagree: a reviewer decides
        store.adjudicate("q0", "rita", {"d0-0": 2}, True)
        store.judge("q1", "d1-0", 0, "ana")
        store.judge("q1", "d1-1", 1, "ana")
        store.judge("q2", "d2-0", 1, "bob")
        store.write_jsonl(tmp_path / "golden.jsonl")
    with Store(target) as store:  # a log and decisions already there: ids are shifted
        store.import_tasks(write_tasks(tmp_path / "b.jsonl", 100, 3))
        store.judge("q100", "d100-0", 1, "ana")
        store.adjudicate("q101", "rita", {"d101-0": 1}, True)
        store.import_tasks(tmp_path / "golden.jsonl")
        ids = [f"q{n}" for n in (0, 1, 2, 3, 100, 101)]
        written = stored_golden(store.conn, ids)
        merged = dict(golden_labels(store.conn, ids))
    assert written == merged
    assert written["q0"].grades == {"d0-0": 2} and written["q1"].status == "done"


def test_a_writer_with_a_short_busy_timeout_gets_in_between_an_imports_transactions(
    paced_project, golden_set, monkeypatch
):
    # pauses far shorter than the 100 ms SQLite's own busy handler sleeps between its later
    # tries: a writer gets in only if it keeps trying every few milliseconds (Store._begin)
    monkeypatch.setattr(store_imports, "STAGE_SECONDS", 0.1)
    monkeypatch.setattr(store_imports, "STAGE_PAUSE", 0.015)
    path, _ = paced_project
    stop, judged, errors = threading.Event(), [], []

    def annotator() -> None:
        with Store(path, timeout=1.0) as store:
            while not stop.is_set():
                try:
                    store.judge("q1", f"d1-{len(judged) % CANDIDATES}", 0, "ana")
                    judged.append(1)
                except Exception as error:  # noqa: BLE001 - the test asserts there is none
                    errors.append(error)
                    return
                time.sleep(0.002)

    writer = threading.Thread(target=annotator)
    with Store(path) as store:
        writer.start()
        try:
            store.import_tasks(golden_set)
        finally:
            stop.set()
            writer.join()
    assert errors == [] and len(judged) > 10


def next_query_run(tmp_path, queries: int) -> str:
    """A run "B" over q0.. whose top 10 for each query are 5 of its own candidates, then the
    next query's first 5 docs."""
    run = tmp_path / "B.trec"
    run.write_text(
        "".join(
            f"q{n} Q0 d{n if r <= 5 else (n + 1) % queries}-{r + 9 if r <= 5 else r - 6} "
            f"{r} {11 - r} B\n"
            for n in range(queries)
            for r in range(1, 11)
        ),
        encoding="utf-8",
    )
    return str(run)


def test_readers_see_all_of_pooling_a_run_over_known_queries_or_none_of_it(paced_project, tmp_path):
    path, _ = paced_project
    run, seen, stop = next_query_run(tmp_path, 50), set(), threading.Event()

    def reader() -> None:
        with Store(path) as store:
            while not stop.is_set():
                with store.snapshot():
                    shown = store.candidates("q7")
                    seen.add((len(shown), sum("B" in c["provenance"] for c in shown)))

    watcher = threading.Thread(target=reader)
    watcher.start()
    with Store(path) as store:
        counts = store.pool(None, None, [run], depth=10)
    time.sleep(0.1)
    stop.set()
    watcher.join()
    assert counts["candidates_added"] == 50 * 5
    after = (CANDIDATES + 5, 10)  # its ranks are written first, its candidates last
    assert seen <= {(CANDIDATES, 0), after} and after in seen


def test_a_failing_pool_over_known_queries_leaves_none_of_the_runs_ranks(
    paced_project, tmp_path, monkeypatch
):
    path, _ = paced_project

    def fail(self, pooled):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Store, "_register_runs", fail)
    with Store(path) as store:
        with pytest.raises(RuntimeError, match="disk full"):
            store.pool(None, None, [next_query_run(tmp_path, 50)], depth=10)
        left = [
            store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("pool_ranks", "runs", "candidates", "import_batches")
        ]
    assert left == [0, 0, 50 * CANDIDATES, 1]


KNOWN = 2_000  # the queries that a run is pooled over in the tests below


@pytest.fixture(scope="module")
def known_project(tmp_path_factory):
    """A project of KNOWN queries x CANDIDATES candidates, built once (each test copies it)."""
    folder = tmp_path_factory.mktemp("known")
    with Store(folder / "project.db") as store:
        store.import_tasks(write_tasks(folder / "tasks.jsonl", 0, KNOWN))
    return folder / "project.db"


@pytest.fixture
def known_queries(known_project, tmp_path, monkeypatch):
    """A copy of the KNOWN-query project, kept to tiny transactions, and a run "B" over all
    its queries that adds 5 candidates to each (see next_query_run)."""
    monkeypatch.setattr(store_imports, "STAGE_SECONDS", 0.005)
    monkeypatch.setattr(store_imports, "STAGE_PAUSE", 0.002)
    path = tmp_path / "project.db"
    shutil.copy(known_project, path)
    return path, next_query_run(tmp_path, KNOWN)


def tables(store: Store) -> set[str]:
    return {row[0] for row in store.conn.execute("SELECT name FROM sqlite_master")}


def test_pooling_over_thousands_of_known_queries_writes_in_short_transactions(
    known_queries, monkeypatch
):
    path, run = known_queries
    monkeypatch.setattr(store_imports, "STAGE_SECONDS", 0)  # each the smallest: 100 items
    monkeypatch.setattr(store_connection, "DROP_ROWS", 100 * CANDIDATES)
    transactions = []
    with Store(path) as store:
        store.judge("q3", "d3-0", 1, "ana")  # labelled: refreshed when the pool publishes
        schema = tables(store)
        store.transaction_observer = lambda seconds, rows: transactions.append(rows)
        counts = store.pool(None, None, [run], depth=10)
        stored = store.conn.execute("SELECT count(*) FROM candidates").fetchone()[0]
        state = store.query_state("q3", "ana")
        after = tables(store)
    assert counts["queries_touched"] == KNOWN and counts["candidates_added"] == KNOWN * 5
    assert stored == KNOWN * (CANDIDATES + 5)
    # the candidates are copied (100 queries' at a time) and reordered in many transactions,
    # the old ones deleted so; before, the publishing one upserted all KNOWN x 15 new
    # positions (6.8 s at 70,000 queries), and then dropping the old table took 1.2 s
    assert len(transactions) > 20 and max(transactions) <= 100 * CANDIDATES
    # B put new candidates above the one judged relevant: holes, and q3 stays done
    assert state["status"] == "done" and state["holes"] > 0
    # the copy's indexes have the other names; no copy or old table is left
    assert {name.removesuffix("_alt") for name in after} == schema


def test_readers_see_every_known_query_in_its_old_order_or_all_in_its_new(known_queries):
    path, run = known_queries
    looked = ("q0", f"q{KNOWN // 2}", f"q{KNOWN - 1}")
    seen, ready, stop = set(), threading.Event(), threading.Event()

    def orders(store: Store) -> tuple:
        with store.snapshot():
            return tuple(tuple(c["doc_id"] for c in store.candidates(q)) for q in looked)

    def reader() -> None:
        with Store(path) as store:  # open across the swap: its statements are re-prepared
            while True:
                finished = stop.is_set()
                seen.add(orders(store))
                ready.set()
                if finished:
                    return

    watcher = threading.Thread(target=reader)
    watcher.start()
    ready.wait()
    with Store(path) as store:
        before = orders(store)
        store.pool(None, None, [run], depth=10)
        after = orders(store)
    stop.set()
    watcher.join()
    assert before != after and {len(order) for order in after} == {CANDIDATES + 5}
    assert seen == {before, after}


def test_judgements_during_a_pool_over_known_queries_are_all_stored_exactly_once(
    known_queries,
):
    path, run = known_queries
    counts = {}

    def work() -> None:
        with Store(path) as store:
            counts.update(store.pool(None, None, [run], depth=10))

    done = judged_meanwhile(path, work)
    assert counts["queries_touched"] == KNOWN and sum(done.values()) >= 60


KILLED_POOL = """
import sys
from goldset.labeler.store import Store, imports
imports.STAGE_SECONDS, imports.STAGE_PAUSE = 0.005, 0.05
Store(sys.argv[1]).pool(None, None, [sys.argv[2]], depth=10)
"""


def copied_rows(store: Store) -> int:
    """How many rows a pool has copied into its next candidates table so far (0: none yet)."""
    if "candidates_next" not in tables(store):
        return 0
    try:
        return store.conn.execute("SELECT count(*) FROM candidates_next").fetchone()[0]
    except sqlite3.OperationalError:  # dropped meanwhile
        return 0


def test_a_pool_killed_while_copying_the_candidates_leaves_the_project_as_before(known_queries):
    path, run = known_queries
    shown = "SELECT query_id, doc_id, position, score FROM candidates ORDER BY query_id, doc_id"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with Store(path) as store:
        before, schema = store.conn.execute(shown).fetchall(), tables(store)
        pooler = subprocess.Popen([sys.executable, "-c", KILLED_POOL, str(path), run], env=env)
        copied, deadline = 0, time.monotonic() + 120
        while copied < 5_000 and time.monotonic() < deadline:
            copied = copied_rows(store)
        pooler.send_signal(signal.SIGKILL)
        pooler.wait()
        assert copied >= 5_000  # killed with part of the copy written
        left = store.conn.execute(shown).fetchall()
        provenance = {p for c in store.candidates("q7") for p in c["provenance"]}
        runs = store.conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        assert left == before and runs == 0 and "B" not in provenance
        counts = store.pool(None, None, [run], depth=10)  # the retry drops the copy first
        assert counts["candidates_added"] == KNOWN * 5
        assert {name.removesuffix("_alt") for name in tables(store)} == schema


def test_a_table_left_by_a_pool_killed_after_its_swap_is_dropped_by_the_next_import(paced_project):
    path, big = paced_project
    with Store(path) as store:
        schema = tables(store)
        # what a pool killed between its swap and dropping the old table leaves
        store.conn.execute("CREATE TABLE candidates_retired AS SELECT * FROM candidates")
        store.import_tasks(big)
        assert tables(store) == schema


def test_rebuilding_the_projections_waits_for_a_running_import(paced_project):
    # Rebuilt meanwhile, the projections would lose the import's rows staged so far.
    path, _ = paced_project
    importer, rebuilder = Store(path), Store(path)
    rebuilt = threading.Event()
    with importer._import_lock():
        worker = threading.Thread(target=lambda: (rebuilder.rebuild_projections(), rebuilt.set()))
        worker.start()
        assert not rebuilt.wait(0.5)  # held back while the import holds its lock
    assert rebuilt.wait(30)
    worker.join()
    importer.close()
    rebuilder.close()


def meanwhile(monkeypatch, act, after: str = "_rederive") -> None:
    """Run ``act()`` once, after the store's next call of ``after``: ``_rederive`` (between
    a re-derivation and its publishing transaction) or ``_derive`` (between its passes)."""
    original, pending = getattr(Store, after), [act]

    def wrapped(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        while pending:
            pending.pop()()  # taken first: what it runs may re-derive too
        return result

    monkeypatch.setattr(Store, after, wrapped)


def refreshed_by(monkeypatch) -> list:
    """(store, query_id) of every :meth:`Store._refresh` from now on: a query re-derived
    one by one."""
    original, calls = Store._refresh, []

    def refresh(self, query_id, *args, **kwargs):
        calls.append((self, query_id))
        return original(self, query_id, *args, **kwargs)

    monkeypatch.setattr(Store, "_refresh", refresh)
    return calls


def labelled_project(path) -> None:
    """Labels on the 50-query project: ana done on q1 and q3, in progress on q2."""
    with Store(path) as store:
        store.judge("q1", "d1-0", 1, "ana")
        store.judge("q2", "d2-0", 0, "ana")
        store.judge("q3", "d3-0", 0, "ana")
        store.judge("q3", "d3-1", 2, "ana")


ACTED_MEANWHILE = {  # an action on a query while its state is derived, and what it leaves
    "a judgement": (lambda s: s.judge("q1", "d1-1", 2, "ana"), ("q1", "ana", "d1-1", 2)),
    "an undo": (lambda s: s.undo("ana", "q3"), ("q3", "ana", "d3-1", None)),
    "first judgements": (
        lambda s: (s.judge("q4", "d4-3", 0, "cid"), s.judge("q4", "d4-0", 1, "cid")),
        ("q4", "cid", "d4-0", 1),
    ),
    "a decision": (  # q1 stays done, which the pool and the protocol would reopen
        lambda s: s.adjudicate("q1", "rita", {"d1-0": 2}, True),
        ("q1", None, "d1-0", 2),
    ),
}


@pytest.mark.parametrize("acted", ACTED_MEANWHILE)
@pytest.mark.parametrize("change", ["pool", "protocol"])
@pytest.mark.parametrize("after", ["_derive", "_rederive"])
def test_acting_on_a_query_while_its_state_is_derived_is_not_lost(
    paced_project, tmp_path, monkeypatch, acted, change, after
):
    # acted on between two passes, the query is derived again before publishing; after the
    # last, the publishing transaction derives it from its newest events
    from test_golden_projection import every_projection, rebuilt

    path, _ = paced_project
    labelled_project(path)
    act, (query_id, annotator, doc_id, grade) = ACTED_MEANWHILE[acted]
    meanwhile(monkeypatch, lambda: act(Store(path)), after)
    with Store(path) as store:
        refreshed = refreshed_by(monkeypatch)
        if change == "pool":
            store.pool(None, None, [next_query_run(tmp_path, 50)], depth=10)
        else:
            store.configure(depth=1, rel_threshold=2)
        one_by_one = [q for by, q in refreshed if by is store]
        assert one_by_one == ([] if after == "_derive" else [query_id])
        assert store.labels(query_id, annotator).get(doc_id) == grade
        live = every_projection(store)
        assert rebuilt(store) == live  # re-derived from its newest events


@pytest.mark.parametrize("change", ["pool", "protocol"])
def test_a_change_to_what_states_derive_from_meanwhile_re_derives_every_labelled_query(
    paced_project, tmp_path, monkeypatch, change
):
    # a protocol change while a pool derives, or a pool while a protocol change derives:
    # what was derived no longer holds, and the publishing transaction derives again
    from test_golden_projection import every_projection, rebuilt

    path, _ = paced_project
    labelled_project(path)
    run = next_query_run(tmp_path, 50)
    other = {
        "pool": lambda: Store(path).configure(depth=3),
        "protocol": lambda: Store(path).pool(None, None, [run], depth=10),
    }
    meanwhile(monkeypatch, other[change])
    with Store(path) as store:
        if change == "pool":
            store.pool(None, None, [run], depth=10)
        else:
            store.configure(depth=3)
        assert store.settings()["depth"] == 3 and "B" in store.candidates("q1")[0]["provenance"]
        live = every_projection(store)
        assert rebuilt(store) == live
