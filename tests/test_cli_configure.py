"""`goldset configure` sets the project's protocol; `goldset import --corpus` adds a corpus."""

import json

from click.testing import CliRunner

from goldset.labeler.cli import cli
from goldset.labeler.judging import LabelSession
from goldset.labeler.store import DEMO_TASKS, Store


def goldset(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_configure_sets_the_protocol_and_logs_the_change(tmp_path):
    db = str(tmp_path / "project.db")
    Store(db).close()
    result = goldset(
        "configure", "--db", db, "--mode", "full", "--depth", "10", "--max-grade", "4",
        "--threshold", "2", "--by", "rita", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["protocol"] == {"mode": "full", "max_grade": 4, "rel_threshold": 2, "depth": 10}
    assert [entry["changed_by"] for entry in report["log"]] == ["rita"]
    with Store(db) as store:
        assert store.settings() == report["protocol"]


def test_configure_without_options_prints_the_protocol_and_its_log(tmp_path):
    db = str(tmp_path / "project.db")
    goldset("configure", "--db", db, "--binary")
    result = goldset("configure", "--db", db)
    assert result.exit_code == 0
    assert "mode=first_hit max_grade=1 rel_threshold=1 depth=0" in result.output
    assert "by cli: max_grade=1" in result.output


def test_configure_refuses_a_protocol_that_contradicts_itself(tmp_path):
    db = str(tmp_path / "project.db")
    result = goldset("configure", "--db", db, "--max-grade", "2", "--threshold", "3")
    assert result.exit_code == 2
    assert "rel_threshold 3 is above max_grade 2" in result.output
    assert "Traceback" not in result.output


def test_a_pooled_cranfield_project_configured_for_grade_4_takes_a_4(tmp_path, cranfield_dir):
    db = str(tmp_path / "cranfield.db")
    runs = cranfield_dir / "runs"
    assert goldset(
        "pool", "--corpus", str(cranfield_dir / "corpus.jsonl"),
        "--queries", str(cranfield_dir / "queries.jsonl"), "--run", str(runs / "bm25.trec"),
        "--depth", "5", "--db", db,
    ).exit_code == 0  # fmt: skip
    assert goldset("configure", "--db", db, "--max-grade", "4").exit_code == 0
    with Store(db) as store:
        store.add_annotator("ana")
        session = LabelSession(store, "ana")
        assert session.grade_keys == "01234"
        query_id = session.query_id
        session.press("4")
        assert 4 in store.labels(query_id, "ana").values()


def test_import_corpus_adds_searchable_documents_to_an_imported_project(tmp_path):
    db = str(tmp_path / "project.db")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "kb-1", "title": "Kotlin coroutines", "text": "adapter"}\n')
    assert goldset("import", str(DEMO_TASKS), "--db", db).exit_code == 0
    result = goldset("import", "--corpus", str(corpus), "--db", db)
    assert result.exit_code == 0 and "1 corpus documents added" in result.output
    with Store(db) as store:
        assert store.search("kotlin coroutine")[0]["doc_id"] == "kb-1"


def test_import_corpus_with_a_bad_line_names_it_and_adds_nothing(tmp_path):
    db = str(tmp_path / "project.db")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "kb-1", "text": "fine"}\n{"title": "no id"}\n')
    result = goldset("import", "--corpus", str(corpus), "--db", db)
    assert result.exit_code == 2 and "corpus.jsonl:2: field '_id'" in result.output
    with Store(db) as store:
        assert store.search("fine") == []
