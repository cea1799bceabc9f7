"""goldset agrees with pytrec_eval (trec_eval's C code) per query, to 1e-9.

goldset runs with ``single_precision`` (``--ties trec_eval9``), as pytrec_eval compares scores
in single precision; tests/test_ties.py holds the double-precision default to trec_eval 10.0.
pytrec_eval receives the data as dicts built by plain parsers (or by the random generator),
goldset reads the same data from files through its own readers, so the readers are tested
too. pytrec_eval only reports queries that are both judged and in the run; goldset also
scores the judged queries the run left out (as trec_eval ``-c``), so those are checked apart.
"""

from __future__ import annotations

import random

import pandas as pd
import pytest
import pytrec_eval
from helpers.random_collection import TrecCollection, random_collection
from helpers.trec_formats import (
    goldset_metric,
    mismatches,
    printed_like_trec_eval,
    read_qrels_dict,
    read_run_dict,
    read_trec_eval_output,
)

from goldset.eval import threads
from goldset.eval.metrics import evaluate
from goldset.eval.readers import read_golden, read_run

TOLERANCE = 1e-9
CRANFIELD_MEASURES = (
    "recip_rank", "success_1", "success_5", "success_10", "P_5", "P_10",
    "recall_5", "recall_10", "ndcg_cut_5", "ndcg_cut_10",
)  # fmt: skip
# Cutoffs past every random list (at most 15 docs) check k larger than the list.
RANDOM_MEASURES = CRANFIELD_MEASURES + ("P_20", "recall_20", "ndcg_cut_20", "success_20")
# trec_eval has no RR@k or miss@k; both follow exactly from recip_rank and success_k.
DERIVED_METRICS = ("mrr@10", "miss@10")


def pytrec_eval_values(qrels, run, measures, relevance_level=1) -> pd.DataFrame:
    """pytrec_eval's per-query values, columns renamed to goldset's metric names."""
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, set(measures), relevance_level=relevance_level
    )
    values = pd.DataFrame.from_dict(evaluator.evaluate(run), orient="index")
    values = values[list(measures)].rename(columns=goldset_metric)
    values["mrr@10"] = values["mrr"].where(values["mrr"] >= 1 / 10, 0.0)
    values["miss@10"] = 1.0 - values["hit@10"]
    return values


def within_tolerance(expected: float, value: float) -> bool:
    """Equal up to float rounding (pytrec_eval and numpy sum in different orders)."""
    return abs(expected - value) <= TOLERANCE


def evaluate_files(golden_path, run_path, metrics, rel_threshold=1) -> pd.DataFrame:
    """goldset's per-query values for a golden set and a run read from files."""
    golden, run = read_golden(golden_path), read_run(run_path)
    # pytrec_eval compares scores as C floats (trec_eval 9): goldset's compatibility option.
    return evaluate(golden, run, metrics, rel_threshold=rel_threshold, single_precision=True)


@pytest.fixture(params=["one thread", "halves on two threads"])
def ranking_threads(request, monkeypatch):
    """Rank on one thread, or (as a large run is) each half of the queries on its own."""
    if request.param != "one thread":
        monkeypatch.setattr(threads, "THREADED_ROWS", 0)


@pytest.mark.parametrize("rel_threshold", [1, 2])
@pytest.mark.parametrize("run_name", ["bm25", "tfidf-title"])
def test_cranfield_run_matches_pytrec_eval(cranfield_dir, run_name, rel_threshold, ranking_threads):
    run_path = cranfield_dir / "runs" / f"{run_name}.trec"
    qrels_path = cranfield_dir / "qrels.tsv"
    expected = pytrec_eval_values(
        read_qrels_dict(qrels_path), read_run_dict(run_path), CRANFIELD_MEASURES, rel_threshold
    )

    got = evaluate_files(qrels_path, run_path, list(expected.columns), rel_threshold)

    assert len(got) == len(expected) == 225
    assert mismatches(expected, got, within_tolerance) == []


@pytest.mark.parametrize(
    ("run_name", "readme_means"),
    [
        ("bm25", [0.7965, 0.7200, 0.9289, 0.3027, 0.4390, 0.5105]),
        ("tfidf-title", [0.6597, 0.5511, 0.8711, 0.2249, 0.3272, 0.3801]),
    ],
)
def test_cranfield_means_match_dataset_readme(cranfield_dir, run_name, readme_means):
    metrics = ["mrr", "hit@1", "hit@10", "precision@10", "recall@10", "ndcg@10"]
    run_path = cranfield_dir / "runs" / f"{run_name}.trec"

    means = evaluate_files(cranfield_dir / "qrels.tsv", run_path, metrics).mean()

    assert [round(means[metric], 4) for metric in metrics] == readme_means


