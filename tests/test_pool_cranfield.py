"""Cranfield end to end: pool two real runs at depth 10, label them with a simulated annotator
who answers from the qrels, then `goldset eval --db` must give pytrec_eval's per-query figures.

First-hit mode: MRR@10, hit@1 and hit@10 equal pytrec_eval's with the *full* qrels for both
runs, although only a fraction of the pool was judged (1,041 of 3,652 pooled docs).
Full mode: nDCG@10 equals pytrec_eval's with the qrels restricted to the pool.
"""

import csv
import json
from collections import defaultdict

import pytest
import pytrec_eval
from click.testing import CliRunner

from goldset.eval.readers import read_run
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

RUNS = ("bm25", "tfidf-title")
DEPTH = 10


@pytest.fixture(scope="module")
def qrels(cranfield_dir) -> dict[str, dict[str, int]]:
    judged: dict[str, dict[str, int]] = defaultdict(dict)
    with (cranfield_dir / "qrels.tsv").open() as handle:
        next(handle)
        for query_id, doc_id, grade in csv.reader(handle, delimiter="\t"):
            judged[query_id][doc_id] = int(grade)
    return dict(judged)


def label_pool(path, cranfield_dir, qrels, mode) -> int:
    """Pool both runs and let a simulated annotator label in ``mode``; return its judgements."""
    judgements = 0
    with Store(path) as store:
        store.configure(max_grade=4, mode=mode)
        runs = [cranfield_dir / "runs" / f"{name}.trec" for name in RUNS]
        store.pool(cranfield_dir / "corpus.jsonl", cranfield_dir / "queries.jsonl", runs, DEPTH)
        query_id = store.next_query("sim")
        while query_id is not None:
            while (candidate := store.next_candidate(query_id, "sim", mode=mode)) is not None:
                grade = qrels.get(query_id, {}).get(candidate["doc_id"], 0)
                store.judge(query_id, candidate["doc_id"], grade, "sim", seconds=5.0, mode=mode)
                judgements += 1
            if store.query_state(query_id, "sim")["needs_verdict"]:
                store.mark(query_id, "miss", "sim")  # relevant docs exist, just not in the pool
            query_id = store.next_query("sim")
    return judgements


@pytest.fixture(scope="module")
def first_hit_db(tmp_path_factory, cranfield_dir, qrels):
    path = tmp_path_factory.mktemp("cranfield") / "first_hit.db"
    return path, label_pool(path, cranfield_dir, qrels, "first_hit")


@pytest.fixture(scope="module")
def full_db(tmp_path_factory, cranfield_dir, qrels):
    path = tmp_path_factory.mktemp("cranfield") / "full.db"
    return path, label_pool(path, cranfield_dir, qrels, "full")


def goldset_eval(db, run_path, metrics, tmp_path) -> dict[str, dict[str, float]]:
    """Per-query figures from ``goldset eval --db DB --run RUN``."""
    out = tmp_path / f"{run_path.stem}.jsonl"
    args = ["eval", "--db", str(db), "--run", str(run_path), "--bootstrap", "0"]
    args += [arg for metric in metrics for arg in ("-m", metric)] + ["--per-query", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {row["query_id"]: row for row in rows}


def run_at_depth(run_path) -> dict[str, dict[str, float]]:
    """The run cut to its top DEPTH per query (trec_eval order), as pytrec_eval wants it."""
    results = read_run(run_path).results
    ranked = results.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False])
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for query_id, doc_id, score in (
        ranked.groupby("query_id")
        .head(DEPTH)[["query_id", "doc_id", "score"]]
        .itertuples(index=False)
    ):
        run[query_id][doc_id] = float(score)
    return dict(run)


def test_first_hit_judges_a_fraction_of_the_pool(first_hit_db, full_db):
    (_, first_hit_judgements), (_, pool_judgements) = first_hit_db, full_db
    assert (first_hit_judgements, pool_judgements) == (1041, 3652)


@pytest.mark.parametrize("run_name", RUNS)
def test_first_hit_labels_give_pytrec_evals_mrr_and_hits_for_every_pooled_run(
    first_hit_db, cranfield_dir, qrels, run_name, tmp_path
):
    run_path = cranfield_dir / "runs" / f"{run_name}.trec"
    ours = goldset_eval(first_hit_db[0], run_path, ["mrr@10", "hit@1", "hit@10"], tmp_path)
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "success.1,10"})
    expected = oracle.evaluate(run_at_depth(run_path))
    assert set(ours) == set(expected) and len(ours) == 225
    for query_id, values in expected.items():
        assert ours[query_id]["mrr@10"] == pytest.approx(values["recip_rank"], abs=1e-12)
        assert ours[query_id]["hit@1"] == values["success_1"]
        assert ours[query_id]["hit@10"] == values["success_10"]


@pytest.mark.parametrize("run_name", RUNS)
def test_full_mode_labels_give_pytrec_evals_ndcg_with_qrels_restricted_to_the_pool(
    full_db, cranfield_dir, qrels, run_name, tmp_path
):
    with Store(full_db[0]) as store:
        pooled = {q: store.labels(q) for q in qrels}
    restricted = {
        query_id: {doc_id: grade for doc_id, grade in judged.items() if doc_id in pooled[query_id]}
        for query_id, judged in qrels.items()
    }
    restricted = {query_id: judged for query_id, judged in restricted.items() if judged}
    run_path = cranfield_dir / "runs" / f"{run_name}.trec"
    ours = goldset_eval(full_db[0], run_path, ["ndcg@10"], tmp_path)
    expected = pytrec_eval.RelevanceEvaluator(restricted, {"ndcg_cut.10"}).evaluate(
        run_at_depth(run_path)
    )
    for query_id, values in ours.items():
        oracle = expected[query_id]["ndcg_cut_10"] if query_id in expected else 0.0
        assert values["ndcg@10"] == pytest.approx(oracle, abs=1e-12)
    assert len(expected) > 200
