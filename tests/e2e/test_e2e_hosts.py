"""Loopback means loopback, against real servers: a name that an attacker points at 127.0.0.1
(DNS rebinding) gets nothing of the app, over HTTP, over the websocket and in Chromium, while
the loopback names and the hosts named with ``goldset app --allow-host`` get the app."""

from __future__ import annotations

import http.client
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from e2e_support import free_port, serving, streamlit_app, wait_keys_ready
from playwright.sync_api import Browser, BrowserType, Page, expect

from goldset.labeler.auth import hash_password
from goldset.labeler.hosts import ALLOWED_HOSTS_ENV
from goldset.labeler.launch import APP
from goldset.labeler.store import Store

# Chromium resolves these names to 127.0.0.1, as an attacker's DNS would.
REBINDING = "--host-resolver-rules=MAP evil.test 127.0.0.1, MAP labels.test 127.0.0.1"


def get(port: int, host: str, path: str = "/", headers: dict[str, str] | None = None) -> int:
    """The status of a GET to 127.0.0.1:``port`` that names ``host`` in its Host header."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": host, **(headers or {})})
        return connection.getresponse().status
    finally:
        connection.close()


def websocket_upgrade(port: int, host: str, origin: str) -> int:
    """The status of a websocket upgrade to the app's stream: 101 when it opens."""
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Origin": origin,
    }
    return get(port, host, "/_stcore/stream", upgrade)


@pytest.fixture
def lone_url(serve_app, demo_db) -> str:
    """``streamlit run labeler/app.py`` on 127.0.0.1, on a project with no users."""
    return serve_app(demo_db)


def port_of(url: str) -> int:
    return urlsplit(url).port


def test_streamlit_run_answers_loopback_names_and_refuses_a_rebinding_name(lone_url):
    port = port_of(lone_url)
    assert get(port, f"127.0.0.1:{port}") == 200
    assert get(port, f"localhost:{port}") == 200
    assert get(port, f"evil.test:{port}") == 403
    assert get(port, f"evil.test:{port}", "/admin") == 403


def test_the_websocket_refuses_a_rebinding_name_and_opens_for_the_apps_own_page(lone_url):
    port = port_of(lone_url)
    assert websocket_upgrade(port, f"evil.test:{port}", f"http://evil.test:{port}") == 403
    assert websocket_upgrade(port, f"127.0.0.1:{port}", f"http://localhost:{port}") == 403
    assert websocket_upgrade(port, f"127.0.0.1:{port}", f"http://127.0.0.1:{port}") == 101


def test_streamlits_metrics_are_closed(lone_url):
    port = port_of(lone_url)
    assert get(port, f"127.0.0.1:{port}", "/_stcore/metrics") == 404
    assert get(port, f"127.0.0.1:{port}", "/_stcore/health") == 200


@pytest.fixture
def rebinding_browser(
    browser_type: BrowserType, browser_type_launch_args: dict
) -> Iterator[Browser]:
    """The tests' Chromium, for which evil.test and labels.test resolve to 127.0.0.1."""
    args = [*browser_type_launch_args["args"], REBINDING]
    browser = browser_type.launch(**{**browser_type_launch_args, "args": args})
    yield browser
    browser.close()


def test_a_page_on_a_rebinding_name_never_gets_the_app(rebinding_browser: Browser, lone_url):
    port = port_of(lone_url)
    page = rebinding_browser.new_page()
    for path in ("", "admin"):
        response = page.goto(f"http://evil.test:{port}/{path}")
        assert response.status == 403
        expect(page.get_by_test_id("stApp")).to_have_count(0)
        expect(page.get_by_text("Create my admin account")).to_have_count(0)
    page.goto(f"http://127.0.0.1:{port}/admin")  # the same browser, at the app's own address
    expect(page.get_by_role("button", name="Create my admin account")).to_be_visible()


def test_a_named_host_is_refused_while_the_project_has_no_users(
    rebinding_browser: Browser, demo_db
):
    # `goldset app` refuses to start so; a plain `streamlit run` or the last user removed
    # while it is served must not make a visitor on that name the local admin either.
    environment = {"GOLDSET_DB": str(demo_db), ALLOWED_HOSTS_ENV: "labels.test"}
    with streamlit_app(APP, environment) as url:
        page = rebinding_browser.new_page()
        page.goto(f"http://labels.test:{port_of(url)}/admin")
        expect(page.get_by_text("This project has no users")).to_be_visible()
        expect(page.get_by_text("Create my admin account")).to_have_count(0)


@contextmanager
def goldset_app(db: Path, *options: str) -> Iterator[int]:
    """Run ``goldset app --db DB OPTIONS`` on a free port; yield the port."""
    port = free_port()
    command = [sys.executable, "-m", "goldset.labeler.cli", "app", "--db", str(db), "--no-open"]
    with serving([*command, "--port", str(port), *options], port):
        yield port


@pytest.fixture
def team_db(demo_db) -> Path:
    with Store(demo_db) as store:
        store.add_annotator("ana", password_hash=hash_password("ana-secret-pw"))
    return demo_db


def test_goldset_app_answers_a_named_host_and_refuses_another(team_db, rebinding_browser):
    with goldset_app(team_db, "--allow-host", "labels.test") as port:
        assert get(port, f"labels.test:{port}") == 200
        assert get(port, f"127.0.0.1:{port}") == 200
        assert get(port, f"other.test:{port}") == 403
        origin = f"http://labels.test:{port}"
        assert websocket_upgrade(port, f"labels.test:{port}", origin) == 101
        page: Page = rebinding_browser.new_page()
        assert page.goto(f"http://evil.test:{port}/").status == 403
        page.goto(f"http://labels.test:{port}/")
        expect(page.get_by_role("button", name="Log in")).to_be_visible()  # the app, signed out
        page.get_by_label("User name").fill("ana")
        page.get_by_label("Password", exact=True).fill("ana-secret-pw")
        page.get_by_role("button", name="Log in").click()
        wait_keys_ready(page)  # signed in: the cookie endpoint served the named host
        expect(page.get_by_text("Labelling as ana")).to_be_visible()
