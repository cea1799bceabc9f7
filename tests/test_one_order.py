"""One run order for eval and pooling, one query-id order for every list (issue 25).

A run's order is eval's (:func:`goldset.eval.ranking.run_order`): pooling a run to depth k
keeps exactly the docs that eval ranks in its top k, ties in score included, and the fused
order of a pool breaks equal fused scores as eval breaks equal scores. Query ids in every
list are in natural order (:func:`goldset.eval.ids.query_id_order`: q2 before q10).
"""

from __future__ import annotations

import random
import re
from itertools import cycle
from pathlib import Path

import numpy as np
import pytest

from goldset.eval.changes import changed_queries
from goldset.eval.ids import query_id_order
from goldset.eval.metrics import DEFAULT_METRICS, per_query_values
from goldset.eval.ranking import rank, run_order
from goldset.eval.readers import golden_from_records, read_run
from goldset.eval.report import worst_queries
from goldset.labeler import live
from goldset.labeler.pooling import fuse, read_pooled_run

# Ids whose text order is not their natural order (q10 < q2 as text).
QUERY_IDS = ["q2", "q10", "q1", "q33", "q3", "q100", "q20", "q02b"]


def tied_run(path: Path, seed: int = 7) -> dict[str, dict[str, float]]:
    """A TREC run whose scores take few values (ties everywhere, across any cutoff), its lines
    shuffled and its rank column wrong: only eval's order can say which docs are in a top k."""
    rng = random.Random(seed)
    scores = {
        query_id: {f"d{n}": rng.choice([1.0, 2.0, 2.5]) for n in rng.sample(range(40), 12)}
        for query_id in QUERY_IDS
    }
    lines = [
        f"{query_id} Q0 {doc_id} 1 {score} tied\n"
        for query_id, docs in scores.items()
        for doc_id, score in docs.items()
    ]
    rng.shuffle(lines)
    path.write_text("".join(lines), encoding="utf-8")
    return scores


def eval_top(path: Path, scores: dict[str, dict[str, float]], k: int) -> dict[str, list[str]]:
    """The docs eval ranks in each query's top ``k``, in rank order: every doc of the run is
    judged with a grade of its own, so a ranked row's grade names its doc."""
    names = {query_id: sorted(docs) for query_id, docs in scores.items()}
    records = [
        {"query_id": query_id, "judgments": {doc: grade for grade, doc in enumerate(docs, 1)}}
        for query_id, docs in names.items()
    ]
    ranking = rank(golden_from_records(records), read_run(path), top=k)
    top = {query_id: [] for query_id in scores}
    for query, grade in zip(ranking.query_index, ranking.grade, strict=True):
        query_id = ranking.query_ids[query]
        top[query_id].append(names[query_id][grade - 1])
    return top


@pytest.mark.parametrize("depth", [1, 2, 5, 11])
def test_the_pool_at_depth_k_holds_exactly_the_docs_eval_ranks_in_its_top_k(tmp_path, depth):
    path = tmp_path / "tied.trec"
    scores = tied_run(path)
    pooled = read_pooled_run(path, depth).rankings
    assert {query_id: [doc for doc, _ in docs] for query_id, docs in pooled.items()} == eval_top(
        path, scores, depth
    )

    # The test means something: in some query a tie in score straddles the cutoff.
    def tie_at_the_cutoff(query_id: str) -> bool:
        kept, last_kept = dict(pooled[query_id]), pooled[query_id][-1][1]
        return any(score == last_kept for doc, score in scores[query_id].items() if doc not in kept)

    assert any(tie_at_the_cutoff(query_id) for query_id in scores)


def test_eval_order_is_score_descending_then_doc_id_descending(tmp_path):
    path = tmp_path / "tied.trec"
    scores = tied_run(path)
    run = read_run(path)
    order = run_order(run)
    doc_ids = run.doc_ids.to_pylist() if hasattr(run.doc_ids, "to_pylist") else list(run.doc_ids)
    ranked: dict[str, list[str]] = {}
    for row, query in zip(order.row, order.query_index, strict=True):
        ranked.setdefault(run.query_ids[query], []).append(doc_ids[row])
    # An independent reading of the rule: sorted by (score, doc id as UTF-8 bytes), reversed.
    expected = {
        query_id: sorted(docs, key=lambda d, docs=docs: (docs[d], d.encode()), reverse=True)
        for query_id, docs in scores.items()
    }
    assert ranked == expected
    # Pooling keeps each doc's own score beside it.
    pooled = read_pooled_run(path, 12).rankings
    assert all(dict(pooled[q]) == scores[q] for q in scores)


def test_equal_fused_scores_are_broken_as_eval_breaks_equal_scores():
    # Each run ranks a different doc first and second: d1/d9 tie, and d5/d7 tie.
    fused = fuse({"q": {"a": ["d1", "d5"], "b": ["d9", "d7"]}})["q"]
    assert [doc for doc, _ in fused] == ["d9", "d1", "d7", "d5"]
    assert fused[0][1] == fused[1][1] == 1 / 61


def test_query_ids_in_natural_order():
    ids = ["q219", "q22", "q3", "a10", "q22b", "q03", "q10", "q2"]
    ordered = [ids[i] for i in np.argsort(query_id_order(ids))]
    assert ordered == ["a10", "q2", "q03", "q3", "q10", "q22", "q22b", "q219"]  # q03, q3: as text
    assert query_id_order([]).tolist() == []


def test_query_id_order_agrees_with_a_plain_reading_of_natural_order():
    """Random ids (leading zeros, non-ASCII digits, a text part the prefix of another) ordered
    as a list of parts compares: text with text, digit runs as the numbers ``int`` reads."""

    def plain_key(text: str) -> tuple[list, str]:
        parts = re.split(r"(\d+)", text)
        return [int(part) if odd else part for odd, part in zip(cycle((0, 1)), parts)], text

    rng = random.Random(3)
    alphabet = "aAbz-_ é0179٣"  # ٣: an Arabic-Indic three
    for _ in range(2000):
        ids = ["".join(rng.choices(alphabet, k=rng.randint(0, 6))) for _ in range(12)]
        places = query_id_order(ids)
        assert [ids[i] for i in np.argsort(places)] == sorted(ids, key=plain_key), ids


def test_worst_and_changed_queries_list_ids_in_natural_order(tmp_path):
    ids = ["q10", "q2", "q1", "q100", "q20"]
    golden = golden_from_records({"query_id": q, "judgments": {"rel": 1}} for q in ids)
    missing = tmp_path / "miss.trec"  # every query a miss: all equally bad
    missing.write_text("".join(f"{q} Q0 other 1 1.0 m\n" for q in ids), encoding="utf-8")
    hitting = tmp_path / "hit.trec"  # every query a hit at rank 1
    hitting.write_text("".join(f"{q} Q0 rel 1 1.0 h\n" for q in ids), encoding="utf-8")
    natural = ["q1", "q2", "q10", "q20", "q100"]

    ranked = {
        name: rank(golden, read_run(path)) for name, path in (("miss", missing), ("hit", hitting))
    }
    per_query = per_query_values(ranked["miss"], DEFAULT_METRICS)
    worst = worst_queries(golden, ranked["miss"], per_query, count=len(ids))
    assert [entry["query_id"] for entry in worst] == natural
    report = {"worst": worst}
    assert live.worst_table(report)["query_id"].tolist() == natural

    changed = changed_queries(golden, ranked["hit"], ranked["miss"])
    assert [entry["query_id"] for entry in changed["new_misses"]] == natural
    table = live.changed_table({"changed_queries": changed}, golden)
    assert table["query_id"].tolist() == natural
