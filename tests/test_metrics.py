"""Each metric on small hand-made rankings, edge cases included (docs/metrics.md)."""

import math

import numpy as np
import pandas as pd
import pytest

from goldset.eval.metrics import (
    DEFAULT_METRICS,
    evaluate,
    metric_values,
    needs_first_relevant,
    parse_metric,
    rank_run,
    ranks_needed,
)
from goldset.eval.readers import golden_from_records, run_from_frame


def golden(*queries: dict):
    """A golden set from short records: done and answerable unless said otherwise."""
    return golden_from_records([{"status": "done", "answerable": True, **q} for q in queries])


def run(rows: dict[str, list]):
    """A run from {query_id: [(doc_id, score), ...]}."""
    frame = pd.DataFrame(
        [(query_id, doc, score) for query_id, docs in rows.items() for doc, score in docs],
        columns=["query_id", "doc_id", "score"],
    )
    return run_from_frame(frame, name="test", query_ids=rows)


def ranked(*docs: str) -> list[tuple[str, float]]:
    """Docs with strictly decreasing scores, so the list order is the ranking."""
    return [(doc, float(len(docs) - position)) for position, doc in enumerate(docs)]


def values(gold, results, metrics, **options) -> dict[str, dict[str, float]]:
    return evaluate(gold, results, metrics, **options).to_dict(orient="index")


def test_reciprocal_rank_is_one_over_the_first_relevant_rank():
    gold = golden({"query_id": "q", "judgments": {"a": 0, "b": 0, "c": 1, "d": 1}})
    result = values(gold, run({"q": ranked("a", "b", "c", "d")}), ["mrr", "mrr@3", "mrr@2"])
    assert result["q"] == {"mrr": pytest.approx(1 / 3), "mrr@3": pytest.approx(1 / 3), "mrr@2": 0.0}


def test_worked_example_of_the_mrr_definition():
    gold = golden(
        {"query_id": "parse", "judgments": {"p1": 1}},
        {"query_id": "retry", "judgments": {"r3": 1}},
        {"query_id": "deprecated", "judgments": {"d1": 0}},
        {"query_id": "upload", "judgments": {"u2": 1}},
    )
    results = run(
        {
            "parse": ranked("p1", "p2", "p3"),
            "retry": ranked("r1", "r2", "r3", "r4"),
            "deprecated": ranked(*[f"d{i}" for i in range(1, 11)]),
            "upload": ranked("u1", "u2"),
        }
    )
    means = evaluate(gold, results, ["mrr@10", "hit@1", "miss@10"]).mean()
    assert round(means["mrr@10"], 3) == 0.458
    assert means["hit@1"] == 0.25
    assert means["miss@10"] == 0.25


def test_hit_and_miss_are_complements():
    gold = golden({"query_id": "q", "judgments": {"c": 1}})
    result = values(gold, run({"q": ranked("a", "b", "c")}), ["hit@2", "miss@2", "hit@3", "miss@3"])
    assert result["q"] == {"hit@2": 0.0, "miss@2": 1.0, "hit@3": 1.0, "miss@3": 0.0}


def test_precision_divides_by_k_even_when_the_list_is_shorter():
    gold = golden({"query_id": "q", "judgments": {"a": 1, "b": 1}})
    result = values(gold, run({"q": ranked("a", "b")}), ["precision@2", "precision@10"])
    assert result["q"] == {"precision@2": 1.0, "precision@10": 0.2}


def test_recall_divides_by_all_relevant_judged_docs_including_unretrieved_ones():
    gold = golden({"query_id": "q", "judgments": {"a": 1, "b": 0, "x": 2, "y": 1}})
    result = values(gold, run({"q": ranked("a", "b", "c")}), ["recall@1", "recall@10"])
    assert result["q"] == {"recall@1": pytest.approx(1 / 3), "recall@10": pytest.approx(1 / 3)}


def test_ndcg_uses_linear_gain_and_an_ideal_from_all_judged_grades():
    gold = golden({"query_id": "q", "judgments": {"a": 1, "b": 3, "x": 2}})
    result = values(gold, run({"q": ranked("a", "b")}), ["ndcg@2"])
    dcg = 1 / math.log2(2) + 3 / math.log2(3)
    ideal = 3 / math.log2(2) + 2 / math.log2(3)
    assert result["q"]["ndcg@2"] == pytest.approx(dcg / ideal)


