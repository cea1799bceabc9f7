"""An annotator finds a query she finished in "My queries" and opens it in the label page, in
a real browser, with the keyboard: the list holds her own queries only, with her verdicts."""

from __future__ import annotations

from e2e_support import query_heading, wait_idle
from helpers.team import team_project, type_keys
from playwright.sync_api import Page, expect
from test_e2e_team import sign_in

from goldset.labeler.store import Store


def test_an_annotator_opens_a_done_query_from_her_list(page: Page, serve_app, tmp_path):
    db = team_project(tmp_path / "team.db")
    with Store(db) as store:  # q1-q4 are ana's, q5-q6 bob's; ana finished q1 and q2
        store.assign_plan({"ana": ["q1", "q2", "q3", "q4"], "bob": ["q5", "q6"]})
        type_keys(store, "ana", "q1", "1")
        type_keys(store, "ana", "q2", "01")
    url = serve_app(db)
    page.set_viewport_size({"width": 1280, "height": 800})
    sign_in(page, url, "ana")
    expect(query_heading(page)).to_have_text("question 3")  # where she left off

    page.get_by_test_id("stSidebarNav").get_by_role("link", name="My queries").click()
    wait_idle(page)
    table = page.get_by_test_id("stDataFrame")
    expect(table).to_be_visible()
    expect(page.get_by_text("Queries 1–4 of 4")).to_be_visible()
    assert "question 5" not in page.get_by_test_id("stMain").inner_text()

    chooser = page.get_by_role("combobox", name="Query to open")
    chooser.focus()
    chooser.press_sequentially("q2")
    chooser.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Open in the label page").focus()
    page.keyboard.press("Enter")
    wait_idle(page)

    expect(query_heading(page)).to_have_text("question 2")
    expect(page.locator(".gs-cards:not(.gs-hidden) .gs-card")).not_to_have_count(0)
    assert "?query=" not in page.url  # the link is dropped once opened: a reload resumes
