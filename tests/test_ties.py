"""Scores compare as trec_eval 10.0 compares them (doubles) by default, and as trec_eval 9 and
pytrec_eval do (C floats) with ``--ties trec_eval9``: three probes where the two differ.

In each probe the relevant doc "a" scores a little higher than the non-relevant "z". As
doubles "a" ranks first (RR 1); as floats the two scores are equal, the tie goes to the doc id
that sorts last ("z"), and "a" ranks second (RR 0.5).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval
from click.testing import CliRunner

from goldset.eval.metrics import evaluate
from goldset.eval.readers import read_golden, read_run
from goldset.labeler.cli import cli

PROBES = {
    "inf beside 1e308": ("inf", "1e308"),  # 1e308 overflows a float to inf
    "denormal beside 0": ("5e-324", "0"),  # the smallest double is 0 as a float
    "17 digits, the last differs": ("1.0000000000000002", "1.0000000000000000"),
}


def write_probe(folder: Path, relevant_score: str, other_score: str) -> tuple[Path, Path]:
    """A golden set of one query (doc "a" relevant, "z" not) and a run scoring them so."""
    golden = folder / "golden.jsonl"
    golden.write_text(json.dumps({"query_id": "q", "judgments": {"a": 1, "z": 0}}) + "\n")
    run = folder / "run.trec"
    run.write_text(f"q Q0 z 1 {other_score} probe\nq Q0 a 2 {relevant_score} probe\n")
    return golden, run


def pytrec_eval_rr(relevant_score: str, other_score: str) -> float:
    evaluator = pytrec_eval.RelevanceEvaluator({"q": {"a": 1, "z": 0}}, {"recip_rank"})
    run = {"q": {"a": float(relevant_score), "z": float(other_score)}}
    return evaluator.evaluate(run)["q"]["recip_rank"]


@pytest.mark.parametrize(("relevant", "other"), PROBES.values(), ids=PROBES)
def test_scores_compare_as_doubles_by_default(tmp_path, relevant, other):
    golden, run = write_probe(tmp_path, relevant, other)
    values = evaluate(read_golden(golden), read_run(run), ["mrr"])
    assert values.loc["q", "mrr"] == 1.0


@pytest.mark.parametrize(("relevant", "other"), PROBES.values(), ids=PROBES)
def test_single_precision_ranks_as_pytrec_eval(tmp_path, relevant, other):
    golden, run = write_probe(tmp_path, relevant, other)
    values = evaluate(read_golden(golden), read_run(run), ["mrr"], single_precision=True)
    assert pytrec_eval_rr(relevant, other) == 0.5
    assert values.loc["q", "mrr"] == 0.5


@pytest.mark.parametrize(("ties", "expected"), [(None, 1.0), ("trec_eval9", 0.5)])
def test_eval_ties_option_chooses_the_precision(tmp_path, ties, expected):
    golden, run = write_probe(tmp_path, *PROBES["denormal beside 0"])
    args = ["eval", "--golden", str(golden), "--run", str(run), "--json", "--bootstrap", "0"]
    result = CliRunner().invoke(cli, [*args, *(["--ties", ties] if ties else [])])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["metrics"]["mrr@10"]["mean"] == expected


def test_abstention_threshold_compares_in_the_chosen_precision(tmp_path):
    # The best score 1.0000000000000002 is above 1.0 as a double, equal to it as a float.
    golden, run = write_probe(tmp_path, *PROBES["17 digits, the last differs"])
    golden_set, run_set = read_golden(golden), read_run(run)
    below = {"abstain_below": 1.0000000000000002, "metrics": ["hit@10"]}
    assert evaluate(golden_set, run_set, **below).loc["q", "hit@10"] == 1.0
    assert evaluate(golden_set, run_set, **below, single_precision=True).loc["q", "hit@10"] == 1.0
    above = {**below, "abstain_below": 1.0000000000000004}
    assert evaluate(golden_set, run_set, **above).loc["q", "hit@10"] == 0.0
    assert evaluate(golden_set, run_set, **above, single_precision=True).loc["q", "hit@10"] == 1.0
