"""goldset reproduces trec_eval's own expected outputs, per query and in the mean, to 4 decimals.

The inputs and ``out.test*`` files come from trec_eval's test folder (``reference/trec_eval``
in the shared data folder beside the repository: see ``conftest.py``); each case below lists
the trec_eval command line that produced the file and the goldset options that mean the same.
Values are compared as trec_eval prints them (``%.4f``), so a failure lists query, metric,
trec_eval's text and goldset's value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
from helpers.trec_formats import (
    goldset_metric,
    measure_family,
    mismatches,
    printed_like_trec_eval,
    read_trec_eval_output,
)

from goldset.eval.metrics import evaluate
from goldset.eval.readers import read_golden, read_run

ALL_FAMILIES = ("recip_rank", "success", "P", "recall", "ndcg_cut")


@dataclass(frozen=True)
class Case:
    """One trec_eval expected-output file and how to reproduce it with goldset."""

    expected: str
    qrels: str
    run: str
    families: tuple[str, ...] = ALL_FAMILIES
    options: dict = field(default_factory=dict)


CASES = {
    # trec_eval -m all_trec -q qrels.test results.test
    "aq": Case("out.test.aq", "qrels.test", "results.test"),
    # -c: topic 302 is missing from results.trunc, scores 0 and counts in the mean.
    "aqc": Case("out.test.aqc", "qrels.test", "results.trunc"),
    # -c -M100: only each topic's top 100 docs are kept.
    "aqcM": Case("out.test.aqcM", "qrels.test", "results.trunc", options={"depth": 100}),
    # -l2 on graded qrels (with -1 = pooled but unjudged); nDCG ignores the threshold.
    "aql": Case("out.test.aql", "qrels.rel_level", "results.test", options={"rel_threshold": 2}),
    # Default measures, summary line only.
    "summary": Case("out.test", "qrels.test", "results.test", families=("recip_rank", "P")),
    # trec_eval 10 comment lines; a '#' inside a docno is part of it.
    "summary-with-comments": Case(
        "out.test", "qrels.test.with-comments", "results.test", families=("recip_rank", "P")
    ),
    # -m P.5,7,3 -m recall.20,2000 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 (23.4 runs as 23).
    "meas_params": Case(
        "out.test.meas_params",
        "qrels.test",
        "results.test",
        families=("success", "P", "recall", "ndcg_cut"),
    ),
}
FILE_FAMILY_PAIRS = [(name, family) for name, case in CASES.items() for family in case.families]


def evaluate_case(trec_eval_dir: Path, case: Case, metrics: list[str]) -> pd.DataFrame:
    """goldset's per-query values for a case, read through goldset's readers."""
    golden = read_golden(trec_eval_dir / case.qrels)
    run = read_run(trec_eval_dir / case.run)
    return evaluate(golden, run, metrics=metrics, **case.options)


def with_mean(per_query: pd.DataFrame) -> pd.DataFrame:
    """Per-query values plus trec_eval's summary row ``all`` (the mean over scored queries)."""
    return pd.concat([per_query, per_query.mean().to_frame("all").T])


@pytest.mark.parametrize(("case_name", "family"), FILE_FAMILY_PAIRS)
def test_shared_measures_match_trec_eval_output(trec_eval_dir, case_name, family):
    case = CASES[case_name]
    printed = read_trec_eval_output(trec_eval_dir / case.expected)
    measures = [measure for measure in printed.columns if measure_family(measure) == family]
    assert measures, f"{case.expected} has no {family} measure"
    expected = printed[measures].rename(columns=goldset_metric)

    got = with_mean(evaluate_case(trec_eval_dir, case, list(expected.columns)))

    assert mismatches(expected, got, printed_like_trec_eval) == []


WITH_NUM_Q = [name for name, case in CASES.items() if case.expected != "out.test.meas_params"]
WITH_PER_QUERY_LINES = [name for name, case in CASES.items() if case.expected != "out.test"]


@pytest.mark.parametrize("case_name", WITH_NUM_Q)
def test_scored_query_count_matches_trec_eval_num_q(trec_eval_dir, case_name):
    case = CASES[case_name]
    printed = read_trec_eval_output(trec_eval_dir / case.expected)

    got = evaluate_case(trec_eval_dir, case, ["mrr"])

    assert len(got) == int(printed.at["all", "num_q"])


