"""Sampled labelling in a real browser (issue 28): the annotator is offered the drawn order,
not the import order, and the dashboard shows the sample's progress and the PPI figures with
how many human-labelled queries they are worth."""

from __future__ import annotations

from e2e_support import open_app, query_heading, wait_idle
from playwright.sync_api import Browser, expect

from goldset.labeler import judges
from goldset.labeler.store import Store

DESKTOP = {"width": 1280, "height": 2600}


def judge_every_query(store: Store) -> None:
    """A machine judge that calls each query's first candidate relevant, the rest not."""
    context = {"judge": "machine:rule", "model": "rule", "prompt_sha256": "0" * 64}
    for query_id in store.human_sample()["query_id"]:
        for rank, candidate in enumerate(store.candidates(query_id)):
            pair = judges.Pair(query_id, candidate["doc_id"], "", "", "")
            call = judges.Call("ok", 0.1, 10, 2, grade=int(rank == 0), reason="rule")
            store.record_judge_calls(judges.call_rows(pair, [call], context))


def test_the_queue_follows_the_sample_and_the_dashboard_weighs_it(
    browser: Browser, serve_app, demo_db, artifacts_dir
):
    with Store(demo_db) as store:
        store.draw_sample("random", seed=7)
        drawn = list(store.human_sample()["query_id"][:3])
        texts = [store.query(query_id)["query"] for query_id in drawn]
        judge_every_query(store)
    assert drawn[0] != "q01"  # the import order would offer q01 first
    url = serve_app(demo_db)
    page = browser.new_context(viewport=DESKTOP).new_page()
    open_app(page, url)
    expect(query_heading(page)).to_have_text(texts[0], timeout=30_000)
    page.keyboard.type("1")  # relevant at rank 1: done
    expect(query_heading(page)).to_have_text(texts[1])
    page.keyboard.type("1")
    expect(query_heading(page)).to_have_text(texts[2])
    wait_idle(page)

    page.goto(f"{url}/dashboard")
    progress = page.get_by_text("2 of 50 drawn queries labelled (random sample), 0 missing")
    expect(progress).to_be_visible(timeout=30_000)
    expect(page.get_by_text("the figures are worth")).to_be_visible()
    expect(page.get_by_text("human-labelled queries (the humans labelled 2)")).to_be_visible()
    wait_idle(page)
    page.screenshot(path=artifacts_dir / "dashboard-sample.png")
