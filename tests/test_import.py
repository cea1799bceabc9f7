"""Importing tasks (JSONL and CSV): what is kept, idempotence, and all-or-nothing."""

import json

import pytest

from goldset.eval.readers import InputError
from goldset.labeler.store import DEMO_TASKS

TASK = {
    "query_id": "q17",
    "query": "retry with jitter helper",
    "slice": "tail",
    "owner": "sdk-team",
    "candidates": [
        {"doc_id": "sdk/retry.py#backoff", "title": "backoff()", "text": "Jitter.", "score": 12.3},
        {"doc_id": "sdk/http.py#get", "title": "get()", "text": "GET.", "lang": "python"},
    ],
}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_import_keeps_order_scores_slice_and_extra_keys_as_metadata(store, tmp_path):
    counts = store.import_tasks(write_jsonl(tmp_path / "tasks.jsonl", [TASK]))
    assert counts == {
        "queries_added": 1,
        "queries_unchanged": 0,
        "candidates_added": 2,
        "documents_added": 2,
    }
    query = store.query("q17")
    assert (query["query"], query["slice"], query["metadata"]) == (
        "retry with jitter helper",
        "tail",
        {"owner": "sdk-team"},
    )
    candidates = store.candidates("q17")
    assert [(c["doc_id"], c["position"], c["score"]) for c in candidates] == [
        ("sdk/retry.py#backoff", 1, 12.3),
        ("sdk/http.py#get", 2, None),
    ]
    assert store.document("sdk/http.py#get")["metadata"] == {"lang": "python"}


def test_reimporting_the_same_file_is_a_no_op(store):
    store.import_tasks(DEMO_TASKS)
    store.judge("q01", "cirrus/timeutil.py#parse_duration", 1, "ana")
    before = store.golden_records()
    counts = store.import_tasks(DEMO_TASKS)
    assert counts["queries_added"] == 0 and counts["queries_unchanged"] == 50
    assert store.golden_records() == before
    assert store.status()["queries"] == 50


def test_duplicate_query_id_against_the_database_names_the_line(store, tmp_path):
    store.import_records([TASK])
    changed = dict(TASK, query="retry helper")
    path = write_jsonl(tmp_path / "more.jsonl", [dict(TASK, query_id="q18"), changed])
    with pytest.raises(InputError, match=r"more.jsonl:2: field 'query_id': 'q17' is already"):
        store.import_tasks(path)
    assert store.status()["queries"] == 1


def test_an_error_on_the_last_line_writes_nothing(store, tmp_path):
    good = [dict(TASK, query_id=f"g{i}") for i in range(100)]
    path = write_jsonl(tmp_path / "tasks.jsonl", [*good, dict(TASK, candidates="x")])
    with pytest.raises(InputError, match="tasks.jsonl:101: field 'candidates'"):
        store.import_tasks(path)
    assert not store.has_queries() and store.status()["documents"] == 0


def test_documents_shared_by_queries_are_stored_once(store):
    store.import_records([TASK, dict(TASK, query_id="q18", query="http get")])
    assert store.status()["documents"] == 2
    assert len(store.candidates("q18")) == 2


def test_a_later_line_may_omit_a_shared_documents_text(store):
    short = {"query_id": "q18", "query": "get", "candidates": [{"doc_id": "sdk/http.py#get"}]}
    store.import_records([TASK, short])
    assert store.candidates("q18")[0]["text"] == "GET."


def test_integer_ids_are_read_as_strings(store):
    store.import_records([{"query_id": 7, "query": "q", "candidates": [{"doc_id": 42}]}])
    assert store.candidates("7")[0]["doc_id"] == "42"


def test_csv_rows_are_grouped_into_queries_in_row_order(store, tmp_path):
    path = tmp_path / "tasks.csv"
    path.write_text(
        "query_id,query,slice,doc_id,title,text,score,owner\n"
        'q1,retry with jitter,tail,a,backoff(),"Backoff, with ""jitter"".",2.5,sdk\n'
        "q2,parse duration,,c,parse(),Parse.,,sdk\n"
        "q1,retry with jitter,tail,b,get(),GET.,1.0,sdk\n",
        encoding="utf-8",
    )
    assert store.import_tasks(path)["queries_added"] == 2
    assert [c["doc_id"] for c in store.candidates("q1")] == ["a", "b"]
    assert store.candidates("q1")[0]["text"] == 'Backoff, with "jitter".'
    assert store.query("q1")["metadata"] == {"owner": "sdk"}
    assert store.query("q2")["slice"] == "" and store.candidates("q2")[0]["score"] is None


def test_csv_and_jsonl_of_the_same_tasks_are_the_same_import(store, tmp_path):
    store.import_records([{"query_id": "q1", "query": "x", "candidates": [{"doc_id": "a"}]}])
    path = tmp_path / "same.csv"
    path.write_text("query_id,query,doc_id\nq1,x,a\n", encoding="utf-8")
    assert store.import_tasks(path)["queries_unchanged"] == 1


def test_an_empty_file_is_refused(store, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no tasks"):
        store.import_tasks(path)


def test_import_command_reports_counts_and_errors(tmp_path):
    from click.testing import CliRunner

    from goldset.labeler.cli import cli

    db = str(tmp_path / "project.db")
    runner = CliRunner()
    result = runner.invoke(cli, ["import", str(DEMO_TASKS), "--db", db])
    assert result.exit_code == 0, result.output
    assert "50 queries added" in result.output
    bad = write_jsonl(tmp_path / "bad.jsonl", [dict(TASK, candidates="none")])
    result = runner.invoke(cli, ["import", str(bad), "--db", db])
    assert result.exit_code == 2
    assert "bad.jsonl:1: field 'candidates'" in result.output


def test_a_golden_record_whose_labels_contradict_its_status_is_refused(store, tmp_path):
    # In first-hit mode a relevant doc completes the query: it cannot still be pending.
    record = {"query_id": "q", "query": "x", "status": "pending", "judgments": {"d1": 1}}
    path = write_jsonl(tmp_path / "golden.jsonl", [record])
    with pytest.raises(InputError) as raised:
        store.import_tasks(path)
    assert (raised.value.line, raised.value.field) == (1, "status")
    assert "'pending', but these labels give 'done'" in str(raised.value)
    assert not store.has_queries()  # all or nothing


def test_a_team_export_replays_each_annotators_label_and_the_decision(store, tmp_path):
    record = {
        "query_id": "q",
        "query": "x",
        "judgments": {"d1": 0, "d2": 2},
        "annotators": ["ana", "bob"],
        "labels": {"ana": {"judgments": {"d1": 1}}, "bob": {"judgments": {"d1": 0, "d2": 1}}},
        "adjudication": {"reviewer": "rev", "judgments": {"d1": 0, "d2": 2}},
    }
    store.import_tasks(write_jsonl(tmp_path / "golden.jsonl", [record]))
    assert store.labels("q", "ana") == {"d1": 1}
    assert store.labels("q", "bob") == {"d1": 0, "d2": 1}
    assert store.labels("q", "import") == {}
    assert store.decision("q").judgments == {"d1": 0, "d2": 2}
    assert store.decision("q").reviewer == "rev"
    assert "labels" not in store.query("q")["metadata"]  # rebuilt from the log, not kept
    exported = store.golden_records()[0]
    assert exported["judgments"] == {"d1": 0, "d2": 2}
    assert exported["labels"]["bob"]["judgments"] == {"d1": 0, "d2": 1}
