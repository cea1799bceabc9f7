"""The planner's savings with a machine judge (issue 28): for a target MRR@10 CI, the human
queries and hours needed without the judge and with it, n_PPI = n_human × (1 − ρ²), ρ the
judge–human correlation of per-query values measured on the labelled random sample.

The demo set (50 queries, slices head and tail) sampled at random; the first 20 drawn queries
are labelled in first-hit mode, each query's first relevant doc at rank 1 to 4 (so MRR@10
varies). A judge that copies the humans has ρ = 1; one that calls only the last candidate
relevant tells nothing.
"""

from __future__ import annotations

import math

import pytest
from helpers.projects import opened_by_the_app
from test_live import open_page, table_with

from goldset.eval.cost import judge_human_correlation, queries_with_judge
from goldset.labeler import judges, live
from goldset.labeler.store import DEMO_TASKS, Store

PLANNER = "../labeler/views/planner.py"
JUDGE = "machine:rule"


def machine_label(store: Store, query_id: str, doc_id: str, grade: int) -> None:
    pair = judges.Pair(query_id, doc_id, "", "", "")
    call = judges.Call("ok", 0.2, 30, 6, grade=grade, reason="rule")
    context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
    store.record_judge_calls(judges.call_rows(pair, [call], context))


def label_sample(store: Store, copying: bool, labelled: int = 20) -> None:
    """Label the first drawn queries (first relevant at rank 1..4), and let the judge grade
    every candidate of those queries: as the humans did, or only the last one relevant."""
    store.draw_sample("random", seed=7)
    for number, query_id in enumerate(store.human_sample()["query_id"][:labelled]):
        candidates = [c["doc_id"] for c in store.candidates(query_id)]
        first = number % 4
        for rank, doc_id in enumerate(candidates[: first + 1]):
            store.judge(query_id, doc_id, int(rank == first), "ana", seconds=30.0)
        for rank, doc_id in enumerate(candidates):
            relevant = rank == first if copying else rank == len(candidates) - 1
            machine_label(store, query_id, doc_id, int(relevant))


def savings(store: Store):
    golden = live.golden_set(store)
    return live.judge_savings(
        golden,
        live.project_run(store),
        store.machine_judgments_frame(JUDGE),
        store.human_sample(),
        live.cost_summary(store, 60.0),
    ).set_index("slice")


def test_the_formula_n_ppi_is_n_human_times_one_minus_rho_squared():
    assert queries_with_judge(400, 0.8) == 144
    assert queries_with_judge(400, 0.0) == 400
    assert queries_with_judge(400, math.nan) == 400  # not measured: no saving claimed
    assert queries_with_judge(400, 1.0) == 1
    with pytest.raises(ValueError):
        queries_with_judge(400, 1.5)


def test_the_correlation_is_pearsons_and_unknown_when_a_side_is_constant():
    assert judge_human_correlation([0, 0.5, 1], [0, 0.5, 1]) == pytest.approx(1.0)
    assert judge_human_correlation([0, 0.5, 1], [1, 0.5, 0]) == pytest.approx(-1.0)
    assert math.isnan(judge_human_correlation([0, 0.5, 1], [1, 1, 1]))
    assert math.isnan(judge_human_correlation([0, 1], [0, 1]))


def test_a_judge_that_agrees_with_the_humans_saves_most_of_the_human_queries(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        label_sample(store, copying=True)
        table = savings(store)
    everything = table.loc["all"]
    assert everything["sampled"] == 20
    assert everything["correlation"] == pytest.approx(1.0)
    assert everything["with_judge"] == 1 < everything["human_queries"]
    assert everything["queries_saved"] == everything["human_queries"] - 1
    assert everything["hours_saved"] == pytest.approx(
        everything["hours_without"] - everything["hours_with"]
    )
    assert everything["hours_without"] > 0
    assert set(table.index) == {"all", "head", "tail"}
    assert table.loc["head", "sampled"] + table.loc["tail", "sampled"] == 20


def test_a_judge_that_tells_nothing_saves_nothing(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        label_sample(store, copying=False)
        everything = savings(store).loc["all"]
    assert math.isnan(everything["correlation"])  # the judge gives every query 0.1
    assert everything["with_judge"] == everything["human_queries"]
    assert everything["queries_saved"] == 0


def test_the_planner_shows_the_savings_with_a_sample_and_refuses_without(tmp_path, monkeypatch):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        label_sample(store, copying=True)
        store.draw_sample("off")  # no sample yet: no figure
    with opened_by_the_app(tmp_path / "project.db", monkeypatch) as path:
        at = open_page(PLANNER)
        assert not at.exception
        assert any("without a random human sample" in c.value for c in at.caption)
        with Store(path) as store:
            store.draw_sample("random", seed=7)
        at = open_page(PLANNER)
        assert not at.exception
        table = table_with(at, "with_judge").set_index("slice")
        assert table.loc["all", "with_judge"] == 1 < table.loc["all", "human_queries"]
