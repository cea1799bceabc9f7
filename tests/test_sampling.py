"""Sampled labelling (issue 28): the humans' queue follows a drawn sample — a seeded random
order stratified by slice, or queries drawn where a machine judge is unsure — whose inclusion
probabilities are recorded, and what annotators skip or reopen never changes who is in it.

The demo set: 50 queries, 26 in slice ``head`` and 24 in ``tail``.
"""

import numpy as np
import pytest
from click.testing import CliRunner
from helpers.projects import opened_by_the_app
from test_live import open_page, table_with
from test_planner_ppi import label_sample

from goldset.labeler import judges
from goldset.labeler.cli import cli
from goldset.labeler.store import DEMO_TASKS, Store
from goldset.labeler.store.sampling import FLOOR_SHARE, active_probabilities

JUDGE = "machine:rule"
DASHBOARD = "../labeler/views/dashboard.py"
QUERY_IDS = [f"q{n:02}" for n in range(1, 51)]  # the demo set's, in import order


def finish(store: Store, query_id: str, annotator: str = "ana") -> None:
    """Label a query done: an unanswerable verdict completes it."""
    store.mark(query_id, "unanswerable", annotator)


def machine_label(store: Store, query_id: str, doc_id: str, grade: int) -> None:
    pair = judges.Pair(query_id, doc_id, "", "", "")
    call = judges.Call("ok", 0.2, 30, 6, grade=grade, reason="rule")
    context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
    store.record_judge_calls(judges.call_rows(pair, [call], context))


def test_a_project_is_not_sampled_until_a_sample_is_drawn(demo_store):
    assert demo_store.sampling()["mode"] == "off"
    assert demo_store.human_sample().empty
    assert demo_store.next_query("ana") == "q01"


def test_the_random_order_holds_every_slice_in_its_share_of_any_prefix(demo_store):
    demo_store.draw_sample("random", seed=7)
    sample = demo_store.human_sample()
    assert sorted(sample["query_id"]) == QUERY_IDS
    assert list(sample["rank"]) == list(range(1, 51))
    assert (sample["probability"] == 1.0).all()  # every query is drawn: a census, in order
    heads = (sample["slice"] == "head").cumsum().to_numpy()
    expected = np.arange(1, 51) * 26 / 50
    assert np.abs(heads - expected).max() <= 1  # proportional allocation, within one query
    assert list(sample["query_id"])[:10] != [f"q{n:02}" for n in range(1, 11)]  # shuffled


def test_the_same_seed_draws_the_same_order_and_another_seed_another(demo_store):
    first = list(demo_store.draw_sample("random", seed=7) and demo_store.human_sample()["query_id"])
    again = list(demo_store.draw_sample("random", seed=7) and demo_store.human_sample()["query_id"])
    other = list(demo_store.draw_sample("random", seed=8) and demo_store.human_sample()["query_id"])
    assert first == again and first != other


def test_a_budget_draws_each_slice_in_proportion_with_its_inclusion_probability(demo_store):
    settings = demo_store.draw_sample("random", seed=3, budget=10)
    sample = demo_store.human_sample()
    assert settings["drawn"] == 10 and settings["budget"] == 10
    per_slice = sample.groupby("slice")["query_id"].count().to_dict()
    assert per_slice in ({"head": 5, "tail": 5}, {"head": 6, "tail": 4})
    for name, size in (("head", 26), ("tail", 24)):
        drawn = sample[sample["slice"] == name]
        assert (drawn["probability"] == per_slice[name] / size).all()


def test_the_queue_offers_the_drawn_order(demo_store):
    demo_store.draw_sample("random", seed=7)
    order = list(demo_store.human_sample()["query_id"])
    assert demo_store.next_query("ana") == order[0]
    finish(demo_store, order[0])
    assert demo_store.next_query("ana") == order[1]
    assert demo_store.next_query("ana", after=order[1]) == order[2]
    assert demo_store.next_query("bob") == order[1]  # the shared queue: done by ana, not offered


