"""Every documented key works at every step, and the page says what was done (issue 26): in
Chromium against the app, keyboard only, on the demo set (a 0-3 project)."""

from __future__ import annotations

import pytest
from e2e_support import current_rank, open_app, query_heading, wait_idle
from playwright.sync_api import Page, expect
from test_e2e_flow import demo_subset, golden
from test_e2e_label import SDK_QUERIES, judged_sequence

from goldset.labeler.store import Store

SEARCH = ".st-key-gs-search"


def cut_short(page: Page) -> list[str]:
    """The labels of the buttons on the page whose text does not fit (an ellipsis shows)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stMain"] button')]
            .filter((button) => button.offsetParent !== null)
            .flatMap((button) => [button, ...button.querySelectorAll("*")])
            .filter((element) => element.scrollWidth > element.clientWidth + 1)
            .map((element) => element.textContent)"""
    )


def skip(page: Page, count: int) -> None:
    """Skip ``count`` queries, waiting for each next one (each enters the history)."""
    for _ in range(count):
        heading = query_heading(page).inner_text()
        page.keyboard.press("s")
        expect(query_heading(page)).not_to_have_text(heading)
    wait_idle(page)


def test_h_5_reopens_the_fifth_latest_query_in_a_0_to_3_project(page: Page, serve_app, demo_db):
    open_app(page, serve_app(demo_db))
    skip(page, 6)  # q01..q06 viewed, q07 open: the strip lists six, newest first
    expect(page.locator(".gs-hist")).to_have_count(6)
    page.keyboard.type("h5", delay=50)
    expect(query_heading(page)).to_have_text(SDK_QUERIES[1])  # q02, the 5th latest
    wait_idle(page)


def test_a_grade_right_after_a_refused_history_key_is_a_grade(page: Page, serve_app, demo_db):
    open_app(page, serve_app(demo_db))
    skip(page, 1)  # one entry in the history: H 7 names none
    page.keyboard.type("h71", delay=50)
    # The refusal of "7" may be drawn and replaced within one rerun (the 1 comes 50 ms after):
    # what matters is that the 1 was not eaten. tests/test_key_table.py checks the refusal.
    expect(query_heading(page)).to_have_text(SDK_QUERIES[2])  # the 1 completed q02
    wait_idle(page)
    assert judged_sequence(demo_db) == [("q02", 1, 1)]


@pytest.mark.parametrize("after_ms", [0, 50, 100])
def test_escape_just_after_the_results_appear_leaves_the_field_and_enter_attaches(
    page: Page, serve_app, tmp_path, after_ms: int
):
    db = demo_subset(tmp_path / "demo.db", "q03", "q01")
    open_app(page, serve_app(db))
    page.keyboard.press("/")
    expect(page.locator(f"{SEARCH} .gs-current")).to_contain_text("LegacyAuthClient")
    page.wait_for_timeout(after_ms)  # how fast the annotator reacts to the results
    page.keyboard.press("Escape")
    page.wait_for_timeout(600)  # long enough for any late focus to land
    expect(page.get_by_label("Search the corpus")).not_to_be_focused()
    page.keyboard.press("Enter")
    expect(query_heading(page)).to_have_text("parse ISO-8601 duration")
    wait_idle(page)
    assert golden(db, "q03")["judgments"] == {"cirrus/auth/v1.py#LegacyAuthClient": 1}


def test_a_grade_on_the_selected_result_attaches_it_with_that_grade(
    page: Page, serve_app, tmp_path
):
    page.set_viewport_size({"width": 1280, "height": 800})
    db = demo_subset(tmp_path / "demo.db", "q03", "q01")
    open_app(page, serve_app(db))
    page.keyboard.press("/")
    selected = page.locator(f"{SEARCH} .gs-current")
    expect(selected).to_contain_text("LegacyAuthClient")
    expect(selected.locator(".gs-now")).to_contain_text("Enter: attach")
    wait_idle(page)
    assert cut_short(page) == []  # "Attach #1", not "A…"
    page.keyboard.press("Escape")
    page.keyboard.press("3")  # the perfect answer, not grade 1
    expect(query_heading(page)).to_have_text("parse ISO-8601 duration")
    wait_idle(page)
    record = golden(db, "q03")
    assert record["judgments"] == {"cirrus/auth/v1.py#LegacyAuthClient": 3}
    assert (record["status"], record["answerable"]) == ("done", True)


def test_a_reopened_finished_query_has_its_first_card_selected_and_a_grade_changes_it(
    page: Page, serve_app, demo_db
):
    open_app(page, serve_app(demo_db))
    page.keyboard.press("u")
    expect(query_heading(page)).to_have_text(SDK_QUERIES[1])
    page.keyboard.press("p")
    expect(query_heading(page)).to_have_text(SDK_QUERIES[0])
    expect(current_rank(page)).to_have_text("#1")
    wait_idle(page)
    page.keyboard.press("2")
    expect(query_heading(page)).to_have_text(SDK_QUERIES[1])
    wait_idle(page)
    record = golden(demo_db, "q01")
    assert record["first_relevant_rank"] == 1 and record["answerable"]
    assert list(record["judgments"].values())[0] == 2


def test_after_u_the_label_page_at_1280x800_says_what_was_done(
    page: Page, serve_app, demo_db, artifacts_dir
):
    page.set_viewport_size({"width": 1280, "height": 800})
    open_app(page, serve_app(demo_db))
    page.keyboard.press("0")  # #1 pressed 0, then U grades the nine others 0 by verdict
    page.keyboard.press("u")
    expect(query_heading(page)).to_have_text(SDK_QUERIES[1])
    page.keyboard.press("p")
    expect(query_heading(page)).to_have_text(SDK_QUERIES[0])
    wait_idle(page)
    page.screenshot(path=artifacts_dir / "label-1280x800-after-u.png")

    cards = page.locator(".gs-cards:not(.gs-hidden) .gs-card")
    expect(cards.nth(0).locator(".gs-label")).to_have_text("0 · not relevant")
    implied = page.locator(".gs-cards:not(.gs-hidden) .gs-label.gs-implied")
    expect(implied).to_have_count(9)
    expect(implied.first).to_have_text("0 · by verdict")
    pressed_look = cards.nth(0).locator(".gs-label").evaluate("e => getComputedStyle(e).fontStyle")
    implied_look = implied.first.evaluate("e => getComputedStyle(e).fontStyle")
    assert pressed_look != implied_look

    header = page.locator(".st-key-gs-header")
    expect(header.locator(".gs-verdict")).to_contain_text("Done: unanswerable")
    expect(header.locator(".gs-verdict")).to_be_in_viewport()
    assert cut_short(page) == []
    with Store(demo_db) as store:
        assert store.query_state("q01", "local")["asserted"] == sorted(
            c["doc_id"] for c in store.candidates("q01")[1:]
        )
