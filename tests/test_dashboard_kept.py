"""The dashboard's figures across server lives and new labels: kept in the project, served
at once after a start, and replaced by figures that include every new label."""

from __future__ import annotations

import json
import threading

import pandas as pd
import pytest
import streamlit as st
from helpers.projects import label
from test_live import eventually, open_page

from goldset.labeler import live
from goldset.labeler.live import kept
from goldset.labeler.store import Store

DASHBOARD = "../labeler/views/dashboard.py"
STALE_START = "These figures are from before the newest labels"
VIEW = json.dumps({"run": None, "target": live.TARGET_HALF_WIDTH, "rate": live.DEFAULT_RATE})


@pytest.fixture
def demo_path(labelled_demo_db) -> str:
    """The labelled demo project's path, as text (as the app reads it from GOLDSET_DB)."""
    return str(labelled_demo_db)


def version(figures: live.Dashboard) -> str:
    return figures.snapshot.report["golden_version"]


def now(path: str) -> live.ProjectState:
    with Store(path) as store:
        return live.ProjectState.of(store)


def as_if_slow(path: str, seconds: float = 60.0) -> None:
    """Say that the kept figures (the page's default view) took ``seconds`` to compute, as on
    a large project: a restart then computes newer ones in the background."""
    with Store(path) as store:
        kept = store.saved_figures(VIEW)
        store.save_figures(VIEW, kept["marks"], kept["figures"], seconds)


def label_one_more(path: str) -> None:
    """A new label: q08, first relevant at rank 2 (the demo labels q01..q07)."""
    with Store(path) as store:
        label(store, "q08", 2)


def test_kept_figures_read_back_equal_frames_dataclasses_and_report(demo_path):
    figures = live.dashboard_refresher(demo_path, None).get(now(demo_path))
    read = kept.figures_from_json(kept.figures_json(figures))
    assert kept.figures_json(read) == kept.figures_json(figures)
    assert read.snapshot.report == figures.snapshot.report
    assert read.snapshot.needed == figures.snapshot.needed
    assert read.cost.cost == figures.cost.cost
    for mine, theirs in ((read.snapshot.table, figures.snapshot.table),
                         (read.throughput, figures.throughput),
                         (read.cost.per_annotator, figures.cost.per_annotator)):  # fmt: skip
        pd.testing.assert_frame_equal(mine, theirs)


def test_a_server_start_serves_the_kept_figures_without_waiting_for_a_computation(
    demo_path, monkeypatch
):
    first = live.dashboard_refresher(demo_path, None).get(now(demo_path))
    computing, computed = threading.Event(), live.snapshot

    def held_up(*args, **kwargs):  # the warm-up's computation, held until the end
        computing.wait(timeout=30)
        return computed(*args, **kwargs)

    monkeypatch.setattr("goldset.labeler.live.refresher.snapshot", held_up)
    restarted = live.dashboard_refresher(demo_path, None)  # a new server: nothing in memory
    state = now(demo_path)
    assert restarted.current(state)
    assert kept.figures_json(restarted.get(state)) == kept.figures_json(first)
    computing.set()


def test_a_restart_of_a_small_project_computes_labels_made_meanwhile_at_once(demo_path):
    before = live.dashboard_refresher(demo_path, None).get(now(demo_path))
    label_one_more(demo_path)
    restarted = live.dashboard_refresher(demo_path, None)
    state = now(demo_path)
    assert version(restarted.get(state)) != version(before)  # quick: the page waits for it
    assert restarted.current(state)


def test_labels_made_while_the_server_was_down_show_after_a_background_refresh(demo_path):
    before = live.dashboard_refresher(demo_path, None).get(now(demo_path))
    as_if_slow(demo_path)
    label_one_more(demo_path)
    restarted = live.dashboard_refresher(demo_path, None)
    state = now(demo_path)
    assert version(restarted.get(state)) == version(before)  # at once: the kept figures
    assert not restarted.current(state)
    assert eventually(lambda: restarted.current(state))
    assert version(restarted.get(state)) != version(before)
    with Store(demo_path) as store:
        assert version(restarted.get(state)) == live.golden_set(store).version


def test_a_new_label_shows_after_the_refreshers_background_cycle(demo_path):
    # quick=0: every recomputation runs in the background, as on a project of 100,000 queries
    refresher = live.dashboard_refresher(demo_path, None, pace=0, quick=0)
    before = refresher.get(now(demo_path))
    label_one_more(demo_path)
    state = now(demo_path)
    assert refresher.get(state) is before  # served while the new figures are computed
    assert eventually(lambda: version(refresher.get(state)) != version(before))
    shown = refresher.get(state).snapshot.report
    assert shown["queries"]["answerable"] == before.snapshot.report["queries"]["answerable"] + 1


def header(at) -> str:
    return next(h.proto.body for h in at.get("html") if "golden set" in h.proto.body)


def test_the_page_shows_a_new_label_without_a_restart(labelled_demo_app):
    before = header(open_page(DASHBOARD))
    assert "4 answerable" in before
    label_one_more(str(labelled_demo_app))
    assert eventually(lambda: "5 answerable" in header(open_page(DASHBOARD)), seconds=30)


def test_after_a_restart_the_page_shows_the_kept_figures_and_says_they_are_older(labelled_demo_app):
    open_page(DASHBOARD)
    as_if_slow(str(labelled_demo_app))
    label_one_more(str(labelled_demo_app))
    st.cache_resource.clear()  # a server restart: no refresher in memory
    at = open_page(DASHBOARD)
    assert "4 answerable" in header(at)  # the kept figures, at once
    assert any(STALE_START in caption.value for caption in at.caption)

    def refreshed() -> bool:
        page = open_page(DASHBOARD)
        return "5 answerable" in header(page) and not any(
            STALE_START in caption.value for caption in page.caption
        )

    assert eventually(refreshed, seconds=30)
