"""Work done once per golden set: its judgements are indexed once, when it is read, and
serve the repeat check, its version and every run ranked against it."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from goldset.eval import columns, readers
from goldset.eval.metrics import rank_run, reciprocal_rank
from goldset.eval.ranking import prepare


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def counting_indexes(monkeypatch) -> list[int]:
    """Count the PairIndex built from now on (their rows)."""
    built = []
    original = columns.PairIndex.__init__

    def counted(self, groups, values, hashes=None):
        built.append(len(groups))
        original(self, groups, values, hashes)

    monkeypatch.setattr(columns.PairIndex, "__init__", counted)
    return built


def test_qrels_are_indexed_once_for_the_repeat_check_the_version_and_every_ranking(
    tmp_path, monkeypatch
):
    qrels = write(tmp_path / "qrels.txt", ["q1 0 a 1", "q1 0 b 0", "q2 0 c 2", "q2 0 d 1"])
    run_a = write(tmp_path / "a.trec", ["q1 Q0 b 1 2.0 a", "q1 Q0 a 2 1.0 a", "q2 Q0 d 1 1 a"])
    run_b = write(tmp_path / "b.trec", ["q1 Q0 a 1 2.0 b", "q2 Q0 c 1 1.0 b"])
    built = counting_indexes(monkeypatch)
    golden = prepare(readers.read_golden(qrels))
    assert built == [4]  # read: the index that checked for a repeated doc, kept
    first = rank_run(golden, readers.read_run(run_a), ["mrr@10"])
    second = rank_run(golden, readers.read_run(run_b), ["mrr@10"])
    assert built == [4]
    assert reciprocal_rank(first, 10).tolist() == [0.5, 1.0]
    assert reciprocal_rank(second, 10).tolist() == [1.0, 1.0]


def test_a_version_from_the_kept_index_equals_one_from_the_columns(tmp_path):
    lines = [f"q{q} 0 d{(7 * q + j) % 13} {j % 3}" for q in range(40) for j in range(q % 5 + 1)]
    from_qrels = readers.read_golden(write(tmp_path / "qrels.txt", lines))
    columns = {name: from_qrels.judgment_column(name) for name in ("query_id", "doc_id", "grade")}
    queries = {name: from_qrels.query_column(name) for name in readers.QUERY_COLUMNS}
    rebuilt = readers.Golden(queries, columns)  # no index given: built from the columns
    assert rebuilt.version == from_qrels.version
    assert np.array_equal(rebuilt.pairs.hashes, from_qrels.pairs.hashes)


def test_a_judgement_of_an_unlisted_query_counts_in_the_version_and_nowhere_else(tmp_path):
    """Its query is not in the golden set: its id is hashed from the judgement itself."""
    import pandas as pd

    queries = pd.DataFrame(
        {
            "query_id": ["q1", "q2"],
            "query": ["", ""],
            "slice": ["", ""],
            "status": ["done", "done"],
            "answerable": [True, True],
            "mode": ["", ""],
        }
    )
    listed = {"query_id": ["q1", "q2"], "doc_id": ["a", "c"], "grade": [1, 2]}
    stray = {"query_id": ["q1", "q2", "q9"], "doc_id": ["a", "c", "z"], "grade": [1, 2, 1]}
    shuffled = {name: values[::-1] for name, values in stray.items()}
    golden = readers.Golden(queries, pd.DataFrame(listed))
    with_stray = readers.Golden(queries, pd.DataFrame(stray))
    assert golden.judgments_of_listed_queries
    assert not with_stray.judgments_of_listed_queries
    assert with_stray.version != golden.version
    assert readers.Golden(queries, pd.DataFrame(shuffled)).version == with_stray.version
    run = readers.read_run(write(tmp_path / "run.trec", ["q1 Q0 a 1 2 r", "q2 Q0 z 1 2 r"]))
    ranked, stray_ranked = rank_run(golden, run), rank_run(with_stray, run)
    assert reciprocal_rank(stray_ranked, 10).tolist() == reciprocal_rank(ranked, 10).tolist()
    assert reciprocal_rank(ranked, 10).tolist() == [1.0, 0.0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(-1, 3) | st.integers(-1, 500)), max_size=60),
    st.integers(0, 3),
)
def test_each_querys_ideal_grades_are_its_positive_grades_best_first(judgements, unjudged):
    # Few grades take the counting sort; a grade in the hundreds (few judgements) the sort.
    from goldset.eval.ranking import _ideal_grades

    query_count = max((query for query, _ in judgements), default=-1) + 1 + unjudged
    query_index = np.array([query for query, _ in judgements], dtype=np.int32)
    grade = np.array([grade for _, grade in judgements], dtype=np.int64)
    ideal = _ideal_grades(query_index, grade, query_count)
    for query in range(query_count):
        expected = sorted((g for q, g in judgements if q == query and g > 0), reverse=True)
        row = ideal[query].tolist()
        assert row == expected + [0] * (len(row) - len(expected))
