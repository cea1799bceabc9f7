"""Run history: ``goldset eval --record --tag`` keeps results with their configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from goldset.labeler.cli import cli
from goldset.labeler.pooling import file_sha256
from goldset.labeler.store import Store

TASKS = [
    {
        "query_id": "q1",
        "query": "retry with jitter",
        "slice": "tail",
        "candidates": [{"doc_id": "a", "text": "sleep"}, {"doc_id": "b", "text": "backoff"}],
    },
    {
        "query_id": "q2",
        "query": "parse duration",
        "slice": "head",
        "candidates": [{"doc_id": "c", "text": "parse"}, {"doc_id": "d", "text": "format"}],
    },
]


@pytest.fixture
def judged_db(make_project, tmp_path: Path) -> Path:
    """A project where q1's answer is at rank 2 and q2's at rank 1."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(task) + "\n" for task in TASKS))
    db = make_project(tasks)
    with Store(db) as store:
        store.judge("q1", "a", 0, "ana")
        store.judge("q1", "b", 1, "ana")
        store.judge("q2", "c", 1, "ana")
    return db


def goldset(*args: str | Path):
    return CliRunner().invoke(cli, [str(arg) for arg in args])


def test_record_keeps_figures_tags_run_hash_and_golden_version(judged_db, tmp_path):
    run = tmp_path / "dense.trec"
    run.write_text("q1 Q0 b 1 2.0 dense\nq1 Q0 a 2 1.0 dense\nq2 Q0 d 1 3.0 dense\n")
    result = goldset(
        "eval", "--db", judged_db, "--run", run, "--record", "--tag", "model=e5",
        "--tag", "chunking=512", "--bootstrap", "0", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    [record] = Store(judged_db).eval_history()
    assert record["id"] == report["record_id"]
    assert record["tags"] == {"model": "e5", "chunking": "512"}
    assert record["run"] == "dense"
    assert record["run_sha256"] == file_sha256(run)
    assert record["golden_version"] == report["golden_version"]
    assert record["metrics"]["mrr@10"] == pytest.approx(0.5)  # q1 at rank 1, q2 missed
    assert record["slices"] == {
        "head": {
            spec: entry["mean"] for spec, entry in report["slices"]["head"]["metrics"].items()
        },
        "tail": {
            spec: entry["mean"] for spec, entry in report["slices"]["tail"]["metrics"].items()
        },
    }


def test_records_keep_their_order_and_the_stored_candidates_can_be_recorded(judged_db):
    for model in ("first", "second"):
        result = goldset("eval", "--db", judged_db, "--record", "--tag", f"model={model}")
        assert result.exit_code == 0, result.output
    history = Store(judged_db).eval_history()
    assert [record["tags"]["model"] for record in history] == ["first", "second"]
    assert history[0]["run"] == "candidates"
    assert history[0]["metrics"]["mrr@10"] == pytest.approx((1 / 2 + 1) / 2)


def test_relabelling_changes_the_golden_version(judged_db):
    goldset("eval", "--db", judged_db, "--record")
    store = Store(judged_db)
    store.undo("ana")  # q2's judgement goes: the labels are no longer the same golden set
    goldset("eval", "--db", judged_db, "--record")
    first, second = store.eval_history()
    assert first["golden_version"] != second["golden_version"]


def test_record_needs_a_project(tmp_path):
    golden = tmp_path / "qrels.txt"
    golden.write_text("q1 0 a 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 1.0 x\n")
    result = goldset("eval", "--golden", golden, "--run", run, "--record")
    assert result.exit_code == 2
    assert "--db" in result.output


def test_a_tag_must_be_key_equals_value(judged_db):
    result = goldset("eval", "--db", judged_db, "--record", "--tag", "e5")
    assert result.exit_code == 2
    assert "KEY=VALUE" in result.output
