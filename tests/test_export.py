"""Export: the golden-set JSONL of README, Formats, TREC qrels, and the round trip via import."""

import json

import pytest
from click.testing import CliRunner

from goldset.labeler import golden
from goldset.labeler.cli import cli
from goldset.labeler.importing import GOLDEN_KEYS
from goldset.labeler.store import DEMO_TASKS, Store

MISSED_ANSWER = "cirrus/auth/v1.py#LegacyAuthClient"


def judge_down(store, query_id, grades, annotator="ana", mode="first_hit"):
    for grade in grades:
        doc_id = store.next_candidate(query_id, annotator, mode=mode)["doc_id"]
        store.judge(query_id, doc_id, grade, annotator, seconds=1.25, mode=mode)


def label_worked_example(store):
    """The four SDK queries of the MRR worked example: first relevant at 1, 3, none, 2."""
    judge_down(store, "q01", [1])
    judge_down(store, "q02", [0, 0, 1])
    judge_down(store, "q03", [0] * 10)
    store.mark("q03", "miss", "ana", seconds=4.0)
    judge_down(store, "q04", [0, 1])


@pytest.fixture
def labelled(tmp_path):
    """The demo project labelled in every way the store allows."""
    with Store(tmp_path / "labelled.db") as store:
        store.import_tasks(DEMO_TASKS)
        label_worked_example(store)
        store.attach("q03", MISSED_ANSWER, 1, "ana", seconds=9.0)
        judge_down(store, "q05", [0])
        store.mark("q05", "skip", "ana")
        judge_down(store, "q06", [0, 0])
        judge_down(store, "q07", [2, 0, 1, 0, 0, 3, 0, 0, 0, 0], mode="full")
        store.mark("q45", "unanswerable", "ana", seconds=3.0)
        judge_down(store, "q08", [0, 1], annotator="bob")
        judge_down(store, "q08", [0, 1], annotator="ana")
        store.set_note("q09", "bob", "unclear <b>query</b>")
        judge_down(store, "q10", [1])
        store.undo("ana")
        yield store


def by_id(records):
    return {record["query_id"]: record for record in records}


def test_golden_record_has_the_design_fields_and_unjudged_docs_are_absent(labelled):
    record = by_id(labelled.golden_records())["q02"]
    assert tuple(record) == GOLDEN_KEYS  # the order of the README's format, then the metadata
    assert record["judgments"] == {
        "cirrus/util/sleep.py#sleep_with_jitter": 0,
        "cirrus/errors.py#RateLimited": 0,
        "cirrus/http/retry.py#backoff": 1,
    }
    assert (record["status"], record["answerable"], record["first_relevant_rank"]) == (
        "done",
        True,
        3,
    )
    assert (record["judged_depth"], record["mode"], record["annotators"]) == (
        3,
        "first_hit",
        ["ana"],
    )
    assert record["seconds"] == 3.75 and record["labelled_at"].endswith("Z")
    assert record["metadata"] == {"type": "api"}


def test_every_query_is_exported_skipped_unanswerable_and_pending_included(labelled):
    records = by_id(labelled.golden_records())
    assert len(records) == 50
    assert records["q05"]["status"] == "skipped" and records["q05"]["judged_depth"] == 1
    assert records["q45"]["status"] == "done" and records["q45"]["answerable"] is False
    assert records["q06"]["status"] == "pending" and len(records["q06"]["judgments"]) == 2
    undone = records["q10"]  # its only judgement was undone: nothing of it is left
    assert (undone["judgments"], undone["annotators"], undone["labelled_at"]) == ({}, [], None)
    assert records["q11"]["judgments"] == {} and records["q11"]["annotators"] == []


def test_a_miss_keeps_its_found_answer_after_the_judged_candidates(labelled):
    record = by_id(labelled.golden_records())["q03"]
    assert (
        list(record["judgments"])[-1] == MISSED_ANSWER and record["judgments"][MISSED_ANSWER] == 1
    )
    assert record["first_relevant_rank"] is None and record["judged_depth"] == 10
    assert record["answerable"] is True and record["status"] == "done"


def test_several_annotators_are_merged(labelled):
    records = by_id(labelled.golden_records())
    assert (
        records["q08"]["annotators"] == ["ana", "bob"]
        and records["q08"]["first_relevant_rank"] == 2
    )
    assert (
        records["q09"]["notes"] == "unclear <b>query</b>" and records["q09"]["status"] == "pending"
    )


