"""Loopback means loopback: the server answers only requests addressed to a loopback name or to
a host the admin named, its websocket and session-cookie endpoint only from the app's own page,
and never Streamlit's metrics; ``goldset app --allow-host NAME`` names the hosts."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette

from goldset.labeler import hosts, launch, session_cookie
from goldset.labeler.accounts import start_session
from goldset.labeler.auth import hash_password
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

NAMED = {"labels.test"}


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8501", "127.3.2.1", "localhost:8501", "LOCALHOST", "[::1]:8501", "labels.test"],
)
def test_loopback_names_and_the_named_hosts_are_answered(host):
    assert hosts.is_allowed_host(host, NAMED)


@pytest.mark.parametrize(
    "host",
    [
        "evil.test:8501",  # a rebinding name that resolves to 127.0.0.1
        "app.localhost",  # not every resolver keeps *.localhost on loopback
        "localhost.evil.test",
        "127.0.0.1.evil.test",
        "labels.test.evil.test",
        "0.0.0.0:8501",
        "a@127.0.0.1:8501",
        "127.0.0.1:99999",
        "127.0.0.1/x",
        "[::1",
        "",
        None,
    ],
)
def test_any_other_host_is_refused(host):
    assert not hosts.is_allowed_host(host, NAMED)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("Labels.Example.org.", "labels.example.org"), ("10.0.0.5", "10.0.0.5"), ("[::1]", "::1")],
)
def test_a_named_host_is_a_name_or_an_address(name, expected):
    assert hosts.host_name(name) == expected


@pytest.mark.parametrize(
    "name", ["*", "*.example.org", "labels.test:8501", "http://labels.test", "", "a b", "-a.test"]
)
def test_a_named_host_is_never_a_pattern_a_port_or_a_url(name):
    with pytest.raises(ValueError, match="not a host name"):
        hosts.host_name(name)


def test_the_server_reads_the_named_hosts_from_its_environment():
    environ = {hosts.ALLOWED_HOSTS_ENV: " Labels.Test , *, b.test:80,10.0.0.5,"}
    assert hosts.named_hosts(environ) == {"labels.test", "10.0.0.5"}
    assert hosts.named_hosts({}) == frozenset()  # a plain `streamlit run`: loopback only


# --- the middleware, in front of the cookie endpoint ----------------------------------------------


def call(app, kind: str, path: str, headers: dict | list, body: bytes = b"") -> list[dict]:
    """The ASGI messages ``app`` sends for one request (``kind`` "http" or "websocket");
    ``headers`` as a dict, or as (name, value) pairs to send one twice."""
    pairs = headers.items() if isinstance(headers, dict) else headers
    scope = {
        "type": kind,
        "method": "POST" if body else "GET",
        "scheme": "http" if kind == "http" else "ws",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(name.lower().encode(), value.encode()) for name, value in pairs],
    }
    sent: list[dict] = []
    first = {"type": "http.request", "body": body, "more_body": False}
    incoming = [first] if kind == "http" else [{"type": "websocket.connect"}]

    async def receive() -> dict:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    # On a thread of its own: the browser tests' Playwright may have left a loop running here.
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, app(scope, receive, send)).result()
    return sent


class Recorder:
    """An inner app that answers 200 (or accepts the websocket), and records that it ran."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        self.requests.append(scope["path"])
        if scope["type"] == "websocket":
            await send({"type": "websocket.accept"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"the app"})


def status(messages: list[dict]) -> int:
    return messages[0]["status"]


def test_a_request_for_a_foreign_host_never_reaches_the_app():
    inner = Recorder()
    guard = hosts.HostGuard(inner, named=NAMED)
    refused = call(guard, "http", "/", {"host": "evil.test:8501"})
    assert status(refused) == 403 and inner.requests == []
    assert status(call(guard, "http", "/", {"host": "127.0.0.1:8501"})) == 200
    assert status(call(guard, "http", "/", {"host": "labels.test"})) == 200
    assert inner.requests == ["/", "/"]


