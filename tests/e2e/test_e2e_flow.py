"""The annotator's flow in Chromium, keyboard only: fewer keys per query, search that finds the
missed answer, fixing a past query in place, the project's protocol, a header that stays on
screen, and presses that land only where they were aimed."""

from __future__ import annotations

import json
import sqlite3

from e2e_support import current_rank, open_app, query_heading, wait_idle
from playwright.sync_api import Browser, Page, expect

from goldset.labeler.store import DEMO_TASKS, Store


def demo_subset(path, *query_ids: str):
    """A project holding these demo queries first, in this order, then the other demo queries
    (whose candidates are the corpus search finds missed answers in)."""
    records = {r["query_id"]: r for r in map(json.loads, DEMO_TASKS.read_text().splitlines())}
    first = [records.pop(query_id) for query_id in query_ids]
    with Store(path) as store:
        store.import_records([*first, *records.values()])
    return path


def golden(db_path, query_id: str) -> dict:
    with Store(db_path) as store:
        return next(r for r in store.golden_records() if r["query_id"] == query_id)


def test_u_on_the_first_candidate_completes_an_unanswerable_query(page: Page, serve_app, tmp_path):
    db = demo_subset(tmp_path / "demo.db", "q46", "q01")
    open_app(page, serve_app(db))
    expect(query_heading(page)).to_have_text("kotlin coroutine adapter")
    page.keyboard.press("u")
    expect(query_heading(page)).to_have_text("parse ISO-8601 duration")
    expect(page.get_by_text("q46 done — unanswerable · Z undoes")).to_be_visible()
    wait_idle(page)
    record = golden(db, "q46")
    assert (record["status"], record["answerable"]) == ("done", False)
    assert set(record["judgments"].values()) == {0} and len(record["judgments"]) == 10


def test_search_with_the_query_text_finds_and_attaches_the_missed_answer_by_keyboard(
    page: Page, serve_app, tmp_path
):
    db = demo_subset(tmp_path / "demo.db", "q03", "q01")
    open_app(page, serve_app(db))
    expect(query_heading(page)).to_have_text("deprecated v1 auth client")
    page.keyboard.press("/")  # at the first candidate: no need to judge the ten first
    search = page.get_by_label("Search the corpus")
    expect(search).to_be_focused()
    expect(search).to_have_value("deprecated v1 auth client")
    selected = page.locator(".st-key-gs-search .gs-current")
    expect(selected).to_contain_text("LegacyAuthClient")  # the best match, selected
    wait_idle(page)
    page.keyboard.press("Escape")  # leave the box: J/K move, Enter attaches
    page.keyboard.press("Enter")
    expect(query_heading(page)).to_have_text("parse ISO-8601 duration")
    expect(page.get_by_text("q03 done — miss, answer attached")).to_be_visible()
    wait_idle(page)
    record = golden(db, "q03")
    assert record["judgments"]["cirrus/auth/v1.py#LegacyAuthClient"] == 1
    assert (record["status"], record["answerable"]) == ("done", True)


def test_a_finished_query_reopened_from_the_history_is_changed_in_place(
    page: Page, serve_app, tmp_path
):
    db = demo_subset(tmp_path / "demo.db", "q09", "q01")
    open_app(page, serve_app(db))
    page.keyboard.press("m")  # too quick: #3 (LegacyAuthClient) answers "authenticate..."
    expect(query_heading(page)).to_have_text("parse ISO-8601 duration")
    page.keyboard.type("h1", delay=50)
    expect(query_heading(page)).to_have_text("authenticate with api key")
    expect(page.get_by_text("Done: miss")).to_be_visible()
    expect(page.get_by_text("No candidate is relevant")).to_have_count(0)
    wait_idle(page)
    expect(current_rank(page)).to_have_text("#1")  # a finished query opens on its first card
    page.keyboard.type("jj", delay=50)
    expect(current_rank(page)).to_have_text("#3")
    page.keyboard.press("1")
    expect(query_heading(page)).to_have_text("parse ISO-8601 duration")
    wait_idle(page)
    record = golden(db, "q09")
    assert record["first_relevant_rank"] == 3 and record["answerable"]
    with Store(db) as store:
        assert store.events_frame("q09")["action"].tolist() == ["miss", "judge"]


