"""Pooling several runs: provenance, fused order, reused judgements, the first-hit schedule."""

import json

import pytest

from goldset.eval.ranking import rank
from goldset.eval.readers import InputError, golden_from_records, read_run
from goldset.labeler.pooling import fuse, next_to_judge, run_settled
from goldset.labeler.store import Store


def test_fusion_favours_docs_that_several_runs_rank_high():
    fused = fuse({"q1": {"a": ["x", "y", "z"], "b": ["y", "w", "x"]}, "q2": {"only": ["c", "a"]}})
    assert [doc_id for doc_id, _ in fused["q1"]] == ["y", "x", "w", "z"]
    assert fused["q2"] == [("c", 1 / 61), ("a", 1 / 62)]


def test_a_run_is_settled_by_its_first_relevant_doc_or_by_having_none():
    assert run_settled(["a", "b", "c"], {"a": 0, "b": 1}, threshold=1)
    assert not run_settled(["a", "b", "c"], {"a": 0, "c": 1}, threshold=1)
    assert run_settled(["a", "b"], {"a": 0, "b": 0}, threshold=1)
    assert not run_settled(["a", "b"], {"a": 1}, threshold=2)


def test_next_to_judge_takes_the_smallest_rank_among_unsettled_runs():
    rankings = {"a": ["x", "y", "z"], "b": ["y", "w", "x"]}
    assert next_to_judge(rankings, {}, 1, display_order=["y", "x", "w", "z"]) == "y"
    assert next_to_judge(rankings, {"y": 1}, 1) == "x"
    assert next_to_judge(rankings, {"y": 1, "x": 1}, 1) is None
    assert next_to_judge(rankings, {"y": 0, "x": 0}, 1) == "w"
    assert next_to_judge(rankings, {"y": 0, "x": 0, "w": 0, "z": 0}, 1) is None


def test_next_to_judge_over_one_list_is_the_first_unjudged_from_the_top():
    ranking = {"import": ["a", "b", "c"]}
    assert [next_to_judge(ranking, grades, 1) for grades in ({}, {"a": 0}, {"a": 0, "b": 1})] == [
        "a",
        "b",
        None,
    ]