def test_the_queue_leaves_the_sample_only_when_every_drawn_query_is_labelled(demo_store):
    demo_store.draw_sample("random", seed=7, budget=2)
    order = list(demo_store.human_sample()["query_id"])
    for query_id in order:
        finish(demo_store, query_id)
    assert demo_store.next_query("ana") == next(q for q in QUERY_IDS if q not in order)


def test_a_skipped_drawn_query_stays_in_the_sample_as_missing_and_comes_back_first(demo_store):
    demo_store.draw_sample("random", seed=7, budget=3)
    order = list(demo_store.human_sample()["query_id"])
    demo_store.mark(order[0], "skip", "ana")
    finish(demo_store, order[1])
    finish(demo_store, order[2])
    sample = demo_store.human_sample()
    assert list(sample["query_id"]) == order  # membership unchanged
    assert not sample["labelled"].any()  # nothing counted behind a missing query
    settings = demo_store.sampling()
    assert (settings["labelled"], settings["missing"], settings["waiting"]) == (0, 1, 2)
    assert demo_store.next_query("ana") == order[0]  # offered again before the rest of the set
    finish(demo_store, order[0])
    assert demo_store.sampling()["labelled"] == 3 and demo_store.human_sample()["labelled"].all()


def test_reopening_a_labelled_query_changes_its_label_not_its_membership(demo_store):
    demo_store.draw_sample("random", seed=7, budget=3)
    before = demo_store.human_sample()
    first = before["query_id"][0]
    finish(demo_store, first)
    assert demo_store.human_sample()["labelled"][0]
    demo_store.undo("ana", first)  # reopened
    after = demo_store.human_sample()
    assert after[["query_id", "probability", "rank"]].equals(
        before[["query_id", "probability", "rank"]]
    )
    assert not after["labelled"][0]
    assert demo_store.next_query("ana") == first


def test_an_assigned_annotator_gets_their_queries_in_drawn_order(demo_store):
    demo_store.draw_sample("random", seed=7)
    order = list(demo_store.human_sample()["query_id"])
    mine = sorted(order[5:9])  # assigned in import order
    demo_store.assign("ana", mine)
    assert demo_store.next_query("ana") == order[5]
    finish(demo_store, order[5])
    assert demo_store.next_query("ana") == order[6]


def test_active_probabilities_rise_with_uncertainty_and_are_floored():
    uncertainty = np.array([0.0, 0.0, 0.5, 1.0, 2.0])
    probabilities = active_probabilities(uncertainty, budget=2)
    assert np.all(np.diff(probabilities) >= 0)
    assert probabilities.min() == pytest.approx(FLOOR_SHARE * 2 / 5)
    assert probabilities.max() <= 1.0
    assert active_probabilities(np.zeros(4), budget=1) == pytest.approx([0.25] * 4)


def test_an_active_sample_draws_the_queries_the_judge_is_unsure_of_more_often(demo_store):
    # The judge labels every candidate of q01..q25 far from the edge of relevance (grade 3
    # or 0, threshold 1) and nothing of q26..q50: it is sure of the first half only.
    for query_id in QUERY_IDS[:25]:
        for number, candidate in enumerate(demo_store.candidates(query_id)):
            machine_label(demo_store, query_id, candidate["doc_id"], 3 * (number % 2))
    demo_store.draw_sample("active", seed=1, budget=10, judge=JUDGE)
    sample = demo_store.human_sample()
    sure = sample["query_id"] <= "q25"
    assert sample.loc[sure, "probability"].to_numpy() == pytest.approx(FLOOR_SHARE * 10 / 50)
    assert (sample.loc[~sure, "probability"] > 0.3).all()
    assert (~sure).sum() > sure.sum()
    assert list(sample["rank"]) == list(range(1, len(sample) + 1))
    assert demo_store.sampling()["judge"] == JUDGE