def test_a_request_without_a_host_or_with_two_is_refused():
    inner = Recorder()
    guard = hosts.HostGuard(inner)
    twice = [("host", "127.0.0.1:8501"), ("host", "evil.test:8501")]
    assert status(call(guard, "http", "/", twice)) == 403
    assert status(call(guard, "http", "/", {})) == 403
    assert inner.requests == []


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("evil.test:8501", "http://evil.test:8501"),  # DNS rebinding: same-origin, wrong name
        ("127.0.0.1:8501", "http://evil.test"),  # another site's page
        ("127.0.0.1:8501", "http://localhost:3000"),  # another local app's page
        ("127.0.0.1:8501", "null"),
        ("127.0.0.1:8501", None),
    ],
)
def test_the_websocket_is_refused_to_any_other_page(host, origin):
    inner = Recorder()
    headers = {"host": host} | ({"origin": origin} if origin else {})
    sent = call(hosts.HostGuard(inner, named=NAMED), "websocket", "/_stcore/stream", headers)
    assert sent == [{"type": "websocket.close", "code": hosts.WEBSOCKET_CLOSE_POLICY}]
    assert inner.requests == []


@pytest.mark.parametrize("host", ["127.0.0.1:8501", "labels.test"])
def test_the_websocket_opens_for_the_apps_own_page(host):
    headers = {"host": host, "origin": f"http://{host}"}
    sent = call(hosts.HostGuard(Recorder(), named=NAMED), "websocket", "/_stcore/stream", headers)
    assert sent == [{"type": "websocket.accept"}]


@pytest.mark.parametrize("path", ["/_stcore/metrics", "/_stcore/metrics/", "/base/_stcore/metrics"])
def test_streamlits_metrics_are_closed_even_on_loopback(path):
    inner = Recorder()
    assert status(call(hosts.HostGuard(inner), "http", path, {"host": "127.0.0.1:8501"})) == 404
    assert inner.requests == []


@pytest.fixture
def ticket(tmp_path, monkeypatch) -> str:
    """A project with user ana who just signed in: the page's one-time ticket."""
    db = tmp_path / "p.db"
    monkeypatch.setenv(launch.DB_ENV, str(db))
    with Store(db) as store:
        store.add_annotator("ana", password_hash=hash_password("ana-secret-pw"))
        return start_session(store, "ana").ticket


def claim(host: str, ticket: str) -> int:
    """The status of the page's ticket posted to the cookie endpoint, alone (no middleware)."""
    endpoint = Starlette(routes=session_cookie.routes())
    headers = {"host": host, "origin": f"http://{host}"}
    return status(call(endpoint, "http", session_cookie.CLAIM_PATH, headers, ticket.encode()))


def test_the_cookie_endpoint_itself_refuses_a_rebinding_name(ticket):
    assert claim("evil.test:8501", ticket) == 403
    assert claim("127.0.0.1:8501", ticket) == 204  # the ticket was kept


def test_the_cookie_endpoint_serves_a_named_host(ticket, monkeypatch):
    assert claim("labels.test", ticket) == 403
    monkeypatch.setenv(hosts.ALLOWED_HOSTS_ENV, "labels.test")
    assert claim("labels.test", ticket) == 204


# --- goldset app --allow-host ---------------------------------------------------------------------


def test_the_app_answers_to_the_named_hosts_and_its_own_address():
    assert launch.allowed_hosts("0.0.0.0", ["Labels.Test", "10.0.0.5"]) == [
        "labels.test",
        "10.0.0.5",
    ]
    assert launch.allowed_hosts("10.0.0.5", []) == ["10.0.0.5"]
    assert launch.allowed_hosts("127.0.0.1", []) == []


def test_the_server_gets_the_named_hosts_and_inherits_none(monkeypatch):
    monkeypatch.setenv(hosts.ALLOWED_HOSTS_ENV, "inherited.test")
    assert launch.app_environment(None)[hosts.ALLOWED_HOSTS_ENV] == ""
    environment = launch.app_environment(None, ["labels.test", "10.0.0.5"])
    assert hosts.named_hosts(environment) == {"labels.test", "10.0.0.5"}


def test_a_project_without_users_answers_to_no_named_host():
    with pytest.raises(ValueError, match="goldset user add"):
        launch.check_host("127.0.0.1", has_users=False, named_hosts=["labels.test"])
    launch.check_host("127.0.0.1", has_users=True, named_hosts=["labels.test"])


def test_cli_app_refuses_a_named_host_that_is_not_a_host_name(tmp_path):
    Store(tmp_path / "p.db").close()
    arguments = ["app", "--db", str(tmp_path / "p.db"), "--allow-host", "*.example.org"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 2
    assert "--allow-host" in result.output and "not a host name" in result.output
    assert "Traceback" not in result.output


def test_cli_app_refuses_a_named_host_for_a_project_without_users(tmp_path):
    Store(tmp_path / "p.db").close()
    arguments = ["app", "--db", str(tmp_path / "p.db"), "--allow-host", "labels.test"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 2
    assert "refusing to answer to labels.test" in result.output
