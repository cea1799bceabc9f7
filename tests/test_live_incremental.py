"""The dashboard's incremental update: after new labels only the queries they touch are
read and ranked again, and the figures equal a full recompute (a mixed project: first-hit
and full-mode labels, slices, undo, a miss, an unanswerable query, a reviewer's decision)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from helpers.projects import label, labelled_demo

from goldset.eval.metrics import DEFAULT_METRICS, Ranking, rank_run
from goldset.labeler import live
from goldset.labeler.live.incremental import Labelled, LiveGolden, LiveWork
from goldset.labeler.store import Store


def judge_fully(store: Store, query_id: str, grades: list[int], annotator: str = "ana") -> None:
    """Full mode: every candidate graded, in rank order: ``grades`` first, then 0s."""
    candidates = store.candidates(query_id)
    for candidate, grade in zip(candidates, grades + [0] * len(candidates), strict=False):
        store.judge(query_id, candidate["doc_id"], grade, annotator, 3.0, mode="full")


@pytest.fixture
def mixed(tmp_path) -> Store:
    """The labelled demo (first-hit, slices head and tail) with two queries in full mode."""
    store = labelled_demo(tmp_path / "mixed.db")
    judge_fully(store, "q08", [0, 2, 0, 1, 3])
    judge_fully(store, "q09", [1, 0, 0])
    yield store
    store.close()


def assert_same_figures(incremental: live.Snapshot, full: live.Snapshot) -> None:
    assert incremental.report == full.report
    for name in ("table", "wide", "first_relevant", "worst"):
        pd.testing.assert_frame_equal(getattr(incremental, name), getattr(full, name))
    assert incremental.needed == full.needed
    assert incremental.alerts == full.alerts


def assert_same_ranking(spliced: Ranking, full: Ranking) -> None:
    for field in dataclasses.fields(full):
        assert np.array_equal(getattr(spliced, field.name), getattr(full, field.name)), field.name


def assert_as_a_full_recompute(labelled: Labelled, store: Store, run) -> None:
    """The kept golden set, ranking and version equal those of the whole project read and
    ranked again, and so do the dashboard's figures from them."""
    full = live.golden_set(store)
    pd.testing.assert_frame_equal(labelled.golden.queries, full.queries)
    assert labelled.version == full.version
    assert_same_ranking(labelled.ranking, rank_run(full, run, DEFAULT_METRICS))
    kept = live.snapshot(labelled.golden, run, ranking=labelled.ranking, version=labelled.version)
    assert_same_figures(kept, live.snapshot(full, run))


def test_new_labels_are_read_for_the_queries_they_touch_and_give_the_full_figures(mixed):
    run = live.project_run(mixed)
    labels = LiveGolden()
    labels.update(mixed, live.ProjectState.of(mixed), run)
    assert labels.changed is None  # the first update reads the whole golden set

    judge_fully(mixed, "q10", [3, 0, 1, 0], annotator="ben")  # full mode, a new query done
    label(mixed, "q11", 2)  # first-hit, found at rank 2
    label(mixed, "q12", None)  # first-hit, a miss
    mixed.mark("q13", "unanswerable", "ben", seconds=2.0)
    mixed.judge("q01", mixed.candidates("q01")[0]["doc_id"], 0, "ana", 1.0)  # q01 loses rank 1
    mixed.undo("ana", "q08")  # q08's last full grade taken back
    decided = {mixed.candidates("q02")[0]["doc_id"]: 1}
    mixed.adjudicate("q02", "rita", decided, answerable=True)
    labelled = labels.update(mixed, live.ProjectState.of(mixed), run)

    assert sorted(labels.changed) == ["q01", "q02", "q08", "q10", "q11", "q12", "q13"]
    assert_as_a_full_recompute(labelled, mixed, run)
    report = live.snapshot(labelled.golden, run).report
    # nDCG over the full-mode queries done: q09 and q10 (the undo left q08 in progress)
    assert report["metrics"]["ndcg@10"]["queries"] == 2
    assert set(report["slices"]) == {"head", "tail"}


def test_updates_one_after_another_stay_equal_to_a_full_recompute(mixed):
    run = live.project_run(mixed)
    labels = LiveGolden()
    labels.update(mixed, live.ProjectState.of(mixed), run)
    judge_fully(mixed, "q10", [0, 0, 0, 2, 1], annotator="ben")  # a new full-mode query
    assert_as_a_full_recompute(labels.update(mixed, live.ProjectState.of(mixed), run), mixed, run)
    mixed.undo("ben", "q10")  # its last grade taken back: q10 no longer done
    mixed.mark("q09", "unanswerable", "ana", seconds=1.0)  # q09 leaves the scored queries
    label(mixed, "q14", 3, annotator="ben")
    labelled = labels.update(mixed, live.ProjectState.of(mixed), run)
    assert sorted(labels.changed) == ["q09", "q10", "q14"]
    assert_as_a_full_recompute(labelled, mixed, run)
    assert "q09" not in set(labelled.ranking.query_ids)


def test_an_update_with_nothing_new_reads_no_labels(mixed):
    run = live.project_run(mixed)
    labels = LiveGolden()
    state = live.ProjectState.of(mixed)
    first = labels.update(mixed, state, run)
    again = labels.update(mixed, state, run)
    assert labels.changed == [] and again is first


def test_the_dashboard_refresher_updates_incrementally_to_the_full_figures(mixed):
    refresher = live.dashboard_refresher(str(mixed.path), None, pace=0)
    before = refresher.get(live.ProjectState.of(mixed)).snapshot.report["queries"]
    judge_fully(mixed, "q14", [0, 0, 2], annotator="ben")
    label(mixed, "q15", 1)
    shown = refresher.get(live.ProjectState.of(mixed))  # quick on a small project: at once
    golden, run, measured = live.golden_set(mixed), live.project_run(mixed), shown.cost
    assert_same_figures(shown.snapshot, live.snapshot(golden, run, measured))
    assert shown.snapshot.report["queries"]["answerable"] == before["answerable"] + 2


def assert_work_as_read_in_full(work: LiveWork, store: Store) -> None:
    """The kept work figures equal the store's, read in full, and so do the dashboard's."""
    pd.testing.assert_frame_equal(work.seconds, store.active_seconds())
    by = ["annotator", "docs_read", "seconds"]
    pd.testing.assert_frame_equal(
        work.depths.sort_values(by, ignore_index=True),
        store.completed_depths().sort_values(by, ignore_index=True),
    )
    for since in ("", "2000-01-01T00"):
        pd.testing.assert_frame_equal(work.per_hour(since), store.judgements_per_hour(since))
    assert work.per_hour("9999-01-01T00").empty  # no judgements from that hour on
    kept = live.cost_summary(store, seconds=work.seconds, depths=work.depths)
    assert kept.as_dict() == live.cost_summary(store).as_dict()
    pd.testing.assert_frame_equal(
        live.throughput(store, per_hour=work.per_hour), live.throughput(store)
    )


def test_the_work_figures_read_only_newer_events_and_equal_the_stores(mixed):
    work = LiveWork()
    work.update(mixed, live.ProjectState.of(mixed))
    assert_work_as_read_in_full(work, mixed)
    judge_fully(mixed, "q10", [0, 1], annotator="ben")  # a new pass completed
    mixed.undo("ana", "q08")  # a completed pass no longer done
    label(mixed, "q11", 2, annotator="chen")  # a new annotator
    work.update(mixed, live.ProjectState.of(mixed))
    assert_work_as_read_in_full(work, mixed)
    work.update(mixed, live.ProjectState.of(mixed))  # nothing new
    assert_work_as_read_in_full(work, mixed)