def test_an_active_sample_needs_a_judge_that_labelled_something(demo_store):
    with pytest.raises(ValueError, match="labelled nothing"):
        demo_store.draw_sample("active", seed=1, budget=10, judge=JUDGE)
    with pytest.raises(ValueError, match="judge and a budget"):
        demo_store.draw_sample("active", seed=1)


def test_sampling_off_gives_back_the_ordinary_queue(demo_store):
    demo_store.draw_sample("random", seed=7)
    demo_store.draw_sample("off")
    assert demo_store.human_sample().empty and demo_store.sampling()["mode"] == "off"
    assert demo_store.next_query("ana") == "q01"


def test_the_sample_command_draws_and_reports_progress(tmp_path):
    db = str(tmp_path / "project.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["import", DEMO_TASKS.as_posix(), "--db", db]).exit_code == 0
    drawn = runner.invoke(cli, ["sample", "--db", db, "--random", "--seed", "7"])
    assert drawn.exit_code == 0, drawn.output
    assert "random seed=7: 0 of 50 drawn queries labelled, 0 missing" in drawn.output
    with Store(db) as store:
        first = store.human_sample()["query_id"][0]
        assert store.next_query("ana") == first
    shown = runner.invoke(cli, ["sample", "--db", db, "--json"])
    assert '"mode": "random"' in shown.output and '"drawn": 50' in shown.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--active", "--budget", "5"], "name the judge with --judge"),
        (["--random", "--judge", "rule"], "--judge goes with --active"),
        (["--active", "--judge", "rule", "--budget", "5"], "has labelled nothing"),
        (["--random", "--budget", "0"], "--budget"),
    ],
)
def test_the_sample_command_refuses_what_it_cannot_draw(tmp_path, arguments, message):
    db = str(tmp_path / "project.db")
    runner = CliRunner()
    runner.invoke(cli, ["import", DEMO_TASKS.as_posix(), "--db", db])
    refused = runner.invoke(cli, ["sample", "--db", db, *arguments])
    assert refused.exit_code == 2 and message in refused.output
    assert "Traceback" not in refused.output


def test_the_dashboard_shows_the_samples_progress_and_what_the_ppi_figures_are_worth(
    tmp_path, monkeypatch
):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        label_sample(store, copying=True)  # draws a random sample, 20 labelled, judge agrees
        store.mark(store.human_sample()["query_id"][25], "skip", "ana")
    with opened_by_the_app(tmp_path / "project.db", monkeypatch):
        at = open_page(DASHBOARD)
        assert not at.exception
        captions = " ".join(caption.value for caption in at.caption)
        assert "20 of 50 drawn queries labelled (random sample), 0 missing" in captions
        table = table_with(at, "effective_n").set_index(["slice", "metric"])
        overall = table.loc[("all", "MRR@10")]
        assert overall["n_human"] == 20 and overall["n_all"] == 50
        assert overall["effective_n"] > 20  # a judge that agrees is worth more queries
        worth = " ".join(block.value for block in at.markdown)
        assert f"worth **{table.xs('all')['effective_n'].max():,.0f}** human-labelled" in worth


def test_the_dashboard_shows_no_sample_panel_without_a_sample(tmp_path, monkeypatch):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
    with opened_by_the_app(tmp_path / "project.db", monkeypatch):
        at = open_page(DASHBOARD)
        assert not at.exception
        assert "Random sample" not in [header.value for header in at.subheader]


def test_a_deal_hands_out_the_drawn_queries_first_in_drawn_order(demo_store):
    demo_store.draw_sample("random", seed=7, budget=4)
    order = list(demo_store.human_sample()["query_id"])
    dealable = [query["query_id"] for query in demo_store.dealable_queries()]
    assert dealable[:4] == order
    assert dealable[4:] == [q for q in QUERY_IDS if q not in order]
