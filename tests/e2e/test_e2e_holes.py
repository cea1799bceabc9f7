"""A second system in a real browser (issue 26): the compare page's "Label the holes" says
what it adds, the finished queries stay done, and the annotator fills a query's holes with
the keyboard, kept on it until they are judged."""

from __future__ import annotations

from e2e_support import open_app, query_heading, wait_idle
from helpers.projects import label
from playwright.sync_api import Page, expect

from goldset.labeler.auth import LOCAL_ANNOTATOR
from goldset.labeler.store import DEMO_TASKS, Store

FOUND = {"q01": 1, "q02": 3, "q04": 2}  # first relevant display rank of each


def test_label_the_holes_then_fill_them_by_keyboard(page: Page, serve_app, tmp_path):
    db = tmp_path / "demo.db"
    with Store(db) as store:
        store.import_tasks(DEMO_TASKS)
        for query_id, rank in FOUND.items():
            label(store, query_id, rank, annotator=LOCAL_ANNOTATOR)
        reversed_lists = {q: [c["doc_id"] for c in store.candidates(q)][:10][::-1] for q in FOUND}
    worse = tmp_path / "worse.trec"
    worse.write_text(
        "".join(
            f"{query_id} Q0 {doc} {rank} {100 - rank} worse\n"
            for query_id, docs in reversed_lists.items()
            for rank, doc in enumerate(docs, start=1)
        )
    )
    url = serve_app(db)
    page.goto(f"{url}/compare")
    wait_idle(page)
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files([worse])
    preview = page.get_by_text("Labelling the holes adds 0 documents over 0 queries")
    expect(preview).to_contain_text("3 done queries get holes to judge", timeout=20_000)
    wait_idle(page)
    page.get_by_role("button", name="Label the holes").click()
    expect(page.get_by_text("3 done queries were given holes to judge")).to_be_visible()
    with Store(db) as store:
        assert all(store.query_state(q)["status"] == "done" for q in FOUND)

    open_app(page, url)
    expect(query_heading(page)).to_have_text("parse ISO-8601 duration")  # q01, its holes
    page.keyboard.type("0" * 8, delay=60)  # the worse run's ranks 1-8, not relevant
    wait_idle(page)
    expect(query_heading(page)).to_have_text("parse ISO-8601 duration")  # kept: one hole left
    page.keyboard.press("0")
    expect(page.get_by_text("q01 done — first relevant #")).to_be_visible()  # fused anew
    expect(query_heading(page)).not_to_have_text("parse ISO-8601 duration")
    wait_idle(page)
    with Store(db) as store:
        state = store.query_state("q01")
        assert (state["status"], state["holes"]) == ("done", 0)
        assert len(store.labels("q01")) == 10
