"""Sign-in that lasts, in a real browser: a reload and a new tab stay signed in, logout ends it
in every tab, and a removed user's open tab stops writing."""

from __future__ import annotations

import pytest
from e2e_support import wait_idle, wait_keys_ready
from playwright.sync_api import BrowserContext, Page, expect

from goldset.labeler.auth import hash_password
from goldset.labeler.live import label_link
from goldset.labeler.session_cookie import COOKIE
from goldset.labeler.store import Store

PASSWORD = "ana-secret"


@pytest.fixture
def url(serve_app, demo_db) -> str:
    """The app on the demo project, with an annotator, ana, and an admin without a password."""
    with Store(demo_db) as store:
        store.add_annotator("ana", password_hash=hash_password(PASSWORD))
        store.add_annotator("alan", role="admin")
    return serve_app(demo_db)


def session_cookie(context: BrowserContext, timeout: float = 15.0) -> dict:
    """The browser's session cookie, once the page has claimed it after the sign-in."""
    page = context.pages[0]
    for _ in range(int(timeout * 10)):
        cookies = [cookie for cookie in context.cookies() if cookie["name"] == COOKIE]
        if cookies:
            return cookies[0]
        page.wait_for_timeout(100)
    raise AssertionError("the page never received its session cookie")


def log_in(page: Page, url: str) -> None:
    page.goto(url)
    page.get_by_label("User name").fill("ana")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    session_cookie(page.context)
    wait_keys_ready(page)


def signed_in(page: Page):
    return page.get_by_text("Labelling as ana")


def login_form(page: Page):
    return page.get_by_role("button", name="Log in")


def judgements(db_path) -> int:
    with Store(db_path) as store:
        return int((store.events_frame()["annotator"] == "ana").sum())


def test_the_session_cookie_is_http_only_and_same_site_strict(page: Page, url: str):
    log_in(page, url)
    cookie = session_cookie(page.context)
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["path"]) == (True, "Strict", "/")
    assert page.evaluate("document.cookie").find(COOKIE) == -1  # no script can read it


def test_a_reload_and_a_new_tab_stay_signed_in(page: Page, url: str):
    log_in(page, url)
    page.reload()
    wait_keys_ready(page)
    expect(signed_in(page)).to_be_visible()
    other = page.context.new_page()  # as a dashboard's "open on the label page" link does
    other.goto(f"{url}/{label_link('q02')[2:]}")
    wait_keys_ready(other)
    expect(signed_in(other)).to_be_visible()
    expect(login_form(other)).to_have_count(0)


def test_logout_signs_out_every_tab_and_their_presses_write_nothing(page: Page, url: str, demo_db):
    log_in(page, url)
    other = page.context.new_page()
    other.goto(url)
    wait_keys_ready(other)
    page.get_by_role("button", name="Log out").click()
    wait_idle(page)
    expect(login_form(page)).to_be_visible()
    other.keyboard.press("1")  # the other tab still shows the label page: refused,
    expect(login_form(other)).to_be_visible()  # and the tab shows the sign-in form at once
    assert judgements(demo_db) == 0
    other.reload()
    wait_idle(other)
    expect(login_form(other)).to_be_visible()  # its cookie names the ended session


def test_a_removed_users_open_tab_stops_writing(page: Page, url: str, demo_db):
    log_in(page, url)
    page.keyboard.press("0")
    for _ in range(100):  # until the press is stored
        if judgements(demo_db):
            break
        page.wait_for_timeout(100)
    assert judgements(demo_db) == 1
    with Store(demo_db) as store:
        store.remove_annotator("ana")
    page.keyboard.press("0")
    expect(login_form(page)).to_be_visible()  # refused: the tab shows the sign-in form
    assert judgements(demo_db) == 1
    page.reload()
    wait_idle(page)
    expect(login_form(page)).to_be_visible()
