"""Users and roles: nested roles, sign-in with a lockout counted in the database, and the
`goldset user` commands."""

from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from labeler.auth import hash_password, verify_password
from labeler.cli import cli
from labeler.store import Store
from labeler.team import (
    LOCK_AFTER_FAILURES,
    LOCK_MINUTES,
    WRONG_LOGIN,
    has_role,
    sign_in,
    user_rows,
)

NOON = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.add_annotator("ana", password_hash=hash_password("right"))
        store.add_annotator("rita", role="reviewer", password_hash=hash_password("right"))
        yield store


def fail(store, times, name="ana", now=NOON):
    return [sign_in(store, name, "wrong", now) for _ in range(times)]


@pytest.mark.parametrize(
    ("role", "allowed"),
    [
        ("annotator", {"annotator"}),
        ("reviewer", {"annotator", "reviewer"}),
        ("admin", {"annotator", "reviewer", "admin"}),
        (None, set()),
        ("owner", set()),
    ],
)
def test_roles_are_nested(role, allowed):
    assert {needed for needed in ("annotator", "reviewer", "admin") if has_role(role, needed)} == (
        allowed
    )


def test_asking_for_an_unknown_role_is_an_error():
    with pytest.raises(ValueError, match="role must be one of"):
        has_role("admin", "superuser")


def test_right_password_signs_in_and_returns_the_user_with_role(store):
    result = sign_in(store, "rita", "right", NOON)
    assert (result.user["name"], result.user["role"], result.message) == ("rita", "reviewer", "")


def test_wrong_password_and_unknown_user_get_the_same_message(store):
    assert sign_in(store, "ana", "wrong", NOON).message == WRONG_LOGIN
    assert sign_in(store, "nobody", "right", NOON).message == WRONG_LOGIN
    assert sign_in(store, "ana", "wrong", NOON).user is None


def test_repeated_failures_lock_the_account_even_against_the_right_password(store):
    assert LOCK_AFTER_FAILURES == 5  # the README's figure
    results = fail(store, LOCK_AFTER_FAILURES)
    assert [r.message == WRONG_LOGIN for r in results] == [True] * (LOCK_AFTER_FAILURES - 1) + [
        False
    ]
    assert "locked until 12:15 UTC" in results[-1].message
    during = sign_in(store, "ana", "right", NOON + timedelta(minutes=LOCK_MINUTES - 1))
    assert during.user is None and "locked" in during.message


def test_the_lock_ends_after_its_time(store):
    fail(store, LOCK_AFTER_FAILURES)
    after = sign_in(store, "ana", "right", NOON + timedelta(minutes=LOCK_MINUTES, seconds=1))
    assert after.user["name"] == "ana"


def test_a_success_starts_the_count_again(store):
    fail(store, LOCK_AFTER_FAILURES - 1)
    assert sign_in(store, "ana", "right", NOON).user is not None
    assert all(r.message == WRONG_LOGIN for r in fail(store, LOCK_AFTER_FAILURES - 1))


def test_the_failure_count_is_in_the_database_not_the_session(store, tmp_path):
    fail(store, LOCK_AFTER_FAILURES - 1)
    with Store(store.path) as other_server:  # another session, or the app restarted
        assert "locked" in sign_in(other_server, "ana", "wrong", NOON).message


def test_a_new_password_lifts_the_lock(store):
    fail(store, LOCK_AFTER_FAILURES)
    store.update_annotator("ana", password_hash=hash_password("new"))
    assert sign_in(store, "ana", "new", NOON).user["name"] == "ana"


def test_failures_of_one_user_do_not_lock_another(store):
    fail(store, LOCK_AFTER_FAILURES, name="ana")
    assert sign_in(store, "rita", "right", NOON).user["name"] == "rita"


def test_a_user_without_password_cannot_sign_in_with_one(store):
    store.add_annotator("sso@example.com")
    assert sign_in(store, "sso@example.com", "", NOON).user is None


def test_user_rows_show_roles_locks_and_work_but_never_hashes(store):
    fail(store, LOCK_AFTER_FAILURES)
    rows = {row["name"]: row for row in user_rows(store, now=NOON)}
    assert rows["ana"]["locked_until"].startswith("2026-01-05T12:15")
    assert rows["rita"]["locked_until"] is None
    assert all("password_hash" not in row for row in rows.values())
    assert rows["ana"]["sign_in"] == "password"
    later = {row["name"]: row for row in user_rows(store, now=NOON + timedelta(hours=1))}
    assert later["ana"]["locked_until"] is None


def goldset(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input)


def test_cli_user_add_with_a_role_list_passwd_and_remove(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()  # user add refuses a path that is not a project yet (a typo, surely)
    added = goldset("user", "add", "rita", "--role", "reviewer", "--password", "x", "--db", db)
    assert added.exit_code == 0, added.output
    listing = goldset("user", "list", "--db", db)
    assert listing.exit_code == 0 and "rita" in listing.output and "reviewer" in listing.output
    assert "scrypt" not in listing.output
    changed = goldset("user", "passwd", "rita", "--role", "admin", "--db", db, input="y\ny\n")
    assert changed.exit_code == 0, changed.output
    with Store(db) as store:
        user = store.annotator("rita")
    assert user["role"] == "admin" and verify_password("y", user["password_hash"])
    assert goldset("user", "remove", "rita", "--db", db).exit_code == 0
    assert "no users" in goldset("user", "list", "--db", db).output


def test_cli_user_add_refuses_an_unknown_role_and_remove_an_unknown_user(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()
    bad_role = goldset("user", "add", "ana", "--role", "owner", "--password", "x", "--db", db)
    assert bad_role.exit_code == 2 and "owner" in bad_role.output
    unknown = goldset("user", "remove", "zed", "--db", db)
    assert unknown.exit_code == 1 and "unknown annotator" in unknown.output


def test_cli_user_add_without_password_is_for_identity_provider_sign_in(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()
    added = goldset("user", "add", "ana@example.com", "--no-password", "--db", db)
    assert added.exit_code == 0, added.output
    listing = goldset("user", "list", "--db", db, "--json")
    assert '"sign_in": "identity provider"' in listing.output
