"""Local users: salted scrypt hashes, login checks, the loopback rule and `goldset user add`;
the session cookie's endpoint, the first web user, and error pages."""

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.requests import Request
from streamlit.testing.v1 import AppTest
from streamlit.web.server.app_discovery import discover_asgi_app
from test_app_team import OIDC

from goldset.labeler import signin
from goldset.labeler.accounts import end_session, resume_session, start_session
from goldset.labeler.auth import (
    LOCAL_ANNOTATOR,
    check_login,
    hash_password,
    is_loopback,
    validate_user_name,
    verify_password,
)
from goldset.labeler.cli import cli
from goldset.labeler.launch import APP, DB_ENV, app_environment, check_host, streamlit_command
from goldset.labeler.session_cookie import CLAIM_PATH, COOKIE, claim
from goldset.labeler.store import Store
from goldset.labeler.views import context


def test_password_hash_verifies_the_password_and_nothing_else():
    stored = hash_password("correct horse")
    assert verify_password("correct horse", stored)
    assert not verify_password("correct horse ", stored)
    assert "correct horse" not in stored


def test_same_password_hashes_differently_each_time():
    assert hash_password("password") != hash_password("password")


def test_hash_records_its_scheme_and_cost_so_they_can_change():
    scheme, n, r, p, salt, key = hash_password("password").split("$")
    assert (scheme, n, r, p) == ("scrypt", "16384", "8", "1")


def test_malformed_or_foreign_hash_never_verifies():
    assert not verify_password("pw", "")
    assert not verify_password("pw", "bcrypt$x$y")
    assert not verify_password("pw", "scrypt$16384$8$1$not-base64!$x")


def test_empty_password_is_refused():
    with pytest.raises(ValueError, match="at least 8 characters"):
        hash_password("")


def test_login_of_an_unknown_user_fails():
    assert not check_login("nobody", "pw", None)
    assert check_login("ana", "password", hash_password("password"))


