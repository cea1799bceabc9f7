"""The compare page and a second system (AppTest, on the labelled demo project): "Label the
holes" says what it will add before the click and what it did after, the finished queries
stay in the golden set, each run's exact@10 is shown, and keep-order reads a run with ties
in its own order (issue 26)."""

from __future__ import annotations

from test_app_compare import click, demo_and_runs, trec, upload  # noqa: F401 - a fixture
from test_live import open_page, table_with

from goldset.labeler.store import Store

FOUND = ("q01", "q02", "q04")  # the demo's queries done at a relevant candidate
ANSWERABLE = 4  # done and answerable: those and q03, a miss
DASHBOARD = "../labeler/views/dashboard.py"


def reversed_lists(db) -> dict[str, bytes]:
    """A worse run: the found queries' candidate lists reversed (nothing new to pool: only
    holes above their first relevant docs, as in the trial that reopened finished queries)."""
    with Store(db) as store:
        lists = {q: [c["doc_id"] for c in store.candidates(q)][:10][::-1] for q in FOUND}
    return {"worse": trec(lists, "worse")}


def test_label_the_holes_says_what_it_adds_and_keeps_the_finished_queries(demo_and_runs):  # noqa: F811
    db, _ = demo_and_runs
    at = upload(reversed_lists(db))
    preview = next(c.value for c in at.caption if c.value.startswith("Labelling the holes adds"))
    assert preview == (
        "Labelling the holes adds 0 documents over 0 queries; 3 done queries get holes to "
        "judge (they stay in the golden set meanwhile); 0 are already exact for this run."
    )
    click(at, "Label the holes")
    assert at.success[0].value.startswith(
        "Added 0 documents over 3 queries: 3 done queries were given holes to judge (they "
        "stay in the golden set), 0 were already exact."
    )
    with Store(db) as store:
        states = {q: store.query_state(q) for q in FOUND}
        assert all(state["status"] == "done" and state["holes"] for state in states.values())
        assert store.next_query("ana") in FOUND  # the queue offers them first


def test_each_runs_exact_at_10_is_shown_beside_its_figures(demo_and_runs):  # noqa: F811
    db, files = demo_and_runs
    at = upload({"baseline": files["baseline"], **reversed_lists(db)})
    exact = table_with(at, "Exact@10").set_index("Run")
    assert exact.loc["baseline", "Exact@10"].startswith("100.0%")
    assert exact.loc["worse", "Exact@10"].startswith("25.0% (1 of 4)")  # the miss, q03
    assert exact.loc["worse", "MRR@10 over all"].startswith("≥ ")


def test_keep_order_reads_a_run_with_ties_in_its_own_order(demo_and_runs):  # noqa: F811
    db, _ = demo_and_runs
    with Store(db) as store:
        docs = [c["doc_id"] for c in store.candidates("q02")][:3]  # its hit is the third
    # all three tie: trec_eval ranks them by doc id, descending; the file lists them as shown
    lines = [f"q02 Q0 {doc} {rank} 1.0 tied" for rank, doc in enumerate(docs, start=1)]
    at = upload({"tied": ("\n".join(lines) + "\n").encode()})
    by_score = sorted(docs, reverse=True).index(docs[2]) + 1
    assert any("hold tied scores whose order changes the figures" in t.value for t in at.text)
    table = table_with(at, "Metric").set_index("Metric")
    assert table.loc["MRR@10", "tied"].startswith(f"{1 / by_score / ANSWERABLE:.3f}")
    at.checkbox(key="keep_order").check().run()
    table = table_with(at, "Metric").set_index("Metric")
    assert table.loc["MRR@10", "tied"].startswith(f"{1 / 3 / ANSWERABLE:.3f}")


def test_the_dashboard_shows_exact_at_10_per_slice_of_the_run_it_shows(demo_and_runs, tmp_path):  # noqa: F811
    db, _ = demo_and_runs
    run_file = tmp_path / "worse.trec"
    run_file.write_bytes(reversed_lists(db)["worse"])
    with Store(db) as store:
        store.pool(None, None, [run_file], 10)
    at = open_page(DASHBOARD)
    assert not at.exception, at.exception
    exact = table_with(at, "Exact@10").set_index("Slice")
    assert exact.loc["all", "Exact@10"] == "100.0% (4 of 4)"  # the lists labelled first-hit
    at.sidebar.selectbox[0].select("worse").run()
    exact = table_with(at, "Exact@10").set_index("Slice")
    assert exact.loc["all", "Exact@10"] == "25.0% (1 of 4)"
    assert exact.loc["all", "MRR@10 over all"].startswith("≥ ")
