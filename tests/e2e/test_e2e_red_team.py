"""Red team, in Chromium: another site's page never gets the app, not even inside a frame.

The Host and Origin checks keep a rebinding name away from the app, but a page on any other
origin (``http://evil.test:PORT``, whose name resolves to this machine, or another local web
app) can frame the app at its own loopback address: the frame asks for ``Host: 127.0.0.1``,
and its websocket comes from the app's own origin. A project without users then serves the
framed app as its local admin, under the other page's overlay (clickjacking). The server
forbids being framed by any page but its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from e2e_support import wait_keys_ready
from playwright.sync_api import Browser, BrowserType, Page, expect

# Chromium resolves this name to 127.0.0.1, as an attacker's DNS would.
EVIL_NAME = "--host-resolver-rules=MAP evil.test 127.0.0.1"


@pytest.fixture
def lone_url(serve_app, demo_db) -> str:
    """``streamlit run labeler/app.py`` on 127.0.0.1, on a project with no users."""
    return serve_app(demo_db)


@pytest.fixture
def framing_port(lone_url: str) -> Iterator[int]:
    """A web server of another origin whose page frames the app's admin page."""
    framing = f'<iframe src="{lone_url}/admin" width="900" height="700"></iframe>'.encode()

    class FramingPage(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(framing)

        def log_message(self, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), FramingPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def evil_browser(browser_type: BrowserType, browser_type_launch_args: dict) -> Iterator[Browser]:
    """The tests' Chromium, for which evil.test resolves to 127.0.0.1."""
    args = [*browser_type_launch_args["args"], EVIL_NAME]
    browser = browser_type.launch(**{**browser_type_launch_args, "args": args})
    yield browser
    browser.close()


@pytest.mark.parametrize("framing_host", ["evil.test", "localhost"])
def test_another_origins_page_cannot_frame_the_app(
    evil_browser: Browser, framing_port: int, framing_host: str
):
    page = evil_browser.new_page()
    page.goto(f"http://{framing_host}:{framing_port}/", wait_until="load")  # the frame's too
    [framed] = page.main_frame.child_frames
    # Chromium refused to show the app: the frame holds its error page (the app otherwise).
    framed.wait_for_url(lambda url: urlsplit(url).scheme == "chrome-error")
    expect(page.frame_locator("iframe").get_by_text("Create my admin account")).to_have_count(0)


def test_the_app_at_its_own_address_still_works(page: Page, lone_url: str):
    page.goto(f"{lone_url}/")
    wait_keys_ready(page)  # the label page's key listener (a component) runs
    page.goto(f"{lone_url}/admin")
    expect(page.get_by_role("button", name="Create my admin account")).to_be_visible()
