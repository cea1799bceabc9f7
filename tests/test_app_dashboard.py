"""The dashboard page, run by AppTest on the demo project with the MRR worked example labelled
(see ``labelled_demo`` in tests/helpers/projects.py): its figures are ``goldset eval --db``'s."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest
from test_app_planner import pooled  # noqa: F401 - the pooled project, a fixture
from test_live import open_page, table_with

from goldset.labeler import live
from goldset.labeler.auth import hash_password
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

APP = "../labeler/app.py"
DASHBOARD = "../labeler/views/dashboard.py"


def goldset_eval(db) -> dict:
    result = CliRunner().invoke(cli, ["eval", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_dashboard_shows_one_row_per_slice_with_goldset_eval_db_figures(labelled_demo_app):
    at = open_page(DASHBOARD)
    assert not at.exception, at.exception
    shown = table_with(at, "Unanswerable").set_index("Slice")
    report = goldset_eval(labelled_demo_app)

    assert list(shown.index) == ["all", "head", "tail"]
    assert list(shown.columns) == [
        "Answerable queries", "MRR@10", "hit@1", "hit@10", "miss rate@10",
        "Unanswerable", "Judged@10",
    ]  # fmt: skip
    groups = {"all": report["metrics"]}
    groups |= {name: entry["metrics"] for name, entry in report["slices"].items()}
    for slice_name, metrics in groups.items():
        for metric, column in (
            ("mrr@10", "MRR@10"),
            ("hit@1", "hit@1"),
            ("miss@10", "miss rate@10"),
        ):
            assert shown.loc[slice_name, column] == live.figure_text(metrics[metric], metric)
        assert shown.loc[slice_name, "Judged@10"] == f"{metrics['judged@10']['mean']:.1%}"
    low, high = report["metrics"]["mrr@10"]["ci95"]
    assert shown.loc["all", "MRR@10"] == f"0.458 [{low:.3f}, {high:.3f}]"
    assert shown.loc["all", "miss rate@10"].startswith("25.0% [")
    assert shown.loc["all", "Unanswerable"].startswith("33.3% [")
    tiles = {metric.label: metric.value for metric in at.metric}
    assert tiles["MRR@10"] == f"{report['metrics']['mrr@10']['mean']:.3f}" == "0.458"
    assert tiles["miss rate"] == "25.0%"


def test_dashboard_alerts_on_misses_and_the_unanswerable_share(labelled_demo_app):
    alerts = [warning.value for warning in open_page(DASHBOARD).warning]
    assert any("first-stage recall problem" in alert for alert in alerts)
    assert any("Unanswerable share 33.3% (2 of 6 done queries)" in alert for alert in alerts)


def test_worst_queries_link_to_the_label_page_which_opens_that_query(labelled_demo_app):
    worst = table_with(open_page(DASHBOARD), "link")
    assert worst["link"].iloc[0] == "./?query=q03"  # the miss comes first

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["query"] = "q03"
    at.run()
    heading = next(h.proto.body for h in at.get("html") if "gs-query-text" in h.proto.body)
    assert "deprecated v1 auth client" in heading
    assert "query" not in at.query_params  # a reload resumes as usual


def test_coverage_and_how_many_more_queries_are_shown(labelled_demo_app):
    at = open_page(DASHBOARD)
    coverage = table_with(at, "done_share").set_index("slice")
    assert coverage.loc["all", ["queries", "done", "skipped"]].tolist() == [50, 6, 1]
    assert coverage.loc["all", "done_share"] == pytest.approx(12.0)  # percent, as shown
    needed = next(
        text.value for text in at.markdown if "answerable queries are needed" in text.value
    )
    assert "±0.050" in needed and "queries to label" in needed


def test_dashboard_is_for_reviewers_and_downloads_for_admins(labelled_demo_app):
    with Store(labelled_demo_app) as store:
        for name, role in (("ana", "annotator"), ("rita", "reviewer"), ("alan", "admin")):
            store.add_annotator(name, role=role, password_hash=hash_password("password"))
    annotator = open_page(DASHBOARD, user="ana")
    assert annotator.error and not annotator.dataframe
    reviewer = open_page(DASHBOARD, user="rita")
    assert reviewer.dataframe and not reviewer.get("download_button")
    admin = open_page(DASHBOARD, user="alan")
    labels = [button.proto.label for button in admin.get("download_button")]
    assert labels == ["Golden set (JSONL)", "Report (JSON)", "Report (CSV)"]
    assert "TREC qrels" in [button.label for button in admin.button]  # built on the click


def test_a_pooled_projects_runs_are_named_for_what_they_are(pooled):  # noqa: F811
    at = open_page(DASHBOARD)
    assert not at.exception, at.exception
    assert at.sidebar.selectbox[0].options == [
        "the pool of 2 runs (fused order)",
        "pooled run bm25",
        "pooled run dense",
    ]
    assert open_page("../labeler/views/compare.py").multiselect[0].options == [
        "candidates (the pool of 2 runs, fused order)",
        "bm25 (pooled run)",
        "dense (pooled run)",
    ]


def test_an_imported_projects_run_is_its_candidate_lists(labelled_demo_app):
    assert open_page(DASHBOARD).sidebar.selectbox[0].options == ["candidate lists (imported)"]
