"""Users and roles: nested roles, sign-in with an atomic lockout counted in the database,
browser sessions, and the `goldset user` commands."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from goldset.labeler import accounts
from goldset.labeler.accounts import (
    ATTEMPT_TIMEOUT,
    BUSY_LOGIN,
    LOCK_AFTER_FAILURES,
    LOCK_MINUTES,
    SESSION_IDLE,
    SESSION_LIFETIME,
    TICKET_LIFETIME,
    WRONG_LOGIN,
    SignIn,
    claim_session,
    end_session,
    has_role,
    resume_session,
    sign_in,
    start_session,
    user_rows,
)
from goldset.labeler.auth import (
    IMPORT_ANNOTATOR,
    LOCAL_ANNOTATOR,
    check_login,
    hash_password,
    token_hash,
    validate_user_name,
    verify_password,
)
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

NOON = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
LOCKED = accounts._locked_message("2026-01-05T12:15:00.000000Z")


@pytest.fixture
def users_store(make_store) -> Store:
    """An empty project with two users, the annotator ana and the reviewer rita (both
    "right password")."""
    return make_store(
        users={"ana": "annotator", "rita": "reviewer"},
        passwords={"ana": "right password", "rita": "right password"},
    )


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


def test_right_password_signs_in_and_returns_the_user_with_role(users_store):
    result = sign_in(users_store, "rita", "right password", NOON)
    assert (result.user["name"], result.user["role"], result.message) == ("rita", "reviewer", "")


def test_wrong_password_and_unknown_user_get_the_same_message(users_store):
    assert sign_in(users_store, "ana", "wrong", NOON).message == WRONG_LOGIN
    assert sign_in(users_store, "nobody", "right password", NOON).message == WRONG_LOGIN
    assert sign_in(users_store, "ana", "wrong", NOON).user is None


def test_repeated_failures_lock_the_account_even_against_the_right_password(users_store):
    assert LOCK_AFTER_FAILURES == 5  # the README's figure
    results = fail(users_store, LOCK_AFTER_FAILURES)
    assert [r.message == WRONG_LOGIN for r in results] == [True] * (LOCK_AFTER_FAILURES - 1) + [
        False
    ]
    assert "locked until 12:15 UTC" in results[-1].message
    during = sign_in(
        users_store, "ana", "right password", NOON + timedelta(minutes=LOCK_MINUTES - 1)
    )
    assert during.user is None and "locked" in during.message


def test_the_lock_ends_after_its_time(users_store):
    fail(users_store, LOCK_AFTER_FAILURES)
    after = sign_in(
        users_store, "ana", "right password", NOON + timedelta(minutes=LOCK_MINUTES, seconds=1)
    )
    assert after.user["name"] == "ana"


def test_a_success_starts_the_count_again(users_store):
    fail(users_store, LOCK_AFTER_FAILURES - 1)
    assert sign_in(users_store, "ana", "right password", NOON).user is not None
    assert all(r.message == WRONG_LOGIN for r in fail(users_store, LOCK_AFTER_FAILURES - 1))


def test_the_failure_count_is_in_the_database_not_the_session(users_store, tmp_path):
    fail(users_store, LOCK_AFTER_FAILURES - 1)
    with Store(users_store.path) as other_server:  # another session, or the app restarted
        assert "locked" in sign_in(other_server, "ana", "wrong", NOON).message


def test_a_new_password_lifts_the_lock(users_store):
    fail(users_store, LOCK_AFTER_FAILURES)
    users_store.update_annotator("ana", password_hash=hash_password("new password"))
    assert sign_in(users_store, "ana", "new password", NOON).user["name"] == "ana"


def test_failures_of_one_user_do_not_lock_another(users_store):
    fail(users_store, LOCK_AFTER_FAILURES, name="ana")
    assert sign_in(users_store, "rita", "right password", NOON).user["name"] == "rita"


def test_a_user_without_password_cannot_sign_in_with_one(users_store):
    users_store.add_annotator("sso@example.com")
    assert sign_in(users_store, "sso@example.com", "", NOON).user is None


def test_user_rows_show_roles_locks_and_work_but_never_hashes(users_store):
    fail(users_store, LOCK_AFTER_FAILURES)
    rows = {row["name"]: row for row in user_rows(users_store, now=NOON)}
    assert rows["ana"]["locked_until"].startswith("2026-01-05T12:15")
    assert rows["rita"]["locked_until"] is None
    assert all("password_hash" not in row for row in rows.values())
    assert rows["ana"]["sign_in"] == "password"
    later = {row["name"]: row for row in user_rows(users_store, now=NOON + timedelta(hours=1))}
    assert later["ana"]["locked_until"] is None


def test_a_right_password_checked_while_the_account_got_locked_is_refused(users_store, monkeypatch):
    def locked_meanwhile(name, password, stored_hash):
        # As by an attempt whose check outlived its slot (ATTEMPT_TIMEOUT) and then failed.
        users_store.conn.execute(
            "UPDATE annotators SET locked_until = '2026-01-05T12:15:00.000000Z' WHERE name = 'ana'"
        )
        return check_login(name, password, stored_hash)

    monkeypatch.setattr(accounts, "check_login", locked_meanwhile)
    result = sign_in(users_store, "ana", "right password", NOON)
    assert result.user is None and result.message == LOCKED
    assert users_store.annotator("ana")["locked_until"].startswith("2026-01-05T12:15")


def test_an_attempt_finding_every_slot_taken_is_refused_unchecked(users_store, monkeypatch):
    fail(users_store, LOCK_AFTER_FAILURES - 1)
    inner = []

    def another_attempt_meanwhile(name, password, stored_hash):
        inner.append(sign_in(users_store, "ana", "right password", NOON))  # the last slot is taken
        return check_login(name, password, stored_hash)

    monkeypatch.setattr(accounts, "check_login", another_attempt_meanwhile)
    assert sign_in(users_store, "ana", "right password", NOON).user["name"] == "ana"
    assert [attempt.message for attempt in inner] == [BUSY_LOGIN]


def test_a_check_that_died_mid_way_frees_its_slot_after_a_minute(users_store):
    fail(users_store, LOCK_AFTER_FAILURES - 1)
    users_store.conn.execute(  # a reservation left by a process killed while checking
        "INSERT INTO login_attempts (annotator, started_at) VALUES ('ana', ?)",
        (NOON.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),),
    )
    assert sign_in(users_store, "ana", "right password", NOON).message == BUSY_LOGIN
    assert (
        sign_in(users_store, "ana", "right password", NOON + ATTEMPT_TIMEOUT * 2).user["name"]
        == "ana"
    )


def test_twenty_parallel_wrong_passwords_check_no_more_than_five_and_lock(users_store, monkeypatch):
    checked = []

    def counting_check(name, password, stored_hash):
        if stored_hash is not None:
            checked.append(password)
        return check_login(name, password, stored_hash)

    monkeypatch.setattr(accounts, "check_login", counting_check)
    start = threading.Barrier(20)

    def attempt(_: int) -> SignIn:
        with Store(users_store.path) as own:  # one connection per thread, as the app's sessions
            start.wait()
            return sign_in(own, "ana", "wrong", NOON)

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(attempt, range(20)))
    assert len(checked) == LOCK_AFTER_FAILURES
    assert all(result.user is None for result in results)
    assert {result.message for result in results} <= {WRONG_LOGIN, BUSY_LOGIN, LOCKED}
    locked_until = users_store.annotator("ana")["locked_until"]
    during = sign_in(users_store, "ana", "right password", NOON + timedelta(minutes=1))
    assert during.user is None and "locked" in during.message
    assert len(checked) == LOCK_AFTER_FAILURES  # the right password was not even checked
    assert users_store.annotator("ana")["locked_until"] == locked_until  # nor did it clear the lock


@pytest.mark.parametrize("name", [IMPORT_ANNOTATOR, LOCAL_ANNOTATOR, "machine:bm25", "machine:"])
def test_names_that_label_without_being_users_cannot_be_users(name):
    with pytest.raises(ValueError, match="reserved|machine labels"):
        validate_user_name(name)


# --- browser sessions -----------------------------------------------------------------------------


def claimed(store, name="ana", now=NOON):
    """A session of ``name`` opened at ``now`` and claimed by a browser: (id, cookie)."""
    session = start_session(store, name, now)
    return session.session_id, claim_session(store, session.ticket, now)


def test_a_claimed_cookie_resumes_the_session_in_a_new_tab(users_store):
    session_id, cookie = claimed(users_store)
    resumed = resume_session(users_store, token=cookie, now=NOON + timedelta(hours=1))
    assert (resumed.session_id, resumed.user) == (session_id, {"name": "ana", "role": "annotator"})


def test_the_store_keeps_only_hashes_of_cookies_and_tickets(users_store):
    session = start_session(users_store, "ana", NOON)
    cookie = claim_session(users_store, session.ticket, NOON)
    dump = "\n".join(users_store.conn.iterdump())
    assert session.ticket not in dump and cookie not in dump
    assert token_hash(cookie) in dump


def test_a_ticket_claims_one_cookie_once_and_only_while_fresh(users_store):
    session = start_session(users_store, "ana", NOON)
    assert claim_session(users_store, session.ticket, NOON + TICKET_LIFETIME) is None  # too late
    late = start_session(users_store, "ana", NOON)
    assert claim_session(users_store, late.ticket, NOON) is not None
    assert claim_session(users_store, late.ticket, NOON) is None  # spent
    assert claim_session(users_store, "forged", NOON) is None


def test_logout_ends_the_session_for_every_tab(users_store):
    session_id, cookie = claimed(users_store)
    end_session(users_store, session_id)
    assert resume_session(users_store, token=cookie, now=NOON) is None
    assert resume_session(users_store, session_id=session_id, now=NOON) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda store: store.remove_annotator("ana"),
        lambda store: store.update_annotator("ana", role="reviewer"),
        lambda store: store.update_annotator("ana", password_hash=hash_password("new password")),
    ],
    ids=["removed", "new role", "new password"],
)
def test_removing_a_user_or_changing_their_role_or_password_ends_their_sessions(
    users_store, change
):
    _, cookie = claimed(users_store)
    _, rita_cookie = claimed(users_store, "rita")
    change(users_store)
    assert resume_session(users_store, token=cookie, now=NOON) is None
    assert resume_session(users_store, token=rita_cookie, now=NOON) is not None


def test_a_session_ends_after_twelve_idle_hours_or_seven_days(users_store):
    assert (timedelta(hours=12), timedelta(days=7)) == (SESSION_IDLE, SESSION_LIFETIME)  # README
    _, idle = claimed(users_store)
    assert resume_session(users_store, token=idle, now=NOON + SESSION_IDLE) is None
    _, used = claimed(users_store)
    for hours in range(11, 7 * 24, 11):  # used every 11 hours: never idle for 12
        moment = NOON + timedelta(hours=hours)
        assert resume_session(users_store, token=used, now=moment) is not None, hours
    assert resume_session(users_store, token=used, now=NOON + SESSION_LIFETIME) is None


def test_a_bound_store_refuses_actions_once_its_session_ended(users_store):
    session_id, _ = claimed(users_store, "rita", now=datetime.now(UTC))
    accounts.bind_session(users_store, session_id)
    accounts.authorize(users_store, "rita", "reviewer")
    end_session(users_store, session_id)
    with pytest.raises(PermissionError, match="signed out"):
        accounts.authorize(users_store, "rita", "reviewer")


def goldset(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input)


def test_cli_user_add_with_a_role_list_passwd_and_remove(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()  # user add refuses a path that is not a project yet (a typo, surely)
    added = goldset(
        "user", "add", "rita", "--role", "reviewer", "--password", "x-password", "--db", db
    )
    assert added.exit_code == 0, added.output
    listing = goldset("user", "list", "--db", db)
    assert listing.exit_code == 0 and "rita" in listing.output and "reviewer" in listing.output
    assert "scrypt" not in listing.output
    changed = goldset(
        "user", "passwd", "rita", "--role", "admin", "--db", db, input="y-password\ny-password\n"
    )
    assert changed.exit_code == 0, changed.output
    with Store(db) as store:
        user = store.annotator("rita")
    assert user["role"] == "admin" and verify_password("y-password", user["password_hash"])
    assert goldset("user", "remove", "rita", "--db", db).exit_code == 0
    assert "no users" in goldset("user", "list", "--db", db).output


def test_cli_user_add_refuses_an_unknown_role_and_remove_an_unknown_user(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()
    bad_role = goldset(
        "user", "add", "ana", "--role", "owner", "--password", "x-password", "--db", db
    )
    assert bad_role.exit_code == 2 and "owner" in bad_role.output
    unknown = goldset("user", "remove", "zed", "--db", db)
    assert unknown.exit_code == 2 and "unknown annotator" in unknown.output


def test_cli_user_add_without_password_is_for_identity_provider_sign_in(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()
    added = goldset("user", "add", "ana@example.com", "--no-password", "--db", db)
    assert added.exit_code == 0, added.output
    listing = goldset("user", "list", "--db", db, "--json")
    assert '"sign_in": "identity provider"' in listing.output


def test_cli_warns_when_no_user_can_manage_the_project(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()
    annotator_only = goldset("user", "add", "ana", "--password", "x-password", "--db", db)
    assert annotator_only.exit_code == 0 and "no user is an admin" in annotator_only.output
    admin = goldset(
        "user", "add", "alan", "--role", "admin", "--password", "x-password", "--db", db
    )
    assert admin.exit_code == 0 and "no user is an admin" not in admin.output
    removed = goldset("user", "remove", "alan", "--db", db)
    assert "no user is an admin" in removed.output
