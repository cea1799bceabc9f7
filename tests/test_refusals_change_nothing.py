"""Issue 29: a refused command changes nothing, says why in one line (exit 2), and leaves no
traceback behind, not even one printed while the interpreter cleans up.

- A qrels export of a project holding an id that TREC cannot hold (one with whitespace: only
  a project made before ids were checked for it can hold one) names those ids, points to
  JSONL, exits 2 and keeps the previous file; the JSONL export of the same project works.
- The golden records' generator may be closed, or collected, after its store: in any state
  (not started, halfway, finished) that is no error.
- A pool refused once it has begun (a run under a pooled run's name, two runs of one name)
  leaves the project byte for byte and row for row as it was; a refused import, pool or
  configure at a new path leaves no project file behind.

The CLI runs in a subprocess where what the interpreter prints at exit matters.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.projects import project_state

from goldset.eval import validation
from goldset.labeler import importing
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

SPACED = {
    "query_id": "legacy one",
    "query": "a query",
    "status": "done",
    "judgments": {"doc\u00a0one": 1, "d2": 0, "doc two": 0},
}
PLAIN = {"query_id": "plain", "query": "a query", "status": "done", "judgments": {"d3": 1}}
PENDING = {"query_id": "pending one", "query": "q", "status": "pending", "judgments": {"d 4": 0}}


def goldset(*args: str) -> subprocess.CompletedProcess:
    """The goldset command in a fresh interpreter, its output and error captured."""
    return subprocess.run(
        [sys.executable, "-m", "goldset.labeler.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def legacy_project(tmp_path, monkeypatch) -> Path:
    """A project made before ids were checked for whitespace: its ids may hold some."""
    with monkeypatch.context() as old_rules:  # the rule of then: no control character only
        old_rules.setattr(validation, "id_character", validation.control_character)
        old_rules.setattr(importing, "id_character", validation.control_character)
        with Store(tmp_path / "legacy.db") as store:
            store.import_records([SPACED, PLAIN, PENDING], "legacy.jsonl")
    return tmp_path / "legacy.db"


def test_a_qrels_export_of_ids_trec_cannot_hold_names_them_and_keeps_the_old_file(
    legacy_project, tmp_path
):
    out = tmp_path / "golden.qrels"
    out.write_text("q1 0 d1 1\n")
    before = project_state(legacy_project)
    result = goldset("export", "--db", str(legacy_project), "--format", "qrels", "--out", str(out))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    (message,) = result.stderr.strip().splitlines()
    assert message.startswith(f"Error: {legacy_project}: cannot be exported as TREC qrels")
    assert "ids holding whitespace (3): " in message
    assert "doc_id 'doc\\xa0one' of query 'legacy one'" in message
    assert "doc_id 'doc two' of query 'legacy one'" in message
    assert "query_id 'legacy one'" in message and "--format jsonl" in message
    assert "pending one" not in message  # not a scored query: never written to qrels
    assert out.read_text() == "q1 0 d1 1\n"
    assert [path.name for path in tmp_path.iterdir() if "qrels" in path.name] == [out.name]
    assert project_state(legacy_project) == before


def test_the_jsonl_export_of_the_same_project_keeps_every_id(legacy_project, tmp_path):
    out = tmp_path / "golden.jsonl"
    result = goldset("export", "--db", str(legacy_project), "--format", "jsonl", "--out", str(out))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0]["query_id"] == "legacy one"
    assert set(records[0]["judgments"]) == {"doc\u00a0one", "d2", "doc two"}


def test_many_unwritable_ids_are_counted_past_the_first_few(tmp_path, monkeypatch):
    monkeypatch.setattr(validation, "id_character", validation.control_character)
    monkeypatch.setattr(importing, "id_character", validation.control_character)
    spaced = [{**PLAIN, "query_id": f"q {n}"} for n in range(8)]
    with Store(tmp_path / "p.db") as store:
        store.import_records(spaced)
    monkeypatch.undo()
    result = CliRunner().invoke(
        cli, ["export", "--db", str(tmp_path / "p.db"), "--format", "qrels", "--out", "q.txt"]
    )
    assert result.exit_code == 2
    assert "whitespace (8): " in result.output and "and 3 more;" in result.output


@pytest.mark.parametrize("read", [0, 1, 3], ids=["not started", "halfway", "finished"])
def test_the_golden_records_generator_closed_after_its_store_is_no_error(tmp_path, read):
    with Store(tmp_path / "p.db") as store:
        store.import_records([{**PLAIN, "query_id": f"q{n}"} for n in range(3)])
    store = Store.open_project(tmp_path / "p.db", write=False)
    records = store.iter_golden_records()
    for _ in range(read):
        next(records)
    store.close()
    records.close()  # on the code before: sqlite3.ProgrammingError from the read's COMMIT


def test_a_generator_collected_after_its_store_prints_nothing(tmp_path, monkeypatch):
    with Store(tmp_path / "p.db") as store:
        store.import_records([{**PLAIN, "query_id": f"q{n}"} for n in range(3)])
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    store = Store.open_project(tmp_path / "p.db", write=False)
    records = store.iter_golden_records()
    next(records)
    store.close()
    del records
    gc.collect()
    assert unraisable == []


def test_a_write_that_fails_after_its_store_closed_raises_its_own_error(tmp_path):
    store = Store(tmp_path / "p.db")
    with pytest.raises(KeyError, match="the write's own"), store._writing():
        store.close()
        raise KeyError("the write's own")  # not a ProgrammingError from the ROLLBACK


@pytest.fixture
def pooled(tmp_path) -> tuple[Path, Path, Path, Path]:
    """A project that pooled run ``bm25`` over a corpus and queries; their paths."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{n}", "text": "t"}) + "\n" for n in range(3)))
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"_id": "q1", "text": "first"}) + "\n")
    run = tmp_path / "bm25.trec"
    run.write_text("q1 Q0 d0 1 2.0 r\nq1 Q0 d1 2 1.0 r\n")
    db = tmp_path / "p.db"
    result = CliRunner().invoke(
        cli,
        ["pool", "--corpus", str(corpus), "--queries", str(queries), "--run", str(run)]
        + ["--db", str(db)],
    )
    assert result.exit_code == 0, result.output
    return db, corpus, queries, run


