"""One definition of each work figure, worded the same everywhere: the dashboard, the cost
planner, ``goldset status`` and ``goldset cost --db`` show the same current labels, judgements
made, seconds per judgement, judged depth and queries left, on one mixed project (two
annotators, an undone judgement, unanswerable, missed and skipped queries)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from test_live import open_page

from goldset.labeler import live
from goldset.labeler.cli import cli
from goldset.labeler.store import Store


def goldset(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def captions(script: str) -> list[str]:
    at = open_page(script)
    assert not at.exception, at.exception
    return [caption.value for caption in at.caption]


def test_work_figures_are_defined_once_from_the_log(labelled_demo_app):
    with Store(labelled_demo_app) as store:
        events = store.events_frame()
        summary = live.cost_summary(store)
        status = store.status()
    judgements = events[events["action"].isin(["judge", "attach"])]
    assert summary.judgements_made == len(judgements)  # undone ones too: the time was spent
    # Current labels include the 0s a verdict (U/M) gives the candidates not judged one by
    # one, so they can outnumber the judgements made; the undone judgement is in neither.
    assert summary.current_labels == status["judgements"]
    assert summary.cost.spent.seconds == events["seconds"].sum()  # every action's time
    assert summary.queries_remaining == 50 - 6  # six done; the skipped one is still to do


def test_dashboard_planner_status_and_cost_show_the_same_work_figures(labelled_demo_app):
    with Store(labelled_demo_app) as store:
        line = live.work_text(live.cost_summary(store))
    # ranks 1, 3, none (10 judged) and 2 hold 16 labels, and the two unanswerable queries
    # 2 x 10, the 0s their verdict gave; ben judged twice, then undid it
    assert "36 current labels · 18 judgements made" in line and "44 queries left" in line
    assert line in captions("../labeler/views/dashboard.py")
    assert any(caption.startswith(line) for caption in captions("../labeler/views/planner.py"))
    assert line in goldset("status", "--db", str(labelled_demo_app)).splitlines()
    assert line in goldset("cost", "--db", str(labelled_demo_app)).splitlines()


def test_status_json_carries_the_work_figures_of_cost_json(labelled_demo_app):
    status = json.loads(goldset("status", "--db", str(labelled_demo_app), "--json"))
    cost = json.loads(goldset("cost", "--db", str(labelled_demo_app), "--json"))
    for key in ("current_labels", "judgements_made", "seconds_per_query",
                "median_seconds_per_query", "seconds_per_judgement", "judgements_per_query",
                "queries_remaining"):  # fmt: skip
        assert status[key] == cost[key]
    assert status["current_labels"] == status["judgements"]
