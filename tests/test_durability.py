"""Durability: a process that acknowledged N judgements is killed with SIGKILL at a random
moment; after reopening, all N are there (and the database is intact)."""

import os
import signal
import subprocess
import sys

import pytest

from goldset.labeler.store import DEMO_TASKS, Store, migrations

# Judges the demo's candidates one after another, printing each event id once judge() returned.
WORKER = """
import sys
from goldset.labeler.store import Store

store = Store(sys.argv[1])
pairs = [(q, c["doc_id"]) for q in [f"q{n:02d}" for n in range(1, 51)] for c in store.candidates(q)]
for step in range(10**6):
    query_id, doc_id = pairs[step % len(pairs)]
    event_id = store.judge(query_id, doc_id, step % 2, "ana", seconds=1.0)
    print(event_id, flush=True)
"""


@pytest.mark.parametrize("acknowledged", [37, 150, 401])
def test_every_acknowledged_judgement_survives_sigkill(tmp_path, acknowledged):
    db = tmp_path / "project.db"
    with Store(db) as store:
        store.import_tasks(DEMO_TASKS)
    child = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(db)], stdout=subprocess.PIPE, text=True
    )
    ids = [int(child.stdout.readline()) for _ in range(acknowledged)]
    os.kill(child.pid, signal.SIGKILL)  # the child is still judging: killed mid-write
    child.wait()
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    with Store(db) as store:
        log = store.events_frame()
        assert set(ids) <= set(log["id"])
        assert len(log) >= acknowledged
        assert store.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        before = store.golden_records()
        store.rebuild_projections()  # the projections committed with the events: consistent
        assert store.golden_records() == before


def test_wal_with_normal_sync_by_default_and_full_sync_on_request(tmp_path):
    with Store(tmp_path / "normal.db") as store:
        pragmas = [
            store.conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")
        ]
        assert pragmas == ["wal", 1, 30000, 1]
    with Store(tmp_path / "full.db", synchronous="FULL") as store:
        assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    with pytest.raises(ValueError, match="synchronous"):
        Store(tmp_path / "off.db", synchronous="OFF")


def test_reopening_a_project_applies_its_schema_once(tmp_path):
    for _ in range(3):
        Store(tmp_path / "project.db").close()
    with Store(tmp_path / "project.db") as store:
        applied = [
            name
            for (name,) in store.conn.execute("SELECT name FROM _sqlite_migrations ORDER BY rowid")
        ]
        assert applied[:4] == [
            "create_schema",
            "create_eval_records",
            "create_team_tables",
            "create_key_presses",
        ]
        assert len(set(applied)) == len(applied) and not migrations.pending(store.db)
