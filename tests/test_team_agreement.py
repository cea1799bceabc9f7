"""Agreement figures of a team project, from the store: the planted project's values worked
out by hand, per pair and per slice, and `goldset agreement`."""

import json

import pytest
from click.testing import CliRunner
from helpers.team import (
    PLANTED_ALPHA,
    PLANTED_KAPPA,
    PLANTED_RANK_AGREEMENT,
    PLANTED_VERDICT_AGREEMENT,
    team_project,
    type_keys,
)

from goldset.labeler.cli import cli
from goldset.labeler.store import Store
from goldset.labeler.team import agreement_report


def test_planted_project_gives_the_hand_worked_figures(planted_store):
    report = agreement_report(planted_store, n_resamples=200)
    overall = report["overall"]
    assert report["queries"] == 6 and report["annotators"] == ["ana", "bob"]
    assert overall["relevance_kappa"]["value"] == pytest.approx(PLANTED_KAPPA)
    assert overall["grade_alpha"]["value"] == pytest.approx(PLANTED_ALPHA)
    assert overall["first_relevant_rank"]["value"] == pytest.approx(PLANTED_RANK_AGREEMENT)
    assert overall["unanswerable_vs_miss"]["value"] == pytest.approx(PLANTED_VERDICT_AGREEMENT)


def test_each_figure_says_how_many_items_and_queries_it_rests_on(planted_store):
    overall = agreement_report(planted_store, n_resamples=200)["overall"]
    counts = {name: (figure["items"], figure["queries"]) for name, figure in overall.items()}
    assert counts == {
        "relevance_kappa": (14, 6),  # docs judged by both
        "grade_alpha": (14, 6),
        "first_relevant_rank": (6, 6),  # (query, pair)
        "unanswerable_vs_miss": (2, 2),  # q3 and q6: neither found a relevant doc
    }
    for figure in overall.values():
        low, high = figure["ci95"]
        assert low <= figure["value"] <= high


def test_figures_per_pair_and_per_slice(planted_store):
    type_keys(planted_store, "cy", "q1", "01")  # a third annotator on one query
    report = agreement_report(planted_store, n_resamples=100)
    pairs = {tuple(pair["annotators"]): pair for pair in report["pairs"]}
    assert set(pairs) == {("ana", "bob"), ("ana", "cy"), ("bob", "cy")}
    assert pairs[("ana", "bob")]["relevance_kappa"]["value"] == pytest.approx(PLANTED_KAPPA)
    assert pairs[("ana", "cy")]["first_relevant_rank"]["value"] == 0.0  # 1 vs 2
    assert pairs[("ana", "cy")]["relevance_kappa"]["items"] == 1
    head, tail = report["slices"]["head"], report["slices"]["tail"]
    # head: q1 (three annotators: three pairs), q2, q3; tail: q4, q5, q6.
    assert head["first_relevant_rank"]["items"] == 5 and tail["first_relevant_rank"]["items"] == 3
    assert tail["first_relevant_rank"]["value"] == pytest.approx(2 / 3)
    assert head["grade_alpha"]["queries"] == 3


def test_with_no_overlap_every_figure_is_undefined(tmp_path):
    with Store(team_project(tmp_path / "solo.db", with_passwords=False)) as store:
        type_keys(store, "ana", "q1", "1")
        report = agreement_report(store, n_resamples=10)
    assert report["queries"] == 0 and report["pairs"] == [] and report["slices"] == {}
    assert {figure["value"] for figure in report["overall"].values()} == {None}


def test_one_category_only_gives_none_with_full_plain_agreement(tmp_path):
    with Store(team_project(tmp_path / "same.db", with_passwords=False)) as store:
        for name in ("ana", "bob"):
            type_keys(store, name, "q1", "1")
            type_keys(store, name, "q4", "1")
        kappa = agreement_report(store, n_resamples=10)["overall"]["relevance_kappa"]
    assert kappa["value"] is None and kappa["observed_agreement"] == 1.0


def test_cli_agreement_prints_a_table_and_json(planted_store):
    db = str(planted_store.path)
    text = CliRunner().invoke(cli, ["agreement", "--db", db, "--bootstrap", "50"])
    assert text.exit_code == 0, text.output
    assert "6 doubly judged queries" in text.output
    assert "ana & bob" in text.output and "slice tail" in text.output
    assert f"{PLANTED_KAPPA:.3f}" in text.output
    data = json.loads(CliRunner().invoke(cli, ["agreement", "--db", db, "--json"]).output)
    assert data["overall"]["relevance_kappa"]["statistic"] == "cohen_kappa"
    assert data["bootstrap"] == {"resamples": 1000, "seed": 0}


def test_cli_agreement_without_overlap_says_what_to_do(tmp_path):
    db = str(team_project(tmp_path / "empty.db", with_passwords=False))
    result = CliRunner().invoke(cli, ["agreement", "--db", db])
    assert result.exit_code == 0 and "goldset assign --overlap" in result.output