def test_ndcg_exponential_gain_is_two_to_the_grade_minus_one():
    gold = golden({"query_id": "q", "judgments": {"a": 1, "b": 3}})
    result = values(gold, run({"q": ranked("a", "b")}), ["ndcg@2"], gain="exp")
    dcg = 1 / math.log2(2) + 7 / math.log2(3)
    ideal = 7 / math.log2(2) + 1 / math.log2(3)
    assert result["q"]["ndcg@2"] == pytest.approx(dcg / ideal)


def test_ndcg_ignores_the_relevance_threshold_as_trec_eval_does():
    gold = golden({"query_id": "q", "judgments": {"a": 1}})
    result = values(gold, run({"q": ranked("a")}), ["ndcg@5", "mrr"], rel_threshold=2)
    assert result["q"] == {"ndcg@5": 1.0, "mrr": 0.0}


def test_rel_threshold_decides_what_counts_as_relevant():
    gold = golden({"query_id": "q", "judgments": {"a": 1, "b": 2}})
    assert values(gold, run({"q": ranked("a", "b")}), ["mrr"], rel_threshold=2)["q"]["mrr"] == 0.5


def test_unjudged_docs_count_as_not_relevant_and_judged_shows_coverage():
    gold = golden({"query_id": "q", "judgments": {"b": 1, "c": 0}})
    result = values(gold, run({"q": ranked("a", "b", "c", "d")}), ["mrr", "judged@2", "judged@4"])
    assert result["q"] == {"mrr": 0.5, "judged@2": 0.5, "judged@4": 0.5}


def test_judged_divides_by_what_the_run_shows_within_k():
    gold = golden({"query_id": "q", "judgments": {"a": 0}})
    assert values(gold, run({"q": ranked("a")}), ["judged@10"])["q"]["judged@10"] == 1.0


def test_score_ties_are_broken_by_doc_id_descending_in_byte_order():
    gold = golden({"query_id": "q", "judgments": {"d10": 1}})
    # "d9" > "d10" in byte order, so d9 ranks first and the relevant d10 second.
    tied = run({"q": [("d10", 1.0), ("d9", 1.0)]})
    assert values(gold, tied, ["mrr"])["q"]["mrr"] == 0.5


def test_keep_order_ranks_by_the_file_order_instead_of_the_score():
    gold = golden({"query_id": "q", "judgments": {"b": 1}})
    results = run({"q": [("a", 1.0), ("b", 5.0)]})
    assert values(gold, results, ["mrr"])["q"]["mrr"] == 1.0
    assert values(gold, results, ["mrr"], keep_order=True)["q"]["mrr"] == 0.5


def test_depth_keeps_only_the_top_of_each_list():
    gold = golden({"query_id": "q", "judgments": {"c": 1}})
    result = values(gold, run({"q": ranked("a", "b", "c")}), ["mrr", "judged@10"], depth=2)
    assert result["q"] == {"mrr": 0.0, "judged@10": 0.0}


def test_query_missing_from_the_run_scores_zero_and_counts_as_a_miss():
    gold = golden(
        {"query_id": "q", "judgments": {"a": 1}}, {"query_id": "gone", "judgments": {"a": 1}}
    )
    result = values(gold, run({"q": ranked("a")}), list(DEFAULT_METRICS))
    assert result["gone"] == {**{spec: 0.0 for spec in DEFAULT_METRICS}, "miss@10": 1.0}


def test_empty_result_list_scores_zero():
    gold = golden({"query_id": "q", "judgments": {"a": 1}})
    assert values(gold, run({"q": []}), ["mrr@10", "ndcg@10"])["q"] == {
        "mrr@10": 0.0,
        "ndcg@10": 0.0,
    }


def test_query_with_only_non_relevant_judgements_scores_zero_everywhere():
    gold = golden({"query_id": "q", "judgments": {"a": 0, "b": 0}})
    result = values(gold, run({"q": ranked("a", "b")}), ["mrr", "recall@10", "ndcg@10"])
    assert result["q"] == {"mrr": 0.0, "recall@10": 0.0, "ndcg@10": 0.0}


def test_only_answerable_done_queries_are_scored():
    gold = golden(
        {"query_id": "scored", "judgments": {"a": 1}},
        {"query_id": "unanswerable", "answerable": False, "judgments": {"a": 0}},
        {"query_id": "skipped", "status": "skipped"},
        {"query_id": "pending", "status": "pending"},
    )
    results = run({name: ranked("a") for name in ("scored", "unanswerable", "skipped", "pending")})
    assert list(evaluate(gold, results, ["mrr"]).index) == ["scored"]


