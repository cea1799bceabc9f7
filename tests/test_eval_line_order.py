"""A run and its qrels give the same per-query values whatever the order of their lines.

A file grouped by query (as runs and qrels are usually written) takes the quick paths: the
fast reader, the repeat check and the judgement index that work query by query. Lines in
any other order take the general ones. Both must agree to the last bit, ties included.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from goldset.eval.errors import InputError
from goldset.eval.metrics import per_query_values, rank_run
from goldset.eval.readers import read_golden, read_run

METRICS = ("mrr", "mrr@3", "hit@1", "precision@5", "recall@5", "ndcg@5", "judged@5")


@st.composite
def collection(draw) -> tuple[list[str], list[str]]:
    """Run lines (grouped by query, best first) and qrels lines, with many score ties."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    run, qrels = [], []
    for query in range(draw(st.integers(1, 12))):
        docs = rng.sample(range(60), rng.randint(1, 25))
        # Scores from a few values: ties within a query, at and across the cutoffs.
        scores = sorted((rng.choice([0.5, 1.0, 1.5, 2.0]) for _ in docs), reverse=True)
        run += [f"q{query} Q0 d{doc} {rank} {score} t" for rank, (doc, score) in
                enumerate(zip(docs, scores, strict=True), start=1)]  # fmt: skip
        judged = rng.sample(range(60), rng.randint(0, 20))
        qrels += [f"q{query} 0 d{doc} {rng.choice([0, 0, 1, 2, 3])}" for doc in judged]
    return run, qrels


def values(tmp_path, run_lines: list[str], qrels_lines: list[str]) -> dict[str, list]:
    """Per-query values (by query id) of the run against the qrels, read by the fast path."""
    (tmp_path / "run.trec").write_text("\n".join(run_lines) + "\n")
    (tmp_path / "qrels.txt").write_text("\n".join(qrels_lines) + "\n")
    golden = read_golden(tmp_path / "qrels.txt", parser="fast")
    run = read_run(tmp_path / "run.trec", parser="fast")
    per_query = per_query_values(rank_run(golden, run, METRICS), METRICS)
    rows = per_query.values.tolist()
    return dict(zip(per_query.query_ids.tolist(), rows, strict=True))


@settings(max_examples=60, deadline=None)
@given(collection(), st.randoms(use_true_random=False))
# Every grade 0, d0 among them: the judgement added below must not repeat it.
@example(files=(["q0 Q0 d5 1 2.0 t", "q0 Q0 d0 2 1.0 t"], ["q0 0 d0 0"]), random_=random.Random(0))
def test_shuffled_lines_give_the_same_per_query_values_as_grouped_ones(
    tmp_path_factory, files, random_
):
    run_lines, qrels_lines = files
    if not any(line.split()[3] != "0" for line in qrels_lines):
        # At least one relevant judgement, as read_golden needs, of a doc never drawn (d60).
        qrels_lines = [*qrels_lines, "q0 0 d60 1"]
    grouped = values(tmp_path_factory.mktemp("grouped"), run_lines, qrels_lines)
    shuffled_run, shuffled_qrels = list(run_lines), list(qrels_lines)
    random_.shuffle(shuffled_run)
    random_.shuffle(shuffled_qrels)
    shuffled = values(tmp_path_factory.mktemp("shuffled"), shuffled_run, shuffled_qrels)
    assert shuffled.keys() == grouped.keys()
    for query_id, row in grouped.items():
        # NaN (not measured) compares unequal to itself: compare the bits.
        assert np.array_equal(np.array(shuffled[query_id]), np.array(row), equal_nan=True)


# A file whose line repeats the doc of an earlier line of its query (the repeat, then the
# start of every line of that pair). Judgements find a repeat through the index of their
# (query, doc) pairs that later matches ranked rows; runs by sorting each query's docs.
RUN_LINES = [f"q{query} Q0 d{doc} {doc} {10 - doc} t" for query in range(3) for doc in range(5)]
QRELS_LINES = [f"q{query} 0 d{doc} {doc % 3}" for query in range(4) for doc in range(6)]
REPEATED = {
    "run": (
        read_run,
        "run.trec",
        RUN_LINES[:12] + ["q2 Q0 d1 9 0.5 t"] + RUN_LINES[12:],
        "d1",
        "q2",
    ),
    "qrels": (
        read_golden,
        "qrels.txt",
        QRELS_LINES[:9] + ["q1 0 d4 2"] + QRELS_LINES[9:],
        "d4",
        "q1",
    ),
}


@pytest.mark.parametrize("kind", ["run", "qrels"])
@pytest.mark.parametrize("parser", ["fast", "general", "plain"])
@pytest.mark.parametrize("order", ["grouped", "shuffled"])
def test_a_doc_repeated_within_a_query_is_refused_in_any_line_order(tmp_path, kind, order, parser):
    read, name, lines, doc_id, query_id = REPEATED[kind]
    lines = list(lines)
    if order == "shuffled":
        random.Random(0).shuffle(lines)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as refused:
        read(path, parser=parser)
    assert refused.value.field == "doc_id"
    assert f"'{doc_id}' repeated within query '{query_id}'" in refused.value.problem
    # query id and doc id are the first and third fields of both layouts
    holding = [n for n, line in enumerate(lines, 1) if line.split()[0:3:2] == [query_id, doc_id]]
    assert len(holding) == 2 and refused.value.line == max(holding)