def test_a_different_file_under_a_pooled_runs_name_changes_nothing(pooled, tmp_path):
    db, corpus, queries, _ = pooled
    other = tmp_path / "other"
    other.mkdir()
    (other / "bm25.trec").write_text("q1 Q0 d2 1 2.0 r\n")
    before = project_state(db)
    result = goldset("pool", "--run", str(other / "bm25.trec"), "--db", str(db))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{other / 'bm25.trec'}: a different run named 'bm25'" in result.stderr
    assert project_state(db) == before


def test_two_runs_of_one_name_are_refused_naming_the_second_file(pooled, tmp_path):
    db, _, _, run = pooled
    other = tmp_path / "other"
    other.mkdir()
    (other / "bm25.trec").write_text("q1 Q0 d2 1 2.0 r\n")
    before = project_state(db)
    result = CliRunner().invoke(
        cli, ["pool", "--run", str(run), "--run", str(other / "bm25.trec"), "--db", str(db)]
    )
    assert result.exit_code == 2
    assert f"{other / 'bm25.trec'}: run name 'bm25' is also that of {run}" in result.output
    assert project_state(db) == before


BAD_TASKS = json.dumps({"query_id": "q 1", "query": "q", "candidates": [{"doc_id": "d"}]})


@pytest.mark.parametrize(
    "command",
    [
        ["import", "{bad}"],
        ["pool", "--corpus", "{bad}", "--run", "{bad}"],
        ["configure", "--max-grade", "1", "--threshold", "2"],
    ],
    ids=["import", "pool", "configure"],
)
@pytest.mark.parametrize("start", ["no file", "an empty file"])
def test_a_refused_command_leaves_no_project_behind(tmp_path, command, start):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(BAD_TASKS + "\n")
    db = tmp_path / "new.db"
    if start == "an empty file":
        db.write_bytes(b"")
    args = [part.format(bad=bad) for part in command]
    result = CliRunner().invoke(cli, [*args, "--db", str(db)])
    assert result.exit_code != 0 and "Error:" in result.output
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        ["bad.jsonl"] + (["new.db"] if start == "an empty file" else [])
    )
    assert start == "no file" or db.read_bytes() == b""


def test_a_corpus_import_refused_once_begun_changes_nothing(pooled, tmp_path):
    db, _, _, _ = pooled
    corpus = tmp_path / "again.jsonl"
    corpus.write_text(json.dumps({"_id": "d0", "text": "another text"}) + "\n")
    before = project_state(db)
    result = CliRunner().invoke(cli, ["import", "--corpus", str(corpus), "--db", str(db)])
    assert result.exit_code == 2
    assert f"{corpus}:1: field 'text': doc 'd0' is already in the database" in result.output
    assert project_state(db) == before


def test_a_refused_protocol_change_changes_nothing(pooled):
    db = pooled[0]
    before = project_state(db)
    result = CliRunner().invoke(cli, ["configure", "--threshold", "9", "--db", str(db)])
    assert result.exit_code != 0 and "rel_threshold 9 is above max_grade" in result.output
    assert project_state(db) == before


def test_tasks_with_a_refused_corpus_are_not_imported_either(pooled, tmp_path):
    db = pooled[0]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"query_id": "t1", "query": "q", "candidates": [{"doc_id": "n1"}]}))
    corpus = tmp_path / "again.jsonl"
    corpus.write_text(json.dumps({"_id": "d0", "text": "another text"}) + "\n")
    before = project_state(db)
    result = CliRunner().invoke(cli, ["import", str(tasks), "--corpus", str(corpus), "--db", db])
    assert result.exit_code == 2
    assert f"{corpus}:1: field 'text': doc 'd0' is already in the database" in result.output
    assert project_state(db) == before  # on the code before, t1 was imported


def test_tasks_and_their_corpus_are_imported_together(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    candidates = [{"doc_id": "n1", "title": "one"}, {"doc_id": "n2"}]
    tasks.write_text(json.dumps({"query_id": "t1", "query": "q", "candidates": candidates}))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"_id": "n2", "title": "two", "text": "the second"})
        + "\n"
        + json.dumps({"_id": "k1", "text": "searchable only"})
        + "\n"
    )
    db = tmp_path / "p.db"
    result = CliRunner().invoke(cli, ["import", str(tasks), "--corpus", str(corpus), "--db", db])
    assert result.exit_code == 0, result.output
    assert "1 queries added (2 candidates, 2 new documents)" in result.output
    assert "1 corpus documents added (searchable)" in result.output
    with Store.open_project(db, write=False) as store:
        assert store.document("n2")["text"] == "the second"  # the corpus fills the task's doc
        assert store.document("k1")["text"] == "searchable only"


def test_a_corpus_that_contradicts_the_tasks_names_its_line(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"query_id": "t1", "query": "q", "candidates": [{"doc_id": "n1", "title": "a"}]})
    )
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"_id": "n1", "title": "b"}) + "\n")
    db = tmp_path / "p.db"
    result = CliRunner().invoke(cli, ["import", str(tasks), "--corpus", str(corpus), "--db", db])
    assert result.exit_code == 2
    assert (
        f"{corpus}:1: field 'title': doc 'n1' has a different title in the tasks" in result.output
    )
    assert not db.exists()