@pytest.fixture
def beir(tmp_path):
    """A tiny BEIR collection: 6 docs, 2 queries, and three runs."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"_id": f"d{i}", "title": f"title {i}", "text": f"text of doc {i}"}) + "\n"
            for i in range(6)
        )
    )
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps({"_id": "1", "text": "first query", "slice": "head"})
        + "\n"
        + json.dumps({"_id": "2", "text": "second query", "kind": "faq"})
        + "\n"
    )

    def run(name, lines):
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(f"{q} Q0 {d} {r} {s} {name}\n" for q, d, r, s in lines))
        return path

    runs = {
        "A": run("A", [(1, "d0", 1, 9), (1, "d1", 2, 8), (1, "d2", 3, 7), (2, "d3", 1, 5)]),
        "B": run("B", [(1, "d1", 1, 3), (1, "d3", 2, 2), (1, "d0", 3, 1), (2, "d4", 1, 4)]),
        "C": run("C", [(1, "d5", 1, 2), (1, "d1", 2, 1), (3, "d0", 1, 1)]),
    }
    return corpus, queries, runs


def test_pool_keeps_each_runs_top_k_with_provenance_in_fused_order(tmp_path, beir):
    corpus, queries, runs = beir
    with Store(tmp_path / "p.db") as store:
        counts = store.pool(corpus, queries, [runs["A"], runs["B"]], depth=2)
        assert counts["candidates_added"] == 5 and counts["queries_added"] == 2
        candidates = store.candidates("1")
        assert [c["doc_id"] for c in candidates] == ["d1", "d0", "d3"]
        assert candidates[0]["provenance"] == {"A": 2, "B": 1}
        assert candidates[2]["provenance"] == {"B": 2}
        assert store.query("2")["metadata"] == {"kind": "faq"}
        assert store.query("1")["slice"] == "head"


def test_pool_ranks_by_score_not_by_the_rank_column(tmp_path, beir):
    corpus, queries, _ = beir
    shuffled = tmp_path / "S.trec"
    shuffled.write_text("1 Q0 d2 1 1.0 S\n1 Q0 d4 2 3.0 S\n1 Q0 d0 3 3.0 S\n")
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [shuffled], depth=2)
        # score 3.0 twice: trec_eval breaks the tie by doc_id descending
        candidates = store.candidates("1")
        assert [(c["doc_id"], c["provenance"]) for c in candidates] == [
            ("d4", {"S": 1}),
            ("d0", {"S": 2}),
        ]


def test_pool_orders_scores_that_differ_beyond_single_precision_as_eval_does(tmp_path, beir):
    corpus, queries, _ = beir
    run = tmp_path / "S.trec"
    # 1.00000001 and 1.0 tie in single precision (the tie going to the larger doc id, d2),
    # not in double: the depth-1 pool holds the doc that eval ranks first, d0 relevant here.
    run.write_text("1 Q0 d0 1 1.00000001 S\n1 Q0 d2 2 1.0 S\n")
    golden = golden_from_records([{"query_id": "1", "judgments": {"d0": 1, "d2": 0}}])
    first_in_eval = "d0" if rank(golden, read_run(run)).grade[0] == 1 else "d2"
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [run], depth=1)
        assert [c["doc_id"] for c in store.candidates("1")] == [first_in_eval]


def test_first_hit_settles_every_run_then_completes(tmp_path, beir):
    corpus, queries, runs = beir
    relevant = {"d0"}
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [runs["A"], runs["B"]], depth=3)
        judged = []
        while (candidate := store.next_candidate("1", "ana")) is not None:
            judged.append(candidate["doc_id"])
            store.judge("1", candidate["doc_id"], int(candidate["doc_id"] in relevant), "ana")
        # Both runs' rank 1 first (d1 is first in fused order), then A's d0 settles A,
        # then B's next unjudged doc; B's d0 at rank 3 is already known.
        assert judged == ["d1", "d0", "d3"]
        assert store.query_state("1", "ana")["complete"]
        assert "d2" not in store.labels("1", "ana")


def test_a_new_run_adds_only_unjudged_docs_as_holes_of_the_done_query(tmp_path, beir):
    corpus, queries, runs = beir
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [runs["A"], runs["B"]], depth=2)
        store.judge("1", "d1", 1, "ana")
        store.judge("1", "d0", 0, "ana")
        assert store.query_state("1", "ana")["complete"]
        counts = store.pool(corpus, queries, [runs["C"]], depth=2)
        assert counts["candidates_added"] == 1 and counts["run_queries_ignored"] == 1
        # still done (in the golden set), with the new run's unjudged doc as work left
        state = store.query_state("1", "ana")
        assert (state["status"], state["holes"], state["complete"]) == ("done", 1, False)
        assert store.next_query("ana") == "1"
        assert store.next_candidate("1", "ana")["doc_id"] == "d5"
        assert store.labels("1", "ana") == {"d1": 1, "d0": 0}
        store.judge("1", "d5", 0, "ana")
        assert store.query_state("1", "ana")["complete"]


def test_a_different_file_under_a_pooled_runs_name_is_refused(tmp_path, beir):
    corpus, queries, runs = beir
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [runs["A"]], depth=2)
        runs["A"].write_text("1 Q0 d5 1 1.0 A\n")
        with pytest.raises(InputError, match="different run named 'A'"):
            store.pool(corpus, queries, [runs["A"]], depth=2)


def test_a_run_doc_missing_from_the_corpus_names_the_run_line(tmp_path, beir):
    corpus, queries, _ = beir
    run = tmp_path / "X.trec"
    run.write_text("1 Q0 d0 1 2.0 X\n2 Q0 nowhere 1 1.0 X\n")
    with Store(tmp_path / "p.db") as store:
        with pytest.raises(InputError, match=r"X.trec:2: field 'doc_id': doc 'nowhere'"):
            store.pool(corpus, queries, [run], depth=5)
        assert not store.has_queries()


def test_candidate_run_frame_gives_a_pooled_run_and_the_fused_lists(tmp_path, beir):
    corpus, queries, runs = beir
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [runs["A"], runs["B"]], depth=2)
        frame = store.candidate_run_frame("B")
        assert frame.values.tolist() == [["1", "d1", 3.0], ["1", "d3", 2.0], ["2", "d4", 4.0]]
        fused = store.candidate_run_frame()
        assert fused[fused.query_id == "1"]["doc_id"].tolist() == ["d1", "d0", "d3"]
        with pytest.raises(ValueError, match="no pooled run"):
            store.candidate_run_frame("Z")


def test_pool_command(tmp_path, beir):
    from click.testing import CliRunner

    from goldset.labeler.cli import cli

    corpus, queries, runs = beir
    args = ["pool", "--corpus", str(corpus), "--queries", str(queries), "--depth", "2"]
    args += ["--run", str(runs["A"]), "--run", str(runs["B"]), "--db", str(tmp_path / "p.db")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "pooled A, B at depth 2: 5 new candidates over 2 queries" in result.output


def test_a_run_is_pooled_once_over_the_projects_own_queries_and_documents(tmp_path, beir):
    corpus, queries, runs = beir
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [runs["A"]], depth=2)
        counts = store.pool(None, None, [runs["B"]], depth=2)
        assert counts["candidates_added"] == 2 and counts["queries_added"] == 0
        assert store.candidates("1")[0]["provenance"] == {"A": 2, "B": 1}
        again = store.pool(None, None, [runs["B"]], depth=2)
        assert again["candidates_added"] == 0 and again["queries_touched"] == 0
        unknown = tmp_path / "U.trec"
        unknown.write_text("1 Q0 d9 1 1.0 U\n")
        with pytest.raises(InputError, match="'d9' .* is not in the project"):
            store.pool(None, None, [unknown], depth=2)


def test_pool_command_refuses_two_runs_of_one_name_without_a_traceback(tmp_path, beir):
    from click.testing import CliRunner

    from goldset.labeler.cli import cli

    corpus, queries, runs = beir
    twin = tmp_path / "other"
    twin.mkdir()
    (twin / runs["A"].name).write_bytes(runs["B"].read_bytes())
    args = [
        "pool",
        "--corpus",
        str(corpus),
        "--queries",
        str(queries),
        "--db",
        str(tmp_path / "p.db"),
    ]
    result = CliRunner().invoke(
        cli, [*args, "--run", str(runs["A"]), "--run", str(twin / "A.trec")]
    )
    assert result.exit_code == 2 and "Error:" in result.output
    assert not isinstance(result.exception, ValueError)  # a message, not a traceback


def test_a_corpus_that_repeats_a_doc_id_is_refused_and_nothing_is_pooled(tmp_path, beir):
    corpus, queries, runs = beir
    with corpus.open("a") as extra:
        extra.write(json.dumps({"_id": "d1", "title": "another d1", "text": "which one?"}) + "\n")
    with Store(tmp_path / "p.db") as store:
        with pytest.raises(InputError) as raised:
            store.pool(corpus, queries, [runs["A"]], depth=2)
        assert (raised.value.line, raised.value.field) == (7, "_id")
        assert "'d1' repeats line 2" in str(raised.value)
        assert not store.has_queries()