def test_the_protocol_set_by_an_admin_is_what_annotators_get(page: Page, serve_app, tmp_path):
    db = demo_subset(tmp_path / "demo.db", "q01", "q02")
    with Store(db) as store:
        store.configure(mode="full", depth=3, max_grade=4, rel_threshold=2, by="rita")
    open_app(page, serve_app(db))
    protocol = "full (grade every candidate), within the top 3, grades 0–4"
    expect(page.get_by_text(protocol)).to_be_visible()
    expect(page.get_by_role("radio")).to_have_count(0)  # no mode switch for annotators
    page.keyboard.type("420", delay=50)
    expect(query_heading(page)).to_have_text("retry with jitter helper")
    wait_idle(page)
    assert list(golden(db, "q01")["judgments"].values()) == [4, 2, 0]


def test_the_header_stays_on_screen_at_1280x720_while_judging_9(
    page: Page, serve_app, demo_db, artifacts_dir
):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, serve_app(demo_db))
    page.keyboard.type("1" + "01" + "0" * 8, delay=50)
    expect(current_rank(page)).to_have_text("#9")
    wait_idle(page)
    page.wait_for_timeout(300)  # the current card scrolls into view
    header = page.locator(".st-key-gs-header")
    expect(header.locator(".gs-query-text")).to_have_text("deprecated v1 auth client")
    expect(header.locator(".gs-query-text")).to_be_in_viewport()
    expect(page.get_by_test_id("stProgress")).to_be_in_viewport()
    expect(page.locator(".gs-current")).to_be_in_viewport()
    page.screenshot(path=artifacts_dir / "label-1280x720-judging-9.png")


def test_a_stale_tabs_press_never_lands_on_a_candidate_it_did_not_show(
    browser: Browser, serve_app, demo_db
):
    url = serve_app(demo_db)
    context = browser.new_context()  # one annotator, two tabs
    tab_a, tab_b = context.new_page(), context.new_page()
    open_app(tab_a, url)
    open_app(tab_b, url)
    expect(current_rank(tab_b)).to_have_text("#1")
    tab_a.keyboard.press("0")  # tab A: #1 is not relevant
    expect(current_rank(tab_a)).to_have_text("#2")
    wait_idle(tab_a)
    tab_b.keyboard.press("1")  # tab B still shows #1 as current
    expect(tab_b.get_by_text("#1 was judged meanwhile")).to_be_visible()
    expect(current_rank(tab_b)).to_have_text("#2")  # refreshed: what the server stored
    wait_idle(tab_b)
    with Store(demo_db) as store:
        events = store.events_frame("q01")
    assert events[["doc_id", "grade"]].values.tolist() == [["cirrus/timeutil.py#parse_duration", 0]]
    context.close()


def test_presses_while_another_writer_holds_the_database_wait_say_saving_and_are_all_stored(
    page: Page, serve_app, demo_db
):
    open_app(page, serve_app(demo_db))
    blocker = sqlite3.connect(demo_db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # as a long import would hold the write lock
    try:
        page.keyboard.type("001", delay=50)
        expect(page.locator(".goldset-keys")).to_have_text("saving…")
        # The page moved on at once, to the next query fetched ahead, while the server waits.
        expect(query_heading(page)).to_have_text("retry with jitter helper")
        expect(current_rank(page)).to_have_text("#1")
        page.wait_for_timeout(1500)
        assert golden(demo_db, "q01")["judgments"] == {}  # nothing committed yet
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    expect(query_heading(page)).to_have_text("retry with jitter helper", timeout=20_000)
    expect(page.locator(".goldset-keys")).to_have_text("⌨ keys on")
    wait_idle(page)
    assert "Traceback" not in page.content()
    assert list(golden(demo_db, "q01")["judgments"].values()) == [0, 0, 1]
