"""A project labelled before holes existed re-derives its projections once when opened: a
query that an earlier pool took out of the golden set (a new run's unjudged doc above its
first relevant one used to reopen it) is done again, with that doc as its hole (issue 26)."""

import json
import sqlite3

import pytest

from goldset.labeler.store import Store


def old_schema(path) -> None:
    """Take the project back to the schema before version 16 (no holes, no join marks),
    with the states version 15's rule derived: q1, which the pool left with an unsettled
    run, reopened (in progress) and out of the golden set."""
    conn = sqlite3.connect(path)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(import_batches)")}
    if "last_event" in columns:  # version 17's
        conn.execute("ALTER TABLE import_batches DROP COLUMN last_event")
    conn.executescript(
        """
        DROP TABLE IF EXISTS stale_projections;
        DROP INDEX queries_open;
        CREATE INDEX queries_open ON queries(position) WHERE status != 'done';
        ALTER TABLE queries DROP COLUMN holes;
        ALTER TABLE query_state DROP COLUMN holes;
        DELETE FROM _sqlite_migrations WHERE name IN ('m16_holes', 'm17_verdict_coverage');
        UPDATE query_state SET status = 'in_progress' WHERE query_id = 'q1';
        UPDATE queries SET status = 'in_progress' WHERE query_id = 'q1';
        UPDATE progress SET n = n - 1 WHERE state = 'done' AND annotator IN ('', 'ana');
        INSERT INTO progress (annotator, slice, state, n) VALUES ('', '', 'in_progress', 1),
            ('ana', '', 'in_progress', 1)
            ON CONFLICT (annotator, slice, state) DO UPDATE SET n = n + 1;
        """
    )
    conn.commit()
    conn.close()


@pytest.fixture
def old_project(tmp_path):
    """q1 and q2 imported with three candidates each and judged by ana, q1 relevant at 1
    and q2 at 2; then a run pooled that ranks a new doc above q1-d1 (q2: its hit first)."""
    tasks = [
        {
            "query_id": q,
            "query": f"about {q}",
            "candidates": [{"doc_id": f"{q}-d{n}", "text": "text"} for n in (1, 2, 3)],
        }
        for q in ("q1", "q2")
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"q{n}-d4", "text": "new"}) + "\n" for n in (1, 2))
    )
    run = tmp_path / "second.trec"
    run.write_text("q1 Q0 q1-d4 1 9 second\nq1 Q0 q1-d1 2 8 second\nq2 Q0 q2-d2 1 9 second\n")
    path = tmp_path / "old.db"
    with Store(path) as store:
        store.import_records(tasks)
        store.add_corpus(corpus)
        store.judge("q1", "q1-d1", 1, "ana")
        store.judge("q2", "q2-d1", 0, "ana")
        store.judge("q2", "q2-d2", 1, "ana")
        store.pool(None, None, [str(run)], depth=2)
    old_schema(path)
    return path


def test_opening_an_old_project_puts_its_reopened_queries_back_in_the_golden_set(old_project):
    with Store(old_project) as store:
        state = store.query_state("q1")
        assert (state["status"], state["holes"]) == ("done", 1)  # q1-d4, the new run's top
        assert store.query_state("q1", "ana")["status"] == "done"
        assert store.progress()[""]["done"] == 2 and store.progress("ana")[""]["done"] == 2
        assert store.next_query("ana") == "q1"  # its hole is work in the queue
        assert store.next_candidate("q1", "ana")["doc_id"] == "q1-d4"
        assert store.conn.execute("SELECT count(*) FROM stale_projections").fetchone() == (0,)
        live = {
            table: store.conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("query_state", "progress WHERE n != 0", "queries", "golden_judgments")
        }
        store.rebuild_projections()
        for table, rows in live.items():
            assert store.conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() == rows


def test_the_re_derivation_runs_once(old_project):
    with Store(old_project):
        pass
    conn = sqlite3.connect(old_project)  # states written as version 15 had them, again
    conn.execute("UPDATE query_state SET status = 'in_progress' WHERE query_id = 'q1'")
    conn.commit()
    conn.close()
    with Store(old_project) as store:  # nothing marked stale: not re-derived again
        stored = "SELECT status FROM query_state WHERE query_id = 'q1'"
        assert store.conn.execute(stored).fetchone() == ("in_progress",)


def test_a_new_project_is_not_marked_stale(tmp_path):
    with Store(tmp_path / "new.db") as store:
        assert store.conn.execute("SELECT count(*) FROM stale_projections").fetchone() == (0,)
