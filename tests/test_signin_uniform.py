"""Sign-in reveals nothing: a name that is no user's gets the same answers, the same counting
and the same lock as a user's name with a wrong password, checks a password hash all the same,
and stays atomic under parallel attempts."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from goldset.labeler import accounts, auth
from goldset.labeler.accounts import (
    BUSY_LOGIN,
    LOCK_AFTER_FAILURES,
    LOCK_MINUTES,
    WRONG_LOGIN,
    sign_in,
)
from goldset.labeler.auth import (
    DECOY_HASH,
    SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
    check_login,
    hash_password,
)
from goldset.labeler.store import Store

NOON = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
RIGHT = "right password"
KNOWN, UNKNOWN = "ana", "nobody"


@pytest.fixture
def known_store(make_store) -> Store:
    """An empty project whose one user, ``KNOWN``, has the password ``RIGHT``."""
    return make_store(users=[KNOWN], passwords={KNOWN: RIGHT})


def messages(store: Store, name: str, script: list[tuple[timedelta, int]]) -> list[str]:
    """The answers to wrong passwords under ``name``: ``count`` attempts at each moment."""
    return [
        sign_in(store, name, "wrong password", NOON + offset).message
        for offset, count in script
        for _ in range(count)
    ]


def test_an_unknown_name_is_answered_counted_and_locked_exactly_as_a_known_one(known_store):
    script = [
        (timedelta(0), LOCK_AFTER_FAILURES),  # the last one locks
        (timedelta(minutes=LOCK_MINUTES - 1), 1),  # still locked
        (timedelta(minutes=LOCK_MINUTES, seconds=1), LOCK_AFTER_FAILURES),  # counted again
    ]
    known, unknown = messages(known_store, KNOWN, script), messages(known_store, UNKNOWN, script)
    assert unknown == known
    assert unknown[: LOCK_AFTER_FAILURES - 1] == [WRONG_LOGIN] * (LOCK_AFTER_FAILURES - 1)
    assert "locked until 12:15 UTC" in unknown[LOCK_AFTER_FAILURES - 1]
    assert unknown[LOCK_AFTER_FAILURES] == unknown[LOCK_AFTER_FAILURES - 1]
    assert "locked until 12:30 UTC" in unknown[-1]


def test_an_unknown_names_failures_are_kept_in_the_database(known_store):
    messages(known_store, UNKNOWN, [(timedelta(0), LOCK_AFTER_FAILURES - 1)])
    with Store(known_store.path) as restarted:
        assert "locked" in sign_in(restarted, UNKNOWN, "wrong password", NOON).message


def test_failures_of_one_unknown_name_do_not_lock_another_nor_a_user(known_store):
    messages(known_store, UNKNOWN, [(timedelta(0), LOCK_AFTER_FAILURES)])
    assert sign_in(known_store, "somebody", "wrong password", NOON).message == WRONG_LOGIN
    assert sign_in(known_store, KNOWN, RIGHT, NOON).user["name"] == KNOWN


@pytest.mark.parametrize("name", [KNOWN, UNKNOWN])
def test_every_unlocked_attempt_checks_one_password_hash_and_a_locked_one_none(
    known_store, monkeypatch, name
):
    hashes = []

    def counting_verify(password: str, stored_hash: str) -> bool:
        hashes.append(stored_hash)
        return verify(password, stored_hash)

    verify = auth.verify_password
    monkeypatch.setattr(auth, "verify_password", counting_verify)
    messages(known_store, name, [(timedelta(0), LOCK_AFTER_FAILURES + 2)])
    assert len(hashes) == LOCK_AFTER_FAILURES  # the two attempts while locked check nothing
    assert (set(hashes) == {DECOY_HASH}) == (name == UNKNOWN)


def test_the_decoy_hash_costs_what_a_users_hash_costs():
    assert DECOY_HASH.split("$")[:4] == hash_password(RIGHT).split("$")[:4]
    assert DECOY_HASH.split("$")[1:4] == [str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P)]


@pytest.mark.parametrize("name", [KNOWN, UNKNOWN])
def test_twenty_parallel_attempts_check_no_more_than_five_and_lock(known_store, monkeypatch, name):
    checked = []

    def counting_check(name: str, password: str, stored_hash: str | None) -> bool:
        checked.append(password)
        return check_login(name, password, stored_hash)

    monkeypatch.setattr(accounts, "check_login", counting_check)
    start = threading.Barrier(20)

    def attempt(_: int) -> str:
        with Store(known_store.path) as own:  # one connection per thread, as the app's sessions
            start.wait()
            return sign_in(own, name, "wrong password", NOON).message

    with ThreadPoolExecutor(20) as pool:
        answers = set(pool.map(attempt, range(20)))
    assert len(checked) == LOCK_AFTER_FAILURES
    assert answers <= {WRONG_LOGIN, BUSY_LOGIN, accounts._locked_message("2026-01-05T12:15")}
    assert "locked" in sign_in(known_store, name, RIGHT, NOON + timedelta(minutes=1)).message
    assert len(checked) == LOCK_AFTER_FAILURES


def test_an_attempt_on_an_unknown_name_finding_every_slot_taken_is_busy_as_a_users(
    known_store, monkeypatch
):
    inner = {}

    def another_attempt_meanwhile(name: str, password: str, stored_hash: str | None) -> bool:
        if name not in inner:
            inner[name] = sign_in(known_store, name, "wrong password", NOON).message
        return check_login(name, password, stored_hash)

    for name in (KNOWN, UNKNOWN):
        messages(known_store, name, [(timedelta(0), LOCK_AFTER_FAILURES - 1)])
    monkeypatch.setattr(accounts, "check_login", another_attempt_meanwhile)
    for name in (KNOWN, UNKNOWN):
        assert "locked" in sign_in(known_store, name, "wrong password", NOON).message
    assert inner == {KNOWN: BUSY_LOGIN, UNKNOWN: BUSY_LOGIN}


def test_the_store_keeps_no_unknown_name_as_typed(known_store):
    typed = "my secret passphrase"  # typed into the name field, as people do
    sign_in(known_store, typed, "wrong password", NOON)
    dump = "\n".join(known_store.conn.iterdump())
    assert typed not in dump
    assert "locked" not in sign_in(known_store, typed, "wrong password", NOON).message
    # but counted:
    messages(known_store, typed, [(timedelta(0), LOCK_AFTER_FAILURES - 2)])
    assert "locked" in sign_in(known_store, typed, "wrong password", NOON).message


def test_an_unknown_names_ended_lock_is_forgotten(known_store):
    messages(known_store, UNKNOWN, [(timedelta(0), LOCK_AFTER_FAILURES)])
    count = "SELECT count(*) FROM unknown_sign_ins"
    assert known_store.conn.execute(count).fetchone()[0] == 1
    sign_in(known_store, KNOWN, RIGHT, NOON + timedelta(minutes=LOCK_MINUTES, seconds=1))
    assert known_store.conn.execute(count).fetchone()[0] == 0


def test_a_removed_users_lock_stays_and_a_new_user_starts_without_failures(known_store):
    messages(known_store, KNOWN, [(timedelta(0), LOCK_AFTER_FAILURES)])
    known_store.remove_annotator(KNOWN)
    assert "locked" in sign_in(known_store, KNOWN, RIGHT, NOON).message  # no tell that it went
    messages(known_store, "bob", [(timedelta(0), LOCK_AFTER_FAILURES - 1)])
    known_store.add_annotator("bob", password_hash=hash_password(RIGHT))
    assert sign_in(known_store, "bob", "wrong password", NOON).message == WRONG_LOGIN
    assert sign_in(known_store, "bob", RIGHT, NOON).user["name"] == "bob"