@pytest.mark.parametrize("rel_threshold", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_run_with_ties_matches_pytrec_eval(tmp_path, seed, rel_threshold, ranking_threads):
    collection = random_collection(seed)
    qrels_path, run_path = collection.write(tmp_path)
    expected = pytrec_eval_values(collection.qrels, collection.run, RANDOM_MEASURES, rel_threshold)

    got = evaluate_files(qrels_path, run_path, list(expected.columns), rel_threshold)

    assert sorted(got.index) == sorted(collection.qrels)  # unlabelled run queries are ignored
    assert sorted(expected.index) == sorted(set(collection.qrels) - collection.missing_from_run())
    assert mismatches(expected, got, within_tolerance) == []


@pytest.mark.parametrize("seed", [4, 5])
def test_random_run_cut_at_k_matches_pytrec_eval(tmp_path, seed, ranking_threads):
    """Measures cut at k alone: only each query's top rows are ranked (no deeper pass for
    the reciprocal rank without a cutoff, which ranks every row of some queries again)."""
    collection = random_collection(seed)
    qrels_path, run_path = collection.write(tmp_path)
    expected = pytrec_eval_values(collection.qrels, collection.run, RANDOM_MEASURES)
    expected = expected.drop(columns="mrr")

    got = evaluate_files(qrels_path, run_path, list(expected.columns))

    assert mismatches(expected, got, within_tolerance) == []


def with_infinite_scores(collection: TrecCollection, seed: int) -> TrecCollection:
    """The collection with about a third of each list's scores set to inf or -inf: ties at
    both infinities, beside the finite ones."""
    rng = random.Random(seed)
    run = {
        query_id: {
            doc_id: rng.choice([score, float("inf"), float("-inf")])
            for doc_id, score in docs.items()
        }
        for query_id, docs in collection.run.items()
    }
    return TrecCollection(collection.qrels, run)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_run_with_ties_at_infinity_matches_pytrec_eval(tmp_path, seed):
    collection = with_infinite_scores(random_collection(seed), seed)
    tied_at_infinity = [
        query_id
        for query_id, docs in collection.run.items()
        if any(list(docs.values()).count(bound) > 1 for bound in (float("inf"), float("-inf")))
    ]
    expected = pytrec_eval_values(collection.qrels, collection.run, RANDOM_MEASURES)

    got = evaluate_files(*collection.write(tmp_path), list(expected.columns))

    assert len(tied_at_infinity) >= 5
    assert mismatches(expected, got, within_tolerance) == []


def with_scores_equal_in_single_precision(collection: TrecCollection, seed: int) -> TrecCollection:
    """The collection with about a third of each list's scores moved by less than float32 can
    tell apart (1e-9 relative): trec_eval compares scores as C floats, so these are ties."""
    rng = random.Random(seed)
    run = {
        query_id: {
            doc_id: score * (1 + 1e-9) if rng.random() < 0.33 else score
            for doc_id, score in docs.items()
        }
        for query_id, docs in collection.run.items()
    }
    return TrecCollection(collection.qrels, run)


@pytest.mark.parametrize("seed", [0, 1])
def test_scores_that_differ_only_beyond_single_precision_tie_as_in_pytrec_eval(tmp_path, seed):
    collection = with_scores_equal_in_single_precision(random_collection(seed), seed)
    expected = pytrec_eval_values(collection.qrels, collection.run, RANDOM_MEASURES)

    got = evaluate_files(*collection.write(tmp_path), list(expected.columns))

    assert mismatches(expected, got, within_tolerance) == []


@pytest.mark.parametrize("seed", [0, 1])
def test_random_queries_missing_from_run_score_like_an_empty_ranking(tmp_path, seed):
    collection = random_collection(seed)
    qrels_path, run_path = collection.write(tmp_path)
    metrics = [goldset_metric(measure) for measure in RANDOM_MEASURES] + list(DERIVED_METRICS)

    got = evaluate_files(qrels_path, run_path, metrics)

    missing = got.loc[sorted(collection.missing_from_run())]
    assert len(missing) == 3
    assert (missing.drop(columns="miss@10") == 0.0).all(axis=None)
    assert (missing["miss@10"] == 1.0).all()


def test_query_with_only_grade_zero_judgements_scores_zero_in_both(tmp_path):
    """A judged query with nothing relevant scores 0 everywhere (docs/metrics.md), as in
    pytrec_eval."""
    collection = TrecCollection(
        qrels={"q1": {"d1": 0, "d2": 0}, "q2": {"d1": 1}},
        run={"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d1": 1.0}},
    )
    expected = pytrec_eval_values(collection.qrels, collection.run, RANDOM_MEASURES)

    got = evaluate_files(*collection.write(tmp_path), list(expected.columns))

    assert (expected.loc["q1"].drop("miss@10") == 0.0).all()
    assert mismatches(expected, got, within_tolerance) == []


def test_negative_zero_score_ties_with_zero_as_in_trec_eval(tmp_path):
    """-0.0 == 0.0 in C, so the doc_id breaks the tie: "b" (-0.0) ranks above "a" (0.0)."""
    collection = TrecCollection(
        qrels={"q1": {"b": 1, "a": 0}}, run={"q1": {"a": 0.0, "b": -0.0, "c": -0.5}}
    )
    expected = pytrec_eval_values(collection.qrels, collection.run, RANDOM_MEASURES)

    got = evaluate_files(*collection.write(tmp_path), list(expected.columns))

    assert expected.at["q1", "mrr"] == 1.0
    assert mismatches(expected, got, within_tolerance) == []


@pytest.mark.parametrize(
    ("expected_file", "qrels_file", "run_file", "relevance_level"),
    [
        ("out.test.aq", "qrels.test", "results.test", 1),
        ("out.test.aqc", "qrels.test", "results.trunc", 1),
        ("out.test.aql", "qrels.rel_level", "results.test", 2),
    ],
)
def test_pytrec_eval_oracle_reproduces_trec_eval_outputs(
    trec_eval_dir, expected_file, qrels_file, run_file, relevance_level
):
    """The oracle itself agrees with trec_eval's files, so agreeing with it means something."""
    printed = read_trec_eval_output(trec_eval_dir / expected_file)
    measures = [measure for measure in printed.columns if goldset_metric(measure)]
    run = read_run_dict(trec_eval_dir / run_file)
    printed = printed.loc[sorted(run), measures].rename(columns=goldset_metric)

    values = pytrec_eval_values(
        read_qrels_dict(trec_eval_dir / qrels_file), run, measures, relevance_level
    )

    assert mismatches(printed, values, printed_like_trec_eval) == []
