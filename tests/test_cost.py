"""The cost model (eval/cost.py) and ``goldset cost``."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from click.testing import CliRunner

from goldset.eval.cost import (
    Cost,
    compare_plans,
    expected_first_hit_depth,
    labelling_cost,
    measured_cost,
    pool_depth_per_query,
)
from goldset.labeler.cli import cli

# --- planned cost --------------------------------------------------------------------------


def test_labelling_cost_of_the_fields_worked_example():
    cost = labelling_cost(queries=400, docs_per_query=4, seconds_per_judgement=20, hourly_rate=60)
    assert cost.seconds == 32_000
    assert round(cost.hours, 2) == 8.89
    assert round(cost.dollars, 2) == 533.33


def test_labelling_cost_scales_with_annotators_per_query():
    once = labelling_cost(400, 4, 20, 60)
    assert labelling_cost(400, 4, 20, 60, annotators_per_query=1.5).dollars == 1.5 * once.dollars


@pytest.mark.parametrize(
    "arguments",
    [
        (-1, 4, 20, 60),
        (400, -4, 20, 60),
        (400, 4, -20, 60),
        (400, 4, 20, -60),
        (400, 4, math.nan, 60),
    ],
)
def test_labelling_cost_rejects_negative_figures(arguments):
    with pytest.raises(ValueError, match="non-negative"):
        labelling_cost(*arguments)


def test_labelling_cost_needs_at_least_one_annotator():
    with pytest.raises(ValueError, match="at least 1"):
        labelling_cost(400, 4, 20, 60, annotators_per_query=0.5)


def test_first_hit_depth_counts_judgements_down_to_the_first_relevant_doc():
    # first relevant at ranks 1, 3, none, 2: 1 + 3 + 10 + 2 judgements
    assert expected_first_hit_depth([1, 3, math.nan, 2], k=10) == 4.0


def test_first_hit_depth_counts_k_for_a_relevant_doc_beyond_k():
    assert expected_first_hit_depth([1, 25], k=10) == 5.5


def test_first_hit_depth_counts_k_for_unanswerable_queries():
    # 80% answerable at mean depth 2, 20% unanswerable judged to depth 10
    assert expected_first_hit_depth([1, 3], k=10, answerable_share=0.8) == pytest.approx(3.6)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"first_relevant_ranks": [], "k": 10}, "non-empty"),
        ({"first_relevant_ranks": [0, 2], "k": 10}, "below 1"),
        ({"first_relevant_ranks": [1], "k": 0}, "k must"),
        ({"first_relevant_ranks": [1], "k": 10, "answerable_share": 1.2}, "answerable_share"),
    ],
)
def test_first_hit_depth_rejects_bad_input(arguments, message):
    with pytest.raises(ValueError, match=message):
        expected_first_hit_depth(**arguments)


def test_compare_plans_prices_first_hit_against_full_depth():
    plans = compare_plans(400, 10, [1, 1, 2, math.nan], seconds_per_judgement=20, hourly_rate=60)
    assert (plans.first_hit_depth, plans.full_depth) == (3.5, 10.0)
    assert plans.first_hit == labelling_cost(400, 3.5, 20, 60)
    assert plans.full == labelling_cost(400, 10, 20, 60)


def test_compare_plans_full_depth_can_be_a_pool():
    plans = compare_plans(400, 10, [1], 20, 60, full_depth=17.5)
    assert plans.full.seconds == 400 * 17.5 * 20


# --- pooling several runs ------------------------------------------------------------------


def run_frame(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def test_pool_depth_counts_each_shared_doc_once():
    first = run_frame([("q1", "a", 3), ("q1", "b", 2), ("q1", "c", 1), ("q2", "x", 1)])
    second = run_frame([("q1", "b", 9), ("q1", "d", 8), ("q2", "x", 5), ("q2", "y", 4)])
    # q1: {a, b} ∪ {b, d} = 3 docs; q2: {x} ∪ {x, y} = 2 docs
    assert pool_depth_per_query([first, second], depth=2) == 2.5


def test_pool_depth_of_identical_runs_is_the_depth():
    run = run_frame([("q1", doc, 10 - rank) for rank, doc in enumerate("abcdef")])
    assert pool_depth_per_query([run, run, run], depth=4) == 4.0


def test_pool_depth_ranks_by_score_then_doc_id_descending():
    # b and c tie: trec_eval puts c first, so the top 2 of the first run are {a, c}
    first = run_frame([("q1", "a", 3), ("q1", "b", 2), ("q1", "c", 2)])
    second = run_frame([("q1", "a", 1), ("q1", "c", 0.5)])
    assert pool_depth_per_query([first, second], depth=2) == 2.0
    assert pool_depth_per_query([first, second], depth=2, keep_order=True) == 3.0


@pytest.mark.parametrize(
    ("runs", "depth", "message"),
    [
        ([], 10, "at least one run"),
        ([run_frame([("q1", "a", 1.0)])], 0, "depth"),
        ([pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"]})], 10, "score"),
        ([run_frame([])], 10, "no results"),
    ],
)
def test_pool_depth_rejects_bad_input(runs, depth, message):
    with pytest.raises(ValueError, match=message):
        pool_depth_per_query(runs, depth)


# --- measured cost -------------------------------------------------------------------------


def test_measured_cost_prices_the_remaining_queries_at_the_mean_seconds_of_a_done_query():
    cost = measured_cost(
        active_seconds=[10, 20, 30, 1000, 40],  # every action; the last one's query is open
        seconds_per_query=[60, 1000],  # the two done passes: 10 + 20 + 30, then one long read
        judgements_per_query=[3, 4],
        queries_remaining=10,
        hourly_rate=60,
    )
    assert (cost.seconds_per_query, cost.median_seconds_per_query) == (530.0, 530.0)
    assert (cost.judgements_per_query, cost.seconds_per_judgement) == (3.5, 1060 / 7)
    assert cost.spent == Cost.of_seconds(1100, 60)
    # 10 queries × 530 s, less the 40 s already spent on the open one
    assert cost.remaining == Cost.of_seconds(10 * 530 - 40, 60)
    assert cost.total.dollars == pytest.approx(cost.spent.dollars + cost.remaining.dollars)


def test_measured_cost_prices_with_the_mean_not_the_median():
    cost = measured_cost([10, 10, 120], [10, 10, 120], [1, 1, 1], 3, 3600)
    assert cost.median_seconds_per_query == 10.0
    assert cost.remaining.seconds == 3 * 140 / 3  # count × mean: the break's time is counted


def test_measured_cost_remaining_counts_each_annotator():
    single = measured_cost([20], [20], [4], 100, 60)
    double = measured_cost([20], [20], [4], 100, 60, annotators_per_query=2)
    assert double.remaining.seconds == 2 * single.remaining.seconds


def test_measured_cost_as_dict_is_the_json_shape_of_the_cli():
    cost = measured_cost([20, 20], [40], [2], 1, 36).as_dict()
    assert cost == {
        "spent": {"seconds": 40.0, "hours": 40 / 3600, "dollars": 0.4},
        "remaining": {"seconds": 40.0, "hours": 40 / 3600, "dollars": 0.4},
        "total": {"seconds": 80.0, "hours": 80 / 3600, "dollars": 0.8},
        "seconds_per_query": 40.0,
        "median_seconds_per_query": 40.0,
        "seconds_per_judgement": 20.0,
        "judgements_per_query": 2.0,
    }


def test_measured_cost_before_any_query_is_done_leaves_the_unknown_as_none():
    cost = measured_cost([5.0], [], [], queries_remaining=50, hourly_rate=60).as_dict()
    assert cost["spent"]["seconds"] == 5.0
    assert cost["remaining"]["dollars"] is None
    assert cost["seconds_per_query"] is None and cost["seconds_per_judgement"] is None
    assert json.loads(json.dumps(cost)) == cost  # valid JSON, no NaN


def test_measured_cost_of_queries_that_read_no_doc_has_no_price_per_judgement():
    cost = measured_cost([30], [30], [0], 1, 60)  # a query without candidates, said U
    assert cost.remaining.seconds == 30.0
    assert math.isnan(cost.seconds_per_judgement)


def test_measured_cost_with_nothing_remaining_costs_nothing_more():
    assert measured_cost([], [], [], queries_remaining=0, hourly_rate=60).remaining.seconds == 0.0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (([-1.0], [1], [2], 1, 60), "active_seconds"),
        (([1.0], [-1], [2], 1, 60), "seconds_per_query"),
        (([1.0], [1], [-2], 1, 60), "judgements_per_query"),
        (([1.0], [1], [2, 3], 1, 60), "as long"),
        (([1.0], [1], [2], -1, 60), "queries_remaining"),
        (([1.0], [1], [2], 1, -60), "hourly_rate"),
    ],
)
def test_measured_cost_rejects_negative_figures(arguments, message):
    with pytest.raises(ValueError, match=message):
        measured_cost(*arguments)


# --- goldset cost --------------------------------------------------------------------------

WORKED_EXAMPLE = ["cost", "--queries", "400", "--docs-per-query", "4", "--seconds", "20"]


def test_cli_cost_json_gives_unrounded_figures():
    result = CliRunner().invoke(cli, [*WORKED_EXAMPLE, "--rate", "60", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures == {"seconds": 32000.0, "hours": 32000 / 3600, "dollars": 32000 / 60}


def test_cli_cost_prints_a_readable_line():
    result = CliRunner().invoke(cli, [*WORKED_EXAMPLE, "--rate", "60", "--annotators", "2"])
    assert result.exit_code == 0, result.output
    assert result.output == (
        "400 queries × 4 docs × 20 s × 2 annotators = 64,000 s = 17.78 h = $1,066.67 at $60/h\n"
    )


def test_cli_cost_names_the_missing_options():
    result = CliRunner().invoke(cli, ["cost", "--queries", "400", "--seconds", "20"])
    assert result.exit_code == 2
    assert "missing --docs-per-query, --rate" in result.output


def test_cli_cost_rejects_a_negative_count():
    result = CliRunner().invoke(cli, [*WORKED_EXAMPLE, "--rate", "-60"])
    assert result.exit_code == 2
    assert "--rate" in result.output