@pytest.mark.parametrize("name", ["", "ana smith", "<b>", "-ana", "a" * 65, LOCAL_ANNOTATOR])
def test_invalid_user_names_are_refused(name):
    with pytest.raises(ValueError):
        validate_user_name(name)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_hosts(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_non_loopback_hosts(host):
    assert not is_loopback(host)


def test_project_without_users_refuses_a_non_loopback_host():
    with pytest.raises(ValueError, match="goldset user add"):
        check_host("0.0.0.0", has_users=False)
    check_host("0.0.0.0", has_users=True)
    check_host("127.0.0.1", has_users=False)


def test_streamlit_command_binds_the_given_host_and_port_without_usage_stats():
    command = streamlit_command("127.0.0.1", 8600)
    assert command[command.index("--server.address") + 1] == "127.0.0.1"
    assert command[command.index("--server.port") + 1] == "8600"
    assert command[command.index("--browser.gatherUsageStats") + 1] == "false"


def test_app_environment_passes_the_absolute_database_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert app_environment("p.db")[DB_ENV] == str(tmp_path / "p.db")
    monkeypatch.setenv(DB_ENV, "elsewhere.db")
    assert DB_ENV not in app_environment(None)


def test_cli_app_refuses_a_public_host_for_a_project_without_users(tmp_path):
    Store(tmp_path / "p.db").close()
    result = CliRunner().invoke(cli, ["app", "--db", str(tmp_path / "p.db"), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to listen on 0.0.0.0" in result.output


def test_cli_user_add_stores_only_a_hash(tmp_path):
    db = tmp_path / "p.db"
    Store(db).close()
    result = CliRunner().invoke(
        cli, ["user", "add", "ana", "--db", str(db)], input="s3cret-pw\ns3cret-pw\n"
    )
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        user = store.annotator("ana")
    assert user["role"] == "annotator"
    assert verify_password("s3cret-pw", user["password_hash"])


def test_cli_user_add_refuses_a_duplicate_and_a_bad_name(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()
    CliRunner().invoke(cli, ["user", "add", "ana", "--db", db, "--password", "x-password"])
    duplicate = CliRunner().invoke(
        cli, ["user", "add", "ana", "--db", db, "--password", "y-password"]
    )
    assert duplicate.exit_code == 2 and "already exists" in duplicate.output
    bad = CliRunner().invoke(cli, ["user", "add", "a b", "--db", db, "--password", "y-password"])
    assert bad.exit_code == 2 and "invalid user name" in bad.output


# --- the session cookie's endpoint ----------------------------------------------------------------


def post_ticket(ticket: str, origin: str | None = "http://127.0.0.1:8501"):
    """POST ``ticket`` to the cookie endpoint as a browser on 127.0.0.1:8501 would."""
    headers = [(b"host", b"127.0.0.1:8501")]
    if origin:
        headers.append((b"origin", origin.encode()))
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "path": CLAIM_PATH,
        "query_string": b"",
        "headers": headers,
    }

    async def receive() -> dict:
        return {"type": "http.request", "body": ticket.encode(), "more_body": False}

    # On a thread of its own: the browser tests' Playwright (sync API) may have left an event
    # loop running on this one, and asyncio.run refuses to start inside a running loop.
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, claim(Request(scope, receive))).result()


@pytest.fixture
def ana_ticket(tmp_path, monkeypatch) -> tuple[Path, str]:
    """A project with user ana who just signed in: (database, the page's one-time ticket)."""
    db = tmp_path / "p.db"
    monkeypatch.setenv(DB_ENV, str(db))
    with Store(db) as store:
        store.add_annotator("ana", password_hash=hash_password("password"))
        return db, start_session(store, "ana").ticket


def test_the_endpoint_trades_a_ticket_for_an_http_only_strict_cookie(ana_ticket):
    db, ticket = ana_ticket
    response = post_ticket(ticket)
    assert response.status_code == 204
    name, value = response.headers["set-cookie"].split(";")[0].split("=", 1)
    assert name == COOKIE and value != ticket
    flags = response.headers["set-cookie"].lower()
    assert "httponly" in flags and "samesite=strict" in flags and "path=/" in flags
    with Store(db) as store:
        assert resume_session(store, token=value).user["name"] == "ana"
    assert post_ticket(ticket).status_code == 403  # a ticket is spent by its first use


@pytest.mark.parametrize("origin", [None, "http://evil.example", "http://127.0.0.1:8502"])
def test_the_endpoint_refuses_other_sites_and_keeps_the_ticket(ana_ticket, origin):
    _, ticket = ana_ticket
    assert post_ticket(ticket, origin=origin).status_code == 403
    assert post_ticket(ticket).status_code == 204


def test_streamlit_run_serves_the_app_with_the_cookie_endpoint():
    # `streamlit run labeler/app.py` (and `goldset app`) serve an st.App found in the script.
    found = discover_asgi_app(APP)
    assert (found.is_asgi_app, found.app_name) == (True, "app")


# --- the first user from the web, and errors ------------------------------------------------------


@pytest.fixture
def lone_project(demo_db, open_in_app) -> Path:
    """A project with queries and no users, opened by the app: it serves the local admin."""
    return open_in_app(demo_db)


def admin_page() -> AppTest:
    at = AppTest.from_file("../labeler/app.py", default_timeout=30).run()
    return at.switch_page("views/admin.py").run()


def field(at: AppTest, label: str):
    return next(widget for widget in at.text_input if widget.label == label)


def click(at: AppTest, label: str) -> AppTest:
    return next(button for button in at.button if button.label == label).click().run()


def page_text(at: AppTest) -> str:
    return "\n".join(
        [str(html.proto.body) for html in at.get("html")] + [e.value for e in at.error]
    )


def test_the_first_user_from_the_web_is_the_local_admins_own_admin_account(lone_project):
    at = admin_page()
    assert "Add user" not in [button.label for button in at.button]  # not before the admin
    assert "first create your own admin account" in page_text(at)
    field(at, "Your user name").input("alan")
    field(at, "Your password").input("password")
    field(at, "Your password again").input("password")
    at = click(at, "Create my admin account")
    assert "Signed in as alan (admin)" in page_text(at)
    with Store(lone_project) as store:
        assert store.annotator("alan")["role"] == "admin"
        assert verify_password("password", store.annotator("alan")["password_hash"])
    field(at, "User name").input("ana")
    field(at, "Password").input("ana-password")
    at = click(at, "Add user")
    assert "Added annotator ana." in page_text(at)
    assert "Signed in as alan (admin)" in page_text(at)  # still on the Admin page


def test_the_first_admin_account_needs_a_valid_name_and_the_same_password_twice(lone_project):
    at = admin_page()
    for name, password, again in [
        ("alan", "password", "passwore"),
        (LOCAL_ANNOTATOR, "password", "password"),
    ]:
        field(at, "Your user name").input(name)
        field(at, "Your password").input(password)
        field(at, "Your password again").input(again)
        at = click(at, "Create my admin account")
        assert "Not done" in page_text(at)
    with Store(lone_project) as store:
        assert store.annotators() == []


def test_an_unexpected_error_shows_an_id_never_a_traceback(lone_project, monkeypatch, caplog):
    def broken() -> dict:
        raise RuntimeError(f"secret detail in {lone_project}")

    monkeypatch.setattr(context, "require_user", broken)
    at = AppTest.from_file("../labeler/app.py", default_timeout=30).run()
    assert not at.exception
    [message] = [error.value for error in at.error]
    error_id = re.search(r"error ([0-9a-f]{8})", message).group(1)
    assert str(lone_project) not in message and "secret" not in message
    assert error_id in caplog.text and "secret detail" in caplog.text  # the log keeps it


# --- sessions in the app --------------------------------------------------------------------------


@pytest.fixture
def ana_project(lone_project) -> Path:
    with Store(lone_project) as store:
        store.add_annotator("ana", password_hash=hash_password("password"))
        store.add_annotator("sso@example.com")
    return lone_project


def tab(session_id: int | None = None, **user) -> AppTest:
    """A tab of a browser: resumed from the browser's session ``session_id`` if given (as a
    reload or a new tab is), signed in through the identity provider as ``user`` if given."""
    at = AppTest.from_file("../labeler/app.py", default_timeout=30)
    if session_id is not None:
        at.session_state[signin.SESSION_KEY] = session_id
    if user:
        at.secrets.update(OIDC)
        at.user.update({"is_logged_in": True, "email_verified": True, **user})
    return at.run()


def test_a_password_sign_in_opens_a_session_and_logout_ends_it_in_every_tab(ana_project):
    first = tab()
    field(first, "User name").input("ana")
    field(first, "Password").input("password")
    first = click(first, "Log in")
    session_id = first.session_state[signin.SESSION_KEY]
    second = tab(session_id)
    assert "Labelling as ana" in page_text(second)
    click(first, "Log out")
    second.run()
    assert [button.label for button in second.button] == ["Log in"]
    with Store(ana_project) as store:
        assert store.browser_session(session_id=session_id)["revoked_at"] is not None


def test_an_identity_provider_sign_in_opens_a_session_and_its_end_signs_the_tab_out(
    ana_project,
):
    at = tab(email="sso@example.com")
    assert "Labelling as sso@example.com" in page_text(at)
    session_id = at.session_state[signin.SESSION_KEY]
    with Store(ana_project) as store:
        assert store.browser_session(session_id=session_id)["annotator"] == "sso@example.com"
        end_session(store, session_id)  # logged out in another tab of the browser
    at.run()  # the provider's sign-in is still cached in this tab: it does not sign in again
    assert "Labelling as" not in page_text(at) and "Log in" in [b.label for b in at.button]
