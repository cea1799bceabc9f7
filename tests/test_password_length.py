"""A real password: at least 8 characters (NIST SP 800-63B), one rule (labeler.auth) that the
CLI's `user add` and `user passwd` and the admin page's three password forms all refuse by."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from test_app_auth import admin_page, click, field, lone_project, page_text  # noqa: F401

from goldset.labeler.auth import (
    MIN_PASSWORD_LENGTH,
    hash_password,
    validate_password,
    verify_password,
)
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

REFUSAL = "a password needs at least 8 characters"
SHORT = "a" * (MIN_PASSWORD_LENGTH - 1)
LONG_ENOUGH = "a" * MIN_PASSWORD_LENGTH


def test_the_rule_is_eight_characters_and_hashing_keeps_to_it():
    assert MIN_PASSWORD_LENGTH == 8  # NIST SP 800-63B; the README's figure
    assert validate_password(LONG_ENOUGH) == LONG_ENOUGH
    for password in ("", "a", SHORT):
        with pytest.raises(ValueError, match=REFUSAL):
            validate_password(password)
        with pytest.raises(ValueError, match=REFUSAL):
            hash_password(password)


@pytest.fixture
def admin_db(make_project) -> str:
    """A project whose one user, the admin ana, has the password "ana password"; its path as
    the command line gives it."""
    return str(make_project(users={"ana": "admin"}, passwords={"ana": "ana password"}))


def goldset(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input)


def refused(result) -> bool:
    """A refusal as one line, exit 2, no traceback."""
    return (result.exit_code, result.output) == (2, f"Error: {REFUSAL}\n")


@pytest.mark.parametrize("password", ["a", SHORT])
def test_cli_user_add_refuses_a_short_password(admin_db, password):
    assert refused(goldset("user", "add", "bob", "--password", password, "--db", admin_db))
    with Store(admin_db) as store:
        assert store.annotator("bob") is None


def test_cli_user_passwd_refuses_a_short_password_and_keeps_the_old_one(admin_db):
    assert refused(goldset("user", "passwd", "ana", "--password", "a", "--db", admin_db))
    with Store(admin_db) as store:
        assert verify_password("ana password", store.annotator("ana")["password_hash"])


def test_cli_refuses_a_short_password_typed_at_the_prompt(admin_db):
    result = goldset("user", "add", "bob", "--db", admin_db, input=f"{SHORT}\n{SHORT}\n")
    assert result.exit_code == 2 and result.output.endswith(f"Error: {REFUSAL}\n")
    assert "at least 8 characters" in result.output.splitlines()[0]  # the prompt says so


def test_cli_takes_a_password_of_eight_characters(admin_db):
    added = goldset("user", "add", "bob", "--password", LONG_ENOUGH, "--db", admin_db)
    assert added.exit_code == 0, added.output
    with Store(admin_db) as store:
        assert verify_password(LONG_ENOUGH, store.annotator("bob")["password_hash"])


# --- the admin page -------------------------------------------------------------------------------


def test_the_first_admin_account_needs_a_real_password(lone_project):  # noqa: F811
    at = admin_page()
    field(at, "Your user name").input("alan")
    field(at, "Your password").input(SHORT)
    field(at, "Your password again").input(SHORT)
    at = click(at, "Create my admin account")
    assert f"Not done: {REFUSAL}" in page_text(at)
    with Store(lone_project) as store:
        assert store.annotators() == []


def test_the_admin_page_refuses_a_short_password_for_a_new_or_changed_user(
    lone_project,  # noqa: F811
):
    with Store(lone_project) as store:
        store.add_annotator("alan", role="admin", password_hash=hash_password("alan password"))
    at = admin_page()  # under AppTest the lone project's local admin is not signed out: sign in
    field(at, "User name").input("alan")
    field(at, "Password").input("alan password")
    at = click(at, "Log in").switch_page("views/admin.py").run()
    field(at, "User name").input("bob")
    field(at, "Password").input(SHORT)
    at = click(at, "Add user")
    assert f"Not done: {REFUSAL}" in page_text(at)
    field(at, "New password").input(SHORT)
    at = click(at, "Change user")
    assert f"Not done: {REFUSAL}" in page_text(at)
    with Store(lone_project) as store:
        assert store.annotator("bob") is None
        assert verify_password("alan password", store.annotator("alan")["password_hash"])