def test_run_queries_without_labels_are_ignored():
    gold = golden({"query_id": "q", "judgments": {"a": 1}})
    assert list(evaluate(gold, run({"q": ranked("a"), "other": ranked("a")}), ["mrr"]).index) == [
        "q"
    ]


def test_abstain_below_empties_a_query_whose_best_score_is_lower():
    gold = golden(
        {"query_id": "sure", "judgments": {"a": 1}}, {"query_id": "unsure", "judgments": {"a": 1}}
    )
    results = run({"sure": [("a", 0.9)], "unsure": [("a", 0.2)]})
    result = values(gold, results, ["mrr"], abstain_below=0.5)
    assert result == {"sure": {"mrr": 1.0}, "unsure": {"mrr": 0.0}}


def test_k_larger_than_every_list_is_fine():
    gold = golden({"query_id": "q", "judgments": {"b": 1}})
    result = values(gold, run({"q": ranked("a", "b")}), ["mrr@1000", "recall@1000", "ndcg@1000"])
    assert result["q"]["mrr@1000"] == 0.5
    assert result["q"]["recall@1000"] == 1.0


def test_a_run_with_no_rows_at_all_scores_zero():
    gold = golden({"query_id": "q", "judgments": {"a": 1}})
    assert values(gold, run({}), ["mrr@10"]) == {"q": {"mrr@10": 0.0}}


def test_negative_qrels_grades_are_neither_relevant_nor_judged():
    gold = golden({"query_id": "q", "judgments": {"a": -1, "b": 1}})
    result = values(gold, run({"q": ranked("a", "b")}), ["mrr", "judged@2"])
    assert result["q"] == {"mrr": 0.5, "judged@2": 0.5}


def test_ranks_needed_is_one_past_the_largest_cutoff():
    assert ranks_needed(["mrr@10", "ndcg@20"]) == 21
    assert ranks_needed(["mrr@10", "mrr"]) == 11
    assert not needs_first_relevant(["mrr@10", "ndcg@20"])
    assert needs_first_relevant(["mrr@10", "mrr"])


def test_mrr_without_cutoff_ranks_in_full_only_the_queries_it_must():
    gold = golden(
        {"query_id": "early", "judgments": {"d1": 1}},
        {"query_id": "late", "judgments": {"d30": 1}},
        {"query_id": "never", "judgments": {"x": 1}},
    )
    forty = ranked(*(f"d{rank}" for rank in range(1, 41)))
    ranking = {query: forty for query in ("early", "late", "never")}
    result = values(gold, run(ranking), ["mrr", "mrr@10", "hit@1"])
    assert result == {
        "early": {"mrr": 1.0, "mrr@10": 1.0, "hit@1": 1.0},
        "late": {"mrr": 1 / 30, "mrr@10": 0.0, "hit@1": 0.0},
        "never": {"mrr": 0.0, "mrr@10": 0.0, "hit@1": 0.0},
    }
    rows = rank_run(gold, run(ranking), ["mrr", "mrr@10"])
    kept = pd.Series(rows.query_ids[rows.query_index]).value_counts().to_dict()
    assert kept == {"early": 11, "late": 40, "never": 40}


def test_rank_run_orders_rows_best_first_within_each_query():
    gold = golden({"query_id": "q", "judgments": {}})
    ranking = rank_run(gold, run({"q": [("low", 0.1), ("high", 0.9), ("mid", 0.5)]}))
    assert ranking.rank.tolist() == [1, 2, 3]
    # Scores as trec_eval 10.0 compares them: double precision.
    assert ranking.score.tolist() == [0.9, 0.5, 0.1]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("map@10", "unknown metric"),
        ("ndcg", "needs a cutoff"),
        ("mrr@0", "a whole number from 1"),
        ("hit@ten", "a whole number from 1"),
        ("mrr@1000000001", "to 1,000,000,000"),  # past any ranking: refused, no overflow
    ],
)
def test_parse_metric_rejects_bad_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_metric(spec)


def test_unknown_gain_is_rejected():
    gold = golden({"query_id": "q", "judgments": {"a": 1}})
    with pytest.raises(ValueError, match="gain"):
        evaluate(gold, run({"q": ranked("a")}), ["ndcg@10"], gain="log")