@pytest.mark.parametrize("case_name", WITH_PER_QUERY_LINES)
def test_scored_queries_are_the_queries_trec_eval_lists(trec_eval_dir, case_name):
    case = CASES[case_name]
    printed = read_trec_eval_output(trec_eval_dir / case.expected)

    got = evaluate_case(trec_eval_dir, case, ["mrr"])

    assert sorted(got.index) == sorted(printed.index.drop("all"))


def test_missing_topic_scores_zero_like_trec_eval_c(trec_eval_dir):
    got = evaluate_case(trec_eval_dir, CASES["aqc"], ["mrr", "hit@10", "precision@5", "ndcg@10"])

    assert got.loc["302"].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_custom_gain_ndcg_on_binary_qrels_equals_plain_ndcg(trec_eval_dir):
    """``-mndcg.1=3,2=9,4=4.5`` maps grade 1 to gain 3; qrels.test only has grades 0 and 1.

    Multiplying every gain by 3 cancels in DCG / ideal DCG, so this measure is plain nDCG
    over the whole ranking: ndcg@1000 (every run has 500 docs and no topic 1000 relevant).
    """
    golden = read_golden(trec_eval_dir / "qrels.test")
    assert set(golden.judgments["grade"]) == {0, 1}
    printed = read_trec_eval_output(trec_eval_dir / "out.test.meas_params")
    expected = printed[["ndcg_1=3,2=9,4=4.5"]].set_axis(["ndcg@1000"], axis="columns")

    got = with_mean(evaluate(golden, read_run(trec_eval_dir / "results.test"), ["ndcg@1000"]))

    assert mismatches(expected, got, printed_like_trec_eval) == []


def test_qrels_comment_lines_change_no_value(trec_eval_dir):
    metrics = ["mrr", "mrr@10", "hit@1", "precision@10", "recall@100", "ndcg@10", "judged@10"]
    plain = evaluate_case(trec_eval_dir, CASES["summary"], metrics)

    commented = evaluate_case(trec_eval_dir, CASES["summary-with-comments"], metrics)

    pd.testing.assert_frame_equal(commented, plain, check_exact=True)


def test_mrr_worked_example_through_readers(tmp_path):
    """docs/metrics.md's worked example: first relevant at ranks 1, 3, none within 10, 2 →
    MRR@10 0.458."""
    first_relevant_ranks = {"q1": 1, "q2": 3, "q3": 12, "q4": 2}
    golden_lines, run_lines = [], []
    for query_id, first_relevant in first_relevant_ranks.items():
        doc_ids = [f"{query_id}-doc{rank}" for rank in range(1, 13)]
        # First-hit labelling: docs above the first relevant one are judged 0, the rest not.
        judgments = {doc_id: 0 for doc_id in doc_ids[: first_relevant - 1]}
        judgments[doc_ids[first_relevant - 1]] = 1
        golden_lines.append(
            {"query_id": query_id, "query": f"question {query_id}", "status": "done",
             "answerable": True, "judgments": judgments}
        )  # fmt: skip
        run_lines += [
            f"{query_id} Q0 {doc_id} {rank} {100 - rank} bm25"
            for rank, doc_id in enumerate(doc_ids, start=1)
        ]
    (tmp_path / "golden.jsonl").write_text("\n".join(map(json.dumps, golden_lines)) + "\n")
    (tmp_path / "run.trec").write_text("\n".join(run_lines) + "\n")
    golden = read_golden(tmp_path / "golden.jsonl")
    run = read_run(tmp_path / "run.trec")

    means = evaluate(golden, run, ["mrr@10", "hit@1", "miss@10", "mrr"]).mean()

    assert round(means["mrr@10"], 3) == 0.458
    assert means["mrr@10"] == pytest.approx((1 + 1 / 3 + 0 + 1 / 2) / 4)
    assert means["hit@1"] == 0.25
    assert means["miss@10"] == 0.25
    # Without a cutoff the relevant doc at rank 12 counts: mrr is not mrr@10.
    assert means["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 12 + 1 / 2) / 4)
