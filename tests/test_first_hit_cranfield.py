"""Cranfield, bm25, labelled in first-hit mode straight from the qrels (docs/metrics.md, "What
first-hit labels measure"): `goldset eval` gives pytrec_eval's MRR@10, hit@1
and hit@10 on the *full* qrels, refuses to give recall@10 and nDCG@10 (issue 10 saw them come
out at 0.896 and 0.792 where the full qrels give 0.439 and 0.511), and marks precision@10 as
the lower bound that it is."""

from __future__ import annotations

import json

import pytest
import pytrec_eval
from click.testing import CliRunner
from helpers.trec_formats import read_qrels_dict, read_run_dict

from goldset.eval.report import NOT_MEASURED
from goldset.labeler.cli import cli

DEPTH = 10


def first_hit_record(query_id: str, ranked: list[str], judged: dict[str, int]) -> dict:
    """What a first-hit annotator answering from the qrels records: every doc from rank 1 down
    judged, stopping at the first relevant one; a miss when there is none in the top DEPTH."""
    judgments = {}
    for doc_id in ranked[:DEPTH]:
        judgments[doc_id] = judged.get(doc_id, 0)
        if judgments[doc_id] >= 1:
            break
    return {
        "query_id": query_id,
        "status": "done",
        "answerable": True,
        "mode": "first_hit",
        "judgments": judgments,
    }


@pytest.fixture(scope="module")
def first_hit_report(cranfield_dir, tmp_path_factory) -> tuple[dict, dict, dict]:
    """``goldset eval --json`` on first-hit labels of bm25, its per-query figures, and
    pytrec_eval's per-query figures on the full qrels."""
    qrels = read_qrels_dict(cranfield_dir / "qrels.tsv")
    run_path = cranfield_dir / "runs" / "bm25.trec"
    run = read_run_dict(run_path)
    folder = tmp_path_factory.mktemp("first_hit")
    golden, per_query = folder / "golden.jsonl", folder / "per_query.jsonl"
    records = []
    for query_id, judged in qrels.items():
        # trec_eval's order: score descending, ties by doc id descending.
        ranked = sorted(run.get(query_id, {}).items(), key=lambda item: item[::-1], reverse=True)
        records.append(first_hit_record(query_id, [doc_id for doc_id, _ in ranked], judged))
    golden.write_text("".join(json.dumps(record) + "\n" for record in records))
    result = CliRunner().invoke(
        cli,
        ["eval", "--golden", str(golden), "--run", str(run_path), "--json", "--bootstrap", "100"]
        + ["--per-query", str(per_query)],
    )
    assert result.exit_code == 0, result.output
    rows = {row["query_id"]: row for row in map(json.loads, per_query.read_text().splitlines())}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "success.1,10"})
    return json.loads(result.stdout), rows, evaluator.evaluate(run)


def test_first_hit_labels_give_pytrec_evals_mrr_and_hits_on_the_full_qrels(first_hit_report):
    _, rows, expected = first_hit_report
    assert len(rows) == 225
    for query_id, row in rows.items():
        reference = expected.get(query_id, {"recip_rank": 0.0, "success_1": 0, "success_10": 0})
        rr = reference["recip_rank"] if reference["recip_rank"] >= 1 / DEPTH else 0.0
        assert row["mrr@10"] == pytest.approx(rr, abs=1e-9), query_id
        assert row["hit@1"] == reference["success_1"], query_id
        assert row["hit@10"] == reference["success_10"], query_id


def test_first_hit_labels_do_not_measure_recall_and_ndcg(first_hit_report):
    report, rows, _ = first_hit_report
    not_measured = {"mean": None, "ci95": None, "queries": 0, "reason": NOT_MEASURED}
    assert report["metrics"]["recall@10"] == not_measured
    assert report["metrics"]["ndcg@10"] == not_measured
    assert all(row["recall@10"] is None and row["ndcg@10"] is None for row in rows.values())


def test_first_hit_precision_is_flagged_as_a_lower_bound(first_hit_report):
    report, _, _ = first_hit_report
    precision = report["metrics"]["precision@10"]
    assert precision["bound"] == "lower"
    assert precision["mean"] < 0.3027  # the full qrels' P@10 for bm25 (dataset README)
    assert "bound" not in report["metrics"]["mrr@10"]
    assert any("precision@k is a lower bound" in note for note in report["notes"])


def test_first_hit_text_report_says_not_measured_instead_of_a_number(cranfield_dir, tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps(first_hit_record("1", ["184"], {"184": 2})) + "\n")
    run = cranfield_dir / "runs" / "bm25.trec"
    result = CliRunner().invoke(cli, ["eval", "--golden", str(golden), "--run", str(run)])
    assert result.exit_code == 0, result.output
    table = dict(line.split(maxsplit=1) for line in result.output.splitlines()[4:12])
    assert table["recall@10"].strip() == NOT_MEASURED
    assert table["ndcg@10"].strip() == NOT_MEASURED
    assert table["precision@10"].endswith("(lower bound)")
