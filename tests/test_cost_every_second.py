"""Cost counts every second: U (unanswerable), M (miss), search, attach and skip time are spent
time; the remaining queries are priced at the mean seconds of a done query (the median shown
beside it), and a U/M query costs the docs its verdict answered for, not 0.

The annotator's seconds come from :class:`goldset.labeler.judging.ActiveTime` on a scripted clock:
one gap in five is a break, capped at 120 s, as the label page records it."""

from __future__ import annotations

import json
from itertools import cycle

import numpy as np
import pytest
from click.testing import CliRunner

from goldset.labeler import live
from goldset.labeler.cli import cli
from goldset.labeler.judging import IDLE_CAP_SECONDS, ActiveTime
from goldset.labeler.live.incremental import LiveWork
from goldset.labeler.store import Store

CANDIDATES = 4
GAPS = (8, 12, 10, 15, 600)  # seconds between actions: one break in five gaps
RATE = 60.0


def tasks(path, queries: int):
    """A tasks file of ``queries`` queries with four candidates each (q1-d1 ... q1-d4)."""
    lines = [
        {
            "query_id": f"q{n}",
            "query": f"query {n}",
            "candidates": [
                {"doc_id": f"q{n}-d{rank}", "text": f"document {rank} of query {n}"}
                for rank in range(1, CANDIDATES + 1)
            ],
        }
        for n in range(1, queries + 1)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class Annotator:
    """One annotator acting on the store at the scripted gaps: each action records the time
    since the previous one, capped as the label page caps it (a search is no action of its
    own: its time goes to the attach that follows it)."""

    def __init__(self, store: Store, name: str = "ana"):
        self.store, self.name = store, name
        self.clock, self.gaps, self.active = 0.0, cycle(GAPS), ActiveTime(last=0.0)

    def lap(self) -> float:
        self.clock += next(self.gaps)
        return self.active.lap(self.clock)

    def judge(self, query_id: str, rank: int, grade: int = 0) -> None:
        self.store.judge(query_id, f"{query_id}-d{rank}", grade, self.name, self.lap())

    def mark(self, query_id: str, action: str) -> None:
        self.store.mark(query_id, action, self.name, self.lap())

    def search_and_attach(self, query_id: str, doc_id: str) -> None:
        self.store.attach(query_id, doc_id, 1, self.name, self.lap())


@pytest.fixture
def eight_queries(make_store, tmp_path) -> Store:
    """A project of eight queries of four candidates, from a tasks file."""
    return make_store(tasks(tmp_path / "tasks.jsonl", 8))


def label_the_small_project(ana: Annotator) -> None:
    """Five queries done (two answered, a U, an M, a miss whose answer search found), one
    skipped, one in progress, one untouched: 14 actions."""
    ana.judge("q1", 1, grade=1)  # 8 s
    for rank, grade in ((1, 0), (2, 0), (3, 2)):  # 12 + 10 + 15 s
        ana.judge("q2", rank, grade)
    ana.mark("q3", "unanswerable")  # a break: 600 s capped at 120 s, then U at once
    ana.judge("q4", 1)  # 8 s
    ana.mark("q4", "miss")  # 12 s
    for rank in range(1, CANDIDATES + 1):  # 10, 15, 120 (a break), 8 s
        ana.judge("q5", rank)
    ana.search_and_attach("q5", "q1-d4")  # 12 s of searching
    ana.mark("q6", "skip")  # 10 s
    ana.judge("q7", 1)  # 15 s: in progress


def test_the_cost_figures_equal_a_hand_computation(eight_queries):
    label_the_small_project(Annotator(eight_queries))
    summary = live.cost_summary(eight_queries, rate=RATE)
    figures = summary.cost

    # Spent: every action's capped seconds, the U, M, skip and the search before the attach
    # included: 8 + 12 + 10 + 15 + 120 | 8 + 12 + 10 + 15 + 120 | 8 + 12 + 10 + 15.
    assert IDLE_CAP_SECONDS == 120
    spent = 165 + 165 + 45
    assert figures.spent.seconds == spent == 375
    # The done passes: q1 8 s; q2 12 + 10 + 15 = 37 s; q3 the U, 120 s; q4 8 + 12 = 20 s; q5
    # 10 + 15 + 120 + 8 + 12 = 165 s. Mean 350 / 5 = 70 s; median 37 s.
    assert (figures.seconds_per_query, figures.median_seconds_per_query) == (70.0, 37.0)
    # Docs read: q1 1, q2 3, q3 the 4 its U answered for, q4 4 (one judged, three by the M),
    # q5 the 4 candidates and the attached doc: 17, 3.4 a query, 350 / 17 s each.
    reads = eight_queries.completed_depths().sort_values("seconds")["docs_read"].tolist()
    assert reads == [1, 4, 3, 4, 5]  # by seconds: q1, q4, q2, q3, q5
    assert figures.judgements_per_query == pytest.approx(3.4)
    assert figures.seconds_per_judgement == pytest.approx(350 / 17)
    # Remaining: q6 (skipped), q7 (in progress) and q8 at 70 s each, less the 10 + 15 s
    # already spent on q6 and q7: 3 × 70 − 25 = 185 s. (The median-based price, 3 queries ×
    # 1.8 judged docs × the median judgement's 12 s = 64.8 s, is a third of it.)
    assert summary.queries_remaining == 3 and summary.annotators_per_query == 1.0
    assert figures.remaining.seconds == 3 * 70 - 25 == 185
    assert figures.total.seconds == 375 + 185 == 560
    # Hours and dollars at $60/h: 375 s = 0.1042 h = $6.25; 185 s = $3.08; 560 s = $9.33.
    assert figures.spent.hours == pytest.approx(375 / 3600)
    assert figures.spent.dollars == pytest.approx(6.25)
    assert figures.remaining.dollars == pytest.approx(185 / 60)
    assert figures.total.hours == pytest.approx(0.155556, abs=1e-6)
    assert figures.total.dollars == pytest.approx(9.3333, abs=1e-4)
    assert summary.judgements_made == 11  # the U, M and skip are no judgements: their time is


def test_the_cli_and_the_dashboard_give_the_same_hand_computed_figures(eight_queries):
    label_the_small_project(Annotator(eight_queries))
    result = CliRunner().invoke(cli, ["cost", "--db", str(eight_queries.path), "--json"])
    assert result.exit_code == 0, result.output
    measured = json.loads(result.output)
    assert [measured[name]["seconds"] for name in ("spent", "remaining", "total")] == [
        375,
        185,
        560,
    ]
    assert (measured["seconds_per_query"], measured["median_seconds_per_query"]) == (70, 37)
    text = CliRunner().invoke(cli, ["cost", "--db", str(eight_queries.path)]).output
    assert "mean 70.0 s per done query, median 37.0 s (U/M, search and skips included)" in text
    assert "mean 3.40 docs read per done query, 20.6 s each" in text
    work = LiveWork()  # the dashboard's figures, kept event by event
    work.update(eight_queries, live.ProjectState.of(eight_queries))
    kept = live.cost_summary(eight_queries, seconds=work.seconds, depths=work.depths)
    assert kept.as_dict() == live.cost_summary(eight_queries).as_dict()


def label_a_round(ana: Annotator, first: int) -> None:
    """Four queries from q``first`` on, ten actions: an answer at rank 1, an unanswerable said
    at once, a miss after two judgements, and a miss whose answer search found after all four
    candidates. Ten actions a round: each round meets the breaks at the same actions."""
    answered, unanswerable, missed, searched = (f"q{first + n}" for n in range(4))
    ana.judge(answered, 1, grade=1)
    ana.mark(unanswerable, "unanswerable")
    ana.judge(missed, 1)
    ana.judge(missed, 2)
    ana.mark(missed, "miss")
    for rank in range(1, CANDIDATES + 1):
        ana.judge(searched, rank)
    ana.search_and_attach(searched, "q1-d2")


def test_a_u_and_m_heavy_projects_plan_is_not_under_what_it_then_costs(tmp_path):
    with Store(tmp_path / "heavy.db") as store:
        store.import_tasks(tasks(tmp_path / "tasks.jsonl", 20))
        ana = Annotator(store)
        for first in (1, 5):  # two rounds done, three to go
            label_a_round(ana, first)
        early = live.cost_summary(store, rate=RATE)
        events = store.events_frame()
        judgements = events[events["action"].isin(["judge", "attach"])]
        plan = live.plans(
            20,
            CANDIDATES,
            [1],
            early.cost.seconds_per_judgement,
            RATE,
            measured_depth=early.cost.judgements_per_query,
        ).iloc[0]
        for first in (9, 13, 17):
            label_a_round(ana, first)
        spent = live.cost_summary(store, rate=RATE).cost.spent.seconds

    rest = spent - early.cost.spent.seconds  # what the last twelve queries really cost
    assert rest == 3 * 2 * sum(np.minimum(GAPS, 120))  # three rounds of ten capped gaps
    assert early.cost.remaining.seconds == pytest.approx(rest)
    assert plan["hours"] * 3600 == pytest.approx(spent)  # the plan for all 20 queries
    # The median-based price of before: remaining queries × mean judged depth (U at once: 0)
    # × the median judgement's seconds, and judgements' time only as spent — far under.
    old_depth = np.mean([1, 0, 2, 4] * 2)
    old_remaining = 12 * old_depth * judgements["seconds"].median()
    assert old_remaining < 0.7 * rest
