"""The cost planner: the page (AppTest) and ``goldset cost --db`` give the same measured
figures; a plan compares first-hit labelling, full depth k and the runs' real pool."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest
from test_live import open_page, table_with

from goldset.eval.cost import expected_first_hit_depth, pool_depth_per_query
from goldset.eval.readers import read_run
from goldset.labeler import live
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

PLANNER = "../labeler/views/planner.py"


@pytest.fixture
def pooled(tmp_path, open_in_app):
    """A project of three queries pooled from two runs that share some of their top docs;
    nothing labelled yet. Returns the database and the two run files."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{n}", "text": "t"}) + "\n" for n in range(30)))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"_id": f"q{n}", "text": "q"}) + "\n" for n in range(3)))
    runs = []
    for name, offset in (("bm25", 0), ("dense", 4)):  # dense's top 10 shares 6 docs with bm25
        path = tmp_path / f"{name}.trec"
        lines = [
            f"q{q} Q0 d{offset + rank + q} {rank} {20 - rank} {name}"
            for q in range(3)
            for rank in range(12)
        ]
        path.write_text("\n".join(lines) + "\n")
        runs.append(path)
    with Store(tmp_path / "pooled.db") as store:
        store.pool(corpus, queries, runs, 10)
    return open_in_app(tmp_path / "pooled.db"), runs


def goldset(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def open_planner(rate: float | None = None) -> AppTest:
    at = open_page(PLANNER)
    if rate is not None:
        at.sidebar.number_input[0].set_value(rate).run()
    assert not at.exception, at.exception
    return at


def test_cost_page_figures_equal_goldset_cost_db(labelled_demo_app):
    measured = json.loads(goldset("cost", "--db", str(labelled_demo_app), "--rate", "50", "--json"))
    at = open_planner(rate=50)
    tiles = {metric.label: metric.value for metric in at.metric}
    for name in ("spent", "remaining", "total"):
        assert tiles[name] == f"${measured[name]['dollars']:,.2f}"
    durations = [caption.value for caption in at.caption if caption.value.endswith(" min")]
    assert durations == [
        live.duration_text(measured[name]["hours"]) for name in ("spent", "remaining", "total")
    ]
    assert durations[0] == f"≈ {round(measured['spent']['hours'] * 60)} min"  # under an hour
    shown = table_with(at, "annotator")
    pd.testing.assert_frame_equal(
        shown, pd.DataFrame(measured["annotators"]), check_dtype=False, check_exact=False
    )
    text = next(caption.value for caption in at.caption if "per done query" in caption.value)
    assert (
        f"mean {measured['seconds_per_query']:.1f} s per done query, "
        f"median {measured['median_seconds_per_query']:.1f} s" in text
    )
    assert f"mean {measured['judgements_per_query']:.2f} docs read per done query" in text


def test_goldset_cost_db_measures_spent_remaining_and_total(labelled_demo_app):
    measured = json.loads(goldset("cost", "--db", str(labelled_demo_app), "--json"))
    assert measured["rate"] == 60 and measured["queries_remaining"] == 44
    assert (measured["seconds_per_query"], measured["median_seconds_per_query"]) == (15.0, 9.5)
    assert measured["total"]["seconds"] == pytest.approx(
        measured["spent"]["seconds"] + measured["remaining"]["seconds"]
    )
    text = goldset("cost", "--db", str(labelled_demo_app), "--rate", "60")
    assert "mean 15.0 s per done query, median 9.5 s" in text
    spent = measured["spent"]
    assert f"spent     {live.duration_text(spent['hours']):>10}  ${spent['dollars']:,.2f}" in text
    mixed = CliRunner().invoke(cli, ["cost", "--db", str(labelled_demo_app), "--seconds", "20"])
    assert mixed.exit_code == 2 and "leave out --seconds" in mixed.output


def test_plan_compares_first_hit_full_depth_and_the_real_pool(pooled):
    db, runs = pooled
    at = open_planner()
    sizes, plan = table_with(at, "pooled_per_query"), table_with(at, "plan")
    # The pooled runs hold their top 10 only: depth 20 would repeat depth 10's pool size.
    assert sizes["depth"].tolist() == [5, 10]
    assert any("hold only their top 10" in caption.value for caption in at.caption)

    real = pool_depth_per_query([read_run(run).results for run in runs], 10)
    assert sizes.set_index("depth").loc[10, ["depth_x_systems", "pooled_per_query"]].tolist() == [
        20,
        real,
    ]
    assert real == 14  # 10 + the 4 docs of dense's top 10 that bm25's lacks
    # Nothing labelled yet: the assumed ranks "1, 3, none, 2", 85 % answerable.
    first_hit = expected_first_hit_depth([1, 3, float("nan"), 2], 10, answerable_share=0.85)
    assert plan["docs_per_query"].tolist() == [pytest.approx(first_hit), 10, real]
    assert plan["hours"].iloc[2] == pytest.approx(3 * real * 20 / 3600)  # 3 queries at 20 s


def test_first_hit_plan_uses_the_measured_judged_depth_once_queries_are_done(labelled_demo_app):
    measured = json.loads(goldset("cost", "--db", str(labelled_demo_app), "--json"))
    plan = table_with(open_planner(), "plan").set_index("plan")
    depth = measured["judgements_per_query"]
    assert plan.loc["first hit, top 10 (measured depth)", "docs_per_query"] == depth
    with Store(labelled_demo_app) as store:
        queries = store.status()["queries"]  # the plan's default: every query of the project
    assert plan.loc["first hit, top 10 (measured depth)", "hours"] == pytest.approx(
        queries
        * depth
        * measured["seconds_per_judgement"]
        * measured["annotators_per_query"]
        / 3600
    )


def test_a_project_whose_judgements_took_no_time_plans_with_the_assumed_seconds(pooled):
    db, _ = pooled
    with Store(db) as store:  # judgements recorded with 0 active seconds (e.g. replayed)
        for doc in store.candidates("q0")[:3]:
            store.judge("q0", doc["doc_id"], 0, "local", seconds=0.0)
    at = open_planner()  # asserts no exception: the measured 0 s is outside the input's range
    seconds = next(n for n in at.number_input if n.label == "Seconds per judgement")
    assert seconds.value > 0