def test_round_trip_export_import_export_is_identical(labelled, tmp_path):
    first = tmp_path / "golden.jsonl"
    labelled.write_jsonl(first)
    with Store(tmp_path / "again.db") as again:
        assert again.import_tasks(first)["queries_added"] == 50
        second = tmp_path / "golden-again.jsonl"
        again.write_jsonl(second)
        assert second.read_bytes() == first.read_bytes()
        assert again.import_tasks(first)["queries_unchanged"] == 50
        third = tmp_path / "golden-third.jsonl"
        again.write_jsonl(third)
        assert third.read_bytes() == first.read_bytes()


def test_qrels_list_every_judged_doc_of_the_scored_queries(labelled, tmp_path):
    out = tmp_path / "golden.qrels"
    lines = labelled.write_qrels(out)
    rows = [line.split() for line in out.read_text().splitlines()]
    assert len(rows) == lines
    queries = {row[0] for row in rows}
    assert {"q01", "q02", "q03", "q04", "q07", "q08"} == queries
    assert ["q03", "0", MISSED_ANSWER, "1"] in rows
    assert sum(row[0] == "q03" for row in rows) == 11


def test_stored_candidate_lists_give_the_worked_example_figures(tmp_path):
    db = tmp_path / "demo.db"
    with Store(db) as store:
        store.import_tasks(DEMO_TASKS)
        label_worked_example(store)
        for query_id in [f"q{n:02d}" for n in range(5, 51)]:
            store.mark(query_id, "skip", "ana")
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "--db",
            str(db),
            "--bootstrap",
            "0",
            "--json",
            "-m",
            "mrr@10",
            "-m",
            "hit@1",
            "-m",
            "miss@10",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output)["metrics"]
    assert metrics["mrr@10"]["mean"] == pytest.approx((1 + 1 / 3 + 0 + 1 / 2) / 4)
    assert metrics["hit@1"]["mean"] == 0.25 and metrics["miss@10"]["mean"] == 0.25


def test_export_and_status_commands(labelled, tmp_path):
    runner = CliRunner()
    db = str(labelled.path)
    out = tmp_path / "golden.jsonl"
    result = runner.invoke(cli, ["export", "--db", db, "--format", "jsonl", "--out", str(out)])
    assert result.exit_code == 0 and "wrote 50 queries" in result.output
    assert len(out.read_text().splitlines()) == 50
    result = runner.invoke(cli, ["export", "--db", db, "--format", "qrels", "--out", str(out)])
    assert result.exit_code == 0 and "judgements" in result.output
    result = runner.invoke(cli, ["status", "--db", db])
    assert result.exit_code == 0, result.output
    assert "annotators: ana, bob" in result.output and "head" in result.output
    status = json.loads(runner.invoke(cli, ["status", "--db", db, "--json"]).output)
    assert status["slices"]["tail"]["unanswerable"] == 1


def test_an_export_that_fails_halfway_leaves_the_previous_file(tmp_path):
    qrels = tmp_path / "golden.qrels"
    qrels.write_text("q1 0 d1 1\n")
    records = [
        {"query_id": "q2", "status": "done", "answerable": True, "judgments": {"d2": 1}},
        {"query_id": "q3", "status": "done", "answerable": True, "judgments": {"a doc": 1}},
    ]
    with pytest.raises(ValueError, match="cannot be written to TREC qrels"):
        golden.write_qrels(records, qrels)
    assert qrels.read_text() == "q1 0 d1 1\n"
    assert [path.name for path in tmp_path.iterdir()] == ["golden.qrels"]


def test_the_qrels_export_says_which_queries_it_leaves_out(labelled, tmp_path):
    # Qrels hold the done, answerable queries: the rest is only in the JSONL, and the command
    # says so (a team reading the qrels alone would not know the unanswerable q45 exists).
    out = tmp_path / "golden.qrels"
    result = CliRunner().invoke(
        cli, ["export", "--db", str(labelled.path), "--format", "qrels", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    in_qrels = {line.split()[0] for line in out.read_text().splitlines()}
    assert in_qrels == {"q01", "q02", "q03", "q04", "q07", "q08"}
    # 50 queries: 6 in the qrels, q45 unanswerable, q05 skipped, q06 started; 41 pending (q09
    # holds only a note, q10's one judgement was undone)
    assert result.output.splitlines()[-1] == (
        "left out (in --format jsonl only): 1 unanswerable, 1 skipped, 1 in progress, 41 pending"
    )
