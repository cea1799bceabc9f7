"""The PPI figures on the dashboard and the planner's savings follow the machine judge's
labels: ``goldset judge`` writes no label event, so the dashboard marks alone would keep the
figures of the judge's earlier labels for the cache's ten minutes."""

from helpers.projects import opened_by_the_app
from test_live import open_page, table_with
from test_planner_ppi import label_sample, machine_label

from goldset.labeler.store import DEMO_TASKS, Store

DASHBOARD = "../labeler/views/dashboard.py"
PLANNER = "../labeler/views/planner.py"


def judge_first_candidates(store: Store, query_ids) -> None:
    """The judge calls the first candidate of each query relevant."""
    for query_id in query_ids:
        machine_label(store, query_id, store.candidates(query_id)[0]["doc_id"], 1)


def unjudged(store: Store) -> list[str]:
    """The drawn queries the judge has not labelled."""
    judged = set(store.machine_judgments_frame("machine:rule")["query_id"])
    return [query_id for query_id in store.human_sample()["query_id"] if query_id not in judged]


def test_the_ppi_figures_change_when_the_judge_labels_more(tmp_path, monkeypatch):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        label_sample(store, copying=True)  # the judge labels only the 20 labelled queries
    with opened_by_the_app(tmp_path / "project.db", monkeypatch) as path:
        before = table_with(open_page(DASHBOARD), "effective_n").set_index(["slice", "metric"])
        with Store(path) as store:
            judge_first_candidates(store, unjudged(store))
        after = table_with(open_page(DASHBOARD), "effective_n").set_index(["slice", "metric"])
    assert after.loc[("all", "MRR@10"), "mean"] != before.loc[("all", "MRR@10"), "mean"]


def test_the_planners_savings_change_when_the_judge_labels_more(tmp_path, monkeypatch):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        store.draw_sample("random", seed=7)
        drawn = list(store.human_sample()["query_id"][:20])
        firsts = {}  # the humans' first relevant candidate, at rank 1 to 4
        for number, query_id in enumerate(drawn):
            candidates = [c["doc_id"] for c in store.candidates(query_id)]
            for rank, doc_id in enumerate(candidates[: number % 4 + 1]):
                store.judge(query_id, doc_id, int(rank == number % 4), "ana", seconds=9.0)
            firsts[query_id] = candidates[number % 4]
        for query_id in drawn[:10]:  # the judge agrees, on half of them so far
            machine_label(store, query_id, firsts[query_id], 1)
    with opened_by_the_app(tmp_path / "project.db", monkeypatch) as path:
        before = table_with(open_page(PLANNER), "with_judge").set_index("slice")
        with Store(path) as store:
            for query_id in drawn[10:]:
                machine_label(store, query_id, firsts[query_id], 1)
        after = table_with(open_page(PLANNER), "with_judge").set_index("slice")
    assert before.loc["all", "correlation"] < 0.99
    assert after.loc["all", "correlation"] > 0.99  # the judge agrees on every labelled query
