"""Who may do what, and who is signed in: roles, password sign-in with a lockout, browser
sessions, and the users as admins see them.

Over the store: every read and write goes through :class:`goldset.labeler.store.Store` (no SQL
here); the password hashes themselves are :mod:`goldset.labeler.auth`'s. No Streamlit either:
the sign-in page, the pages' role checks and the CLI call these functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from weakref import WeakKeyDictionary

from goldset.labeler import golden
from goldset.labeler.auth import LOCAL_ANNOTATOR, check_login, new_token, token_hash
from goldset.labeler.store import ROLES, Store

# Roles are nested: each can do what the one before it can, and more.
ROLE_LEVEL = {role: level for level, role in enumerate(ROLES)}
# Five wrong passwords in a row lock an account for 15 minutes: a person mistyping gets
# there rarely, a guesser gets 20 tries an hour instead of thousands.
LOCK_AFTER_FAILURES = 5
LOCK_MINUTES = 15
WRONG_LOGIN = "Unknown user name or wrong password."
BUSY_LOGIN = "Too many sign-ins to this account at once: try again in a moment."
# A password check still unfinished after this long died with its process: its slot is freed.
ATTEMPT_TIMEOUT = timedelta(minutes=1)


# --- roles and sign-in ----------------------------------------------------------------------------


def has_role(role: str | None, needed: str) -> bool:
    """Tell whether a user with ``role`` may do what ``needed`` may: annotators label;
    reviewers also adjudicate and see agreement; admins also import, export, pool and manage
    users and assignments. An unknown or missing role may do nothing."""
    if needed not in ROLE_LEVEL:
        raise ValueError(f"role must be one of {ROLES}, got {needed!r}")
    return role in ROLE_LEVEL and ROLE_LEVEL[role] >= ROLE_LEVEL[needed]


def authorize(store: Store, name: str, needed: str) -> None:
    """Raise PermissionError unless user ``name`` — their role read from the database now —
    may do what ``needed`` may. Every reviewer and admin action calls it before acting, so a
    demoted user, or a request crafted without the page, is refused on the server. With no
    users in the project, the local annotator owns it (admin). When the store acts for a
    browser session (:func:`bind_session`), that session must still be live: a tab signed
    out elsewhere cannot act, even in a callback that runs before its page checks sign-in."""
    user = store.annotator(name)
    role = user["role"] if user else None
    if user is None and name == LOCAL_ANNOTATOR and not store.annotators():
        role = "admin"
    if not has_role(role, needed):
        raise PermissionError(f"{name!r} may not do this: it needs the {needed} role")
    session_id = _BOUND_SESSIONS.get(store)
    if session_id is not None and resume_session(store, session_id=session_id) is None:
        raise PermissionError("you were signed out (in another tab, or by an admin)")


@dataclass(frozen=True)
class SignIn:
    """The outcome of a password sign-in: the user (None when refused) and what to tell them."""

    user: dict | None
    message: str = ""


def sign_in(store: Store, name: str, password: str, now: datetime | None = None) -> SignIn:
    """Check a password sign-in, counting failures in the database.

    ``LOCK_AFTER_FAILURES`` wrong passwords in a row lock the account for ``LOCK_MINUTES``
    minutes; while locked, no password is even checked, and the right one is refused too. A
    successful sign-in, or a new password set by an admin, clears the count. Each check holds
    one of ``LOCK_AFTER_FAILURES`` slots, reserved atomically (:meth:`Store.attempt_login`),
    so parallel attempts cannot check more passwords than the limit (an attempt finding
    every slot taken is refused unchecked, ``BUSY_LOGIN``). A name that is no user's is
    answered exactly as a user's with a wrong password: the same message, its failures
    counted and locked the same way, and a password hash checked all the same (a decoy),
    so that neither the answers, nor the lock, nor the time taken tell who exists.
    """
    now = now or datetime.now(UTC)
    outcome, detail = store.attempt_login(
        name,
        lambda stored_hash: check_login(name, password, stored_hash),
        now=_log_time(now),
        stale_before=_log_time(now - ATTEMPT_TIMEOUT),
        lock_after=LOCK_AFTER_FAILURES,
        locked_until=_log_time(now + timedelta(minutes=LOCK_MINUTES)),
    )
    if outcome == "ok":
        return SignIn(detail)
    if outcome == "locked":
        return SignIn(None, _locked_message(detail))
    return SignIn(None, BUSY_LOGIN if outcome == "busy" else WRONG_LOGIN)


# --- browser sessions -----------------------------------------------------------------------------

# A browser stays signed in until logout, 12 hours without use (a working day plus a long
# lunch: the next morning asks again), or 7 days after sign-in, whichever comes first.
SESSION_IDLE = timedelta(hours=12)
SESSION_LIFETIME = timedelta(days=7)
TICKET_LIFETIME = timedelta(minutes=2)  # from sign-in to the browser claiming its cookie
# last_seen is written at most this often: a rerun reads the session but rarely writes.
SESSION_TOUCH = timedelta(minutes=5)


@dataclass(frozen=True)
class BrowserSession:
    """A signed-in browser session: its id, its user (``{"name", "role"}``), and the
    one-time ticket (None once resumed) that the browser trades for its HttpOnly cookie."""

    session_id: int
    user: dict
    ticket: str | None = None


def start_session(store: Store, name: str, now: datetime | None = None) -> BrowserSession:
    """Open a browser session for user ``name`` (just signed in). Its cookie does not exist
    yet: the browser claims it with the returned ticket (:func:`claim_session`)."""
    now = now or datetime.now(UTC)
    ticket = new_token()
    session_id = store.add_browser_session(
        name,
        token_hash(ticket),
        now=_log_time(now),
        ticket_expires=_log_time(now + TICKET_LIFETIME),
        expires_at=_log_time(now + SESSION_LIFETIME),
    )
    user = store.annotator(name)
    return BrowserSession(session_id, {"name": name, "role": user["role"]}, ticket)


def claim_session(store: Store, ticket: str, now: datetime | None = None) -> str | None:
    """Trade a one-time ticket for the session's cookie value (a new random token, of which
    the store keeps only the hash), or None if the ticket is not valid (any more)."""
    token = new_token()
    claimed = store.claim_browser_session(
        token_hash(ticket), token_hash(token), _log_time(now or datetime.now(UTC))
    )
    return token if claimed is not None else None


def resume_session(
    store: Store,
    *,
    session_id: int | None = None,
    token: str | None = None,
    now: datetime | None = None,
) -> BrowserSession | None:
    """The live session with this id (a tab signed in before) or cookie (a reload, a new
    tab), or None when there is none: revoked (logout; the user removed, or given a new role
    or password), idle for ``SESSION_IDLE``, past ``SESSION_LIFETIME``, or unknown."""
    if token is not None:
        row = store.browser_session(token_hash=token_hash(token))
    elif session_id is not None:
        row = store.browser_session(session_id=session_id)
    else:
        return None
    now = now or datetime.now(UTC)
    moment = _log_time(now)
    if row is None or row["role"] is None or row["revoked_at"] or row["expires_at"] <= moment:
        return None
    if row["last_seen"] <= _log_time(now - SESSION_IDLE):
        return None
    if row["last_seen"] <= _log_time(now - SESSION_TOUCH):
        store.touch_browser_session(row["id"], moment)
    return BrowserSession(row["id"], {"name": row["annotator"], "role": row["role"]})


def end_session(store: Store, session_id: int) -> None:
    """Log out: the session ends for every tab of the browser that shares it."""
    store.revoke_browser_session(session_id)


# The browser session each app connection acts for (the app opens one Store per browser tab).
_BOUND_SESSIONS: WeakKeyDictionary[Store, int] = WeakKeyDictionary()


def bind_session(store: Store, session_id: int | None) -> None:
    """Make every :func:`authorize` on ``store`` also require browser session ``session_id``
    to be live (None: no session to require, e.g. the CLI or the local admin)."""
    if session_id is None:
        _BOUND_SESSIONS.pop(store, None)
    else:
        _BOUND_SESSIONS[store] = session_id


def user_rows(store: Store, now: datetime | None = None) -> list[dict]:
    """The users as admins see them (never their password hashes): name, role, sign_in
    (``password`` or ``identity provider``), locked_until (None when not locked), created_at,
    and their assigned and open queries."""
    moment = _log_time(now or datetime.now(UTC))
    counts = store.assignment_counts()
    return [
        {
            "name": user["name"],
            "role": user["role"],
            "sign_in": "password" if user["password_hash"] else "identity provider",
            "locked_until": user["locked_until"] if (user["locked_until"] or "") > moment else None,
            "created_at": user["created_at"],
            "assigned": counts.get(user["name"], {}).get("assigned", 0),
            "open": counts.get(user["name"], {}).get("open", 0),
        }
        for user in store.annotators()
    ]


def admin_warning(store: Store) -> str | None:
    """A warning when the project has users but none of them is an admin: everyone must sign
    in, and nobody who can is allowed to manage users in the app. None when all is well."""
    users = store.annotators()
    if not users or any(user["role"] == "admin" for user in users):
        return None
    return (
        "warning: no user is an admin, so nobody can manage the project in the app; "
        "add one with `goldset user add NAME --role admin`"
    )


def _locked_message(locked_until: str) -> str:
    return (
        "Too many failed sign-ins: this account is locked until "
        f"{locked_until[11:16]} UTC. An admin can lift the lock by setting a new password."
    )


def _log_time(moment: datetime) -> str:
    return golden.to_log_time(moment.isoformat())
