"""One ranking, one figure: where tied scores let a run be read in two orders (its scores
with ties by doc id, as trec_eval; or its own line order), reports give both figures."""

from test_metrics import golden, run

from goldset.eval.metrics import per_query_values, rank_run
from goldset.eval.orders import tied_queries, two_orders
from goldset.eval.report import build_report

METRICS = ("mrr@10", "hit@10")


def tied_run():
    """q1's b and c tie; its own order puts b (relevant) second, trec_eval c (doc id desc)."""
    return run({"q1": [("a", 2.0), ("b", 1.0), ("c", 1.0)], "q2": [("x", 2.0), ("y", 1.0)]})


GOLDEN = ({"query_id": "q1", "judgments": {"b": 1}}, {"query_id": "q2", "judgments": {"x": 1}})


def test_ties_give_both_orders_figures():
    gold, results = golden(*GOLDEN), tied_run()
    ranking = rank_run(gold, results, METRICS)
    assert tied_queries(ranking) == 1
    orders = two_orders(gold, results, ranking, per_query_values(ranking, METRICS))
    assert orders == {
        "tied_queries": 1,
        "score_order": {"mrr@10": (1 / 3 + 1) / 2, "hit@10": 1.0},
        "own_order": {"mrr@10": (1 / 2 + 1) / 2, "hit@10": 1.0},
    }


def test_the_report_read_in_its_own_order_names_the_score_orders_figure_too():
    report = build_report(golden(*GOLDEN), tied_run(), METRICS, bootstrap=0, keep_order=True)
    assert report["metrics"]["mrr@10"]["mean"] == report["orders"]["own_order"]["mrr@10"]
    assert report["orders"]["score_order"]["mrr@10"] == (1 / 3 + 1) / 2


def test_a_tie_at_infinity_is_a_tie():
    # b (relevant) and c tie at +inf or at -inf: trec_eval puts c first, the file b.
    inf = float("inf")
    for scores in ([("b", inf), ("c", inf), ("a", 1.0)], [("a", 1.0), ("b", -inf), ("c", -inf)]):
        gold, results = golden(GOLDEN[0]), run({"q1": scores})
        ranking = rank_run(gold, results, METRICS)
        assert tied_queries(ranking) == 1
        orders = two_orders(gold, results, ranking, per_query_values(ranking, METRICS))
        assert orders["score_order"]["mrr@10"] < orders["own_order"]["mrr@10"]


def test_ties_that_change_nothing_are_not_reported():
    gold = golden({"query_id": "q1", "judgments": {"a": 1}}, GOLDEN[1])  # the hit is above
    report = build_report(gold, tied_run(), METRICS, bootstrap=0)
    assert report["orders"] is None


def test_goldset_eval_prints_both_orders_figures(tmp_path):
    import json

    from click.testing import CliRunner

    from goldset.labeler.cli import cli

    golden_file = tmp_path / "golden.jsonl"
    golden_file.write_text(
        "".join(
            json.dumps({"query": "q", "status": "done", "answerable": True, **record}) + "\n"
            for record in GOLDEN
        )
    )
    run_file = tmp_path / "bm25.trec"
    run_file.write_text("q1 Q0 a 1 2.0 bm25\nq1 Q0 b 2 1.0 bm25\nq1 Q0 c 3 1.0 bm25\n")
    result = CliRunner().invoke(cli, ["eval", "--golden", str(golden_file), "--run", str(run_file)])
    assert result.exit_code == 0, result.output
    assert "ties: 1 queries hold tied scores" in result.output
    assert "mrr@10 0.1667, hit@10 0.5000 by score, ties by doc id (trec_eval)" in result.output
    assert "mrr@10 0.2500, hit@10 0.5000 in the file's own order (--keep-order)" in result.output