def test_row_order_in_the_file_does_not_change_any_value():
    rng = np.random.default_rng(7)
    rows = [
        (f"q{q}", f"d{d}", float(rng.integers(0, 4)))  # few score values: many ties
        for q in range(30)
        for d in rng.choice(60, size=int(rng.integers(1, 25)), replace=False)
    ]
    judgments = {
        f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in range(0, 60, 3)} for q in range(30)
    }
    gold = golden(*({"query_id": q, "judgments": j} for q, j in judgments.items()))
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    grouped = frame.sort_values(["query_id", "score"], ascending=[True, False], kind="stable")
    shuffled = frame.sample(frac=1.0, random_state=3)
    metrics = ["mrr", "hit@1", "precision@5", "recall@10", "ndcg@10", "judged@10"]
    expected = evaluate(gold, run_from_frame(grouped, name="grouped"), metrics, depth=15)
    got = evaluate(gold, run_from_frame(shuffled, name="shuffled"), metrics, depth=15)
    pd.testing.assert_frame_equal(got, expected)


# --- a ranking knows how deep it goes ------------------------------------------------------


def twenty_docs_all_relevant():
    docs = [f"d{rank:02d}" for rank in range(1, 21)]
    return golden({"query_id": "q", "judgments": dict.fromkeys(docs, 1)}), run({"q": ranked(*docs)})


@pytest.mark.parametrize(
    "spec", ["mrr@20", "hit@20", "miss@20", "precision@20", "recall@20", "ndcg@20", "judged@20"]
)
def test_a_ranking_built_for_mrr_at_10_refuses_a_cutoff_it_does_not_hold(spec):
    gold, results = twenty_docs_all_relevant()
    shallow = rank_run(gold, results, ["mrr@10"])
    with pytest.raises(ValueError, match="holds only the top 11 ranks.* cutoff of 20"):
        metric_values(shallow, spec)


def test_a_ranking_built_for_mrr_at_10_refuses_mrr_without_cutoff():
    gold, results = twenty_docs_all_relevant()
    with pytest.raises(ValueError, match="holds only the top 11 ranks.*mrr without a cutoff"):
        metric_values(rank_run(gold, results, ["mrr@10"]), "mrr")


def test_a_ranking_for_every_rank_answers_every_cutoff_as_evaluate_does():
    gold, results = twenty_docs_all_relevant()
    full = rank_run(gold, results)
    assert metric_values(full, "precision@20").tolist() == [1.0]
    assert metric_values(full, "mrr").tolist() == [1.0]
    assert evaluate(gold, results, ["precision@20"])["precision@20"].tolist() == [1.0]


def test_a_ranking_answers_cutoffs_within_the_ranks_it_holds():
    gold, results = twenty_docs_all_relevant()
    shallow = rank_run(gold, results, ["mrr@10"])
    assert metric_values(shallow, "precision@11").tolist() == [1.0]
    assert metric_values(shallow, "recall@5").tolist() == [0.25]


def test_ties_at_infinity_break_by_doc_id_descending_like_any_tie():
    gold = golden(
        {"query_id": "top", "judgments": {"a": 1}}, {"query_id": "bottom", "judgments": {"a": 1}}
    )
    inf = float("inf")
    results = run(
        {"top": [("a", inf), ("b", inf)], "bottom": [("c", 0.0), ("a", -inf), ("b", -inf)]}
    )
    result = values(gold, results, ["mrr"])
    assert result == {"top": {"mrr": 0.5}, "bottom": {"mrr": 1 / 3}}


# --- first-hit labels ----------------------------------------------------------------------


def test_recall_and_ndcg_are_not_measured_on_first_hit_queries():
    gold = golden(
        {"query_id": "fh", "mode": "first_hit", "judgments": {"a": 0, "b": 1}},
        {"query_id": "full", "mode": "full", "judgments": {"a": 0, "b": 1}},
    )
    results = run({"fh": ranked("a", "b"), "full": ranked("a", "b")})
    result = evaluate(gold, results, ["mrr@10", "precision@2", "recall@2", "ndcg@2"])
    assert result.loc["fh", ["mrr@10", "precision@2"]].tolist() == [0.5, 0.5]
    assert result.loc["fh", ["recall@2", "ndcg@2"]].isna().all()
    assert result.loc["full"].tolist() == pytest.approx([0.5, 0.5, 1.0, 1 / math.log2(3)])
