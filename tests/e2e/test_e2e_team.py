"""Team labelling in a real browser: sign-in and roles, blind overlap between two annotators,
and the reviewer's agreement figures and adjudication queue on planted disagreements.

A signed-in session asks for another page as the browser's back/forward buttons do (history
state + popstate): the server then decides, for that session, what runs.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from e2e_support import current_rank, progress_text, query_heading, wait_idle
from helpers.team import ANNOTATORS, PASSWORD, PLANTED_KAPPA, PLANTED_KEYS, team_project
from playwright.sync_api import Browser, Page, expect

from goldset.labeler.cli import cli
from goldset.labeler.store import Store


@pytest.fixture
def team(serve_app, tmp_path):
    """The app (``url``) on the planted team project (``db``): all six queries dealt to ana
    and bob (overlap 1), nothing labelled yet."""
    db = team_project(tmp_path / "team.db")
    result = CliRunner().invoke(cli, ["assign", "--db", str(db), "--overlap", "1"])
    assert result.exit_code == 0, result.output
    return SimpleNamespace(url=serve_app(db), db=db)


def sign_in(page: Page, url: str, name: str) -> None:
    """Open ``url`` and sign in through the login form, then wait for the page to settle."""
    page.goto(url)
    page.get_by_label("User name").fill(name)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_label("User name")).to_have_count(0)
    wait_idle(page)


def ask_for(page: Page, path: str) -> None:
    """Ask for the page at ``path`` within the current session, as browser navigation does."""
    page.evaluate(
        "path => { window.history.pushState({}, '', '/' + path);"
        " window.dispatchEvent(new PopStateEvent('popstate')); }",
        path,
    )
    page.wait_for_timeout(300)  # let the request reach the server before waiting for idle
    wait_idle(page)


def main_text(page: Page) -> str:
    return page.get_by_test_id("stMain").inner_text()


def test_without_sign_in_every_url_shows_only_the_login(page: Page, team):
    for path in ("", "review", "admin", "dashboard"):
        page.goto(f"{team.url}/{path}")
        expect(page.get_by_label("User name")).to_be_visible()
        wait_idle(page)
        expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
        assert "question" not in main_text(page) and "Adjudication" not in main_text(page)


def test_annotator_asking_for_reviewer_or_admin_pages_gets_the_label_page(page: Page, team):
    sign_in(page, team.url, "ana")
    nav = page.get_by_test_id("stSidebarNav")  # an annotator's pages: Label and My queries
    expect(nav.get_by_role("link")).to_have_count(2)
    expect(nav.get_by_role("link")).to_contain_text(["Label", "My queries"])
    for path in ("review", "admin", "dashboard"):
        ask_for(page, path)
        expect(query_heading(page)).to_have_text("question 1")
        assert "Adjudication queue" not in main_text(page) and "Add a user" not in main_text(page)
        assert page.url == f"{team.url}/"


def test_reviewer_gets_the_review_page_but_not_admin(page: Page, team):
    sign_in(page, team.url, "rita")
    nav = page.get_by_test_id("stSidebarNav")
    expect(nav).to_contain_text("Review")
    expect(nav).not_to_contain_text("Admin")
    ask_for(page, "admin")
    assert "Add a user" not in main_text(page)
    ask_for(page, "review")
    expect(page.get_by_text("Adjudication queue")).to_be_visible()


def label_planted(page: Page, name: str) -> None:
    """Type the annotator's planted keys, query by query, waiting for each to complete."""
    keys = PLANTED_KEYS[name]
    for number, query_keys in enumerate(keys.values(), start=1):
        expect(query_heading(page)).to_have_text(f"question {number}")
        page.keyboard.type(query_keys, delay=40)
    expect(progress_text(page)).to_contain_text("6 of 6 queries done")
    wait_idle(page)


def test_blind_overlap_then_agreement_queue_and_adjudication_match_the_plant(
    browser: Browser, team, tmp_path, artifacts_dir
):
    pages = {name: browser.new_context().new_page() for name in ANNOTATORS}
    for name, page in pages.items():
        sign_in(page, team.url, name)

    # Blind: ana judges q1; bob's freshly read page shows q1 as nobody had touched it.
    pages["ana"].keyboard.type("1")
    expect(query_heading(pages["ana"])).to_have_text("question 2")
    wait_idle(pages["ana"])
    pages["bob"].reload()  # still signed in (the session cookie)
    wait_idle(pages["bob"])
    expect(query_heading(pages["bob"])).to_have_text("question 1")
    expect(current_rank(pages["bob"])).to_have_text("#1")
    expect(pages["bob"].locator(".gs-judged")).to_have_count(0)
    expect(progress_text(pages["bob"])).to_contain_text("0 of 6 queries done")

    label_planted(pages["bob"], "bob")
    pages["ana"].keyboard.type("".join(list(PLANTED_KEYS["ana"].values())[1:]), delay=40)
    expect(progress_text(pages["ana"])).to_contain_text("6 of 6 queries done", timeout=20_000)
    wait_idle(pages["ana"])

    reviewer = browser.new_context().new_page()
    sign_in(reviewer, team.url, "rita")
    reviewer.get_by_test_id("stSidebarNav").get_by_text("Review").click()
    kappa = reviewer.get_by_test_id("stMetric").first
    expect(kappa).to_contain_text("kappa (relevant or not)")
    expect(kappa).to_contain_text(f"{PLANTED_KAPPA:.3f}")
    expect(reviewer.get_by_text("Adjudication queue · 3 waiting")).to_be_visible()
    chooser = reviewer.get_by_role("combobox", name="Disagreement to decide")
    expect(chooser).to_have_value("1 · q5 · question 5 · RR@10 gap 0.75 · waiting")
    expect(reviewer.locator(".gs-query-text").first).to_have_text("question 5")
    expect(reviewer.locator(".gs-now", has_text="disputed").first).to_be_visible()
    reviewer.screenshot(path=artifacts_dir / "review-queue.png", full_page=True)
    reviewer.get_by_role("button", name="Accept bob's label").click()
    expect(reviewer.get_by_text("q5: decided for bob's label.")).to_be_visible()
    expect(reviewer.get_by_text("Adjudication queue · 2 waiting")).to_be_visible()
    expect(chooser).to_have_value("1 · q2 · question 2 · RR@10 gap 0.50 · waiting")
    wait_idle(reviewer)

    golden = tmp_path / "golden.jsonl"
    export = ["export", "--db", str(team.db), "--format", "jsonl", "--out", str(golden)]
    assert CliRunner().invoke(cli, export).exit_code == 0
    records = {r["query_id"]: r for r in map(json.loads, golden.read_text().splitlines())}
    q5 = records["q5"]
    assert q5["judgments"] == {"q5-d1": 1} and q5["first_relevant_rank"] == 1
    assert q5["labels"]["ana"]["first_relevant_rank"] == 4
    assert q5["labels"]["bob"]["first_relevant_rank"] == 1
    assert (q5["adjudication"]["reviewer"], q5["adjudication"]["adopted"]) == ("rita", "bob")
    assert set(records["q3"]["labels"]) == {"ana", "bob"} and "adjudication" not in records["q3"]
    with Store(team.db) as store:  # a decision is not a label: the reviewer wrote no event
        assert set(store.events_frame()["annotator"]) == {"ana", "bob"}
