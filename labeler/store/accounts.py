"""Users: annotators and their roles, sign-in and lockout, browser sessions."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from labeler import golden
from labeler.auth import ROLES
from labeler.store.connection import Connection


class Accounts(Connection):
    """Users: annotators and their roles, sign-in and lockout, browser sessions."""

    def add_annotator(
        self, name: str, role: str = "annotator", password_hash: str | None = None
    ) -> None:
        """Register a user (the app hashes passwords; the store keeps only the hash)."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError("an annotator needs a non-empty name")
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        with self._writing() as conn:
            if conn.execute("SELECT 1 FROM annotators WHERE name = ?", (name,)).fetchone():
                raise ValueError(f"annotator {name!r} already exists")
            conn.execute(
                "INSERT INTO annotators (name, role, password_hash, created_at) "
                "VALUES (?, ?, ?, ?)",
                (name, role, password_hash, golden.now()),
            )

    def annotator(self, name: str) -> dict | None:
        """A registered user (name, role, password_hash, created_at), or None."""
        rows = self._rows("SELECT * FROM annotators WHERE name = ?", (name,))
        return rows[0] if rows else None

    def annotators(self) -> list[dict]:
        """All registered users, by name."""
        return self._rows("SELECT * FROM annotators ORDER BY name")

    def update_annotator(
        self, name: str, *, role: str | None = None, password_hash: str | None = None
    ) -> None:
        """Change a user's role and/or password hash. A new password also lifts a login lock.
        A new role or password ends the user's browser sessions: they sign in again."""
        if role is not None and role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        with self._writing() as conn:
            row = conn.execute("SELECT role FROM annotators WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise ValueError(f"unknown annotator {name!r}")
            if (role is not None and role != row[0]) or password_hash is not None:
                self._revoke_sessions(conn, name)
            conn.execute(
                "UPDATE annotators SET role = coalesce(?, role), "
                "password_hash = coalesce(?, password_hash) WHERE name = ?",
                (role, password_hash, name),
            )
            if password_hash is not None:
                conn.execute(
                    "UPDATE annotators SET failed_logins = 0, locked_until = NULL WHERE name = ?",
                    (name,),
                )

    def attempt_login(
        self,
        name: str,
        verify: Callable[[str | None], bool],
        *,
        now: str,
        stale_before: str,
        lock_after: int,
        locked_until: str,
    ) -> tuple[str, object]:
        """Check a sign-in of user ``name`` so that parallel attempts can never check more than
        ``lock_after`` passwords in a row, nor clear a lock another attempt has just set.

        The slow ``verify(password_hash)`` (scrypt) runs outside any transaction, so a burst
        of sign-ins never holds the write lock that annotators' key presses need. Instead one
        short ``BEGIN IMMEDIATE`` transaction reads the lock and reserves an attempt slot —
        only while failures so far plus attempts in flight stay below ``lock_after`` — and a
        second one records the outcome. A reservation older than ``stale_before`` (its
        process died mid-check) frees its slot. Returns one of:

        - ``("ok", user)``: the password is right; the count of failures starts again;
        - ``("locked", until)``: locked (now or by this failure) until that log time; while
          locked no password is checked, and a right one checked meanwhile is refused;
        - ``("wrong", None)``: a wrong password, or an unknown name (``verify(None)`` then
          runs, so that it takes as long);
        - ``("busy", None)``: the slots are taken by attempts in flight: nothing checked.
        """
        if lock_after < 1:
            raise ValueError(f"lock_after must be at least 1, got {lock_after}")
        with self._writing() as conn:
            row = conn.execute(
                "SELECT password_hash, locked_until, failed_logins FROM annotators WHERE name = ?",
                (name,),
            ).fetchone()
            if row is not None:
                stored_hash, locked, failures = row
                if locked and locked > now:
                    return "locked", locked
                conn.execute("DELETE FROM login_attempts WHERE started_at < ?", (stale_before,))
                in_flight = conn.execute(
                    "SELECT count(*) FROM login_attempts WHERE annotator = ?", (name,)
                ).fetchone()[0]
                if failures + in_flight >= lock_after:
                    return "busy", None
                attempt = conn.execute(
                    "INSERT INTO login_attempts (annotator, started_at) VALUES (?, ?) RETURNING id",
                    (name, now),
                ).fetchone()[0]
        if row is None:
            verify(None)
            return "wrong", None
        right = verify(stored_hash)
        with self._writing() as conn:
            conn.execute("DELETE FROM login_attempts WHERE id = ?", (attempt,))
            current = conn.execute(
                "SELECT password_hash, locked_until FROM annotators WHERE name = ?", (name,)
            ).fetchone()
            if current is None or current[0] != stored_hash:
                return "wrong", None  # removed, or given a new password, meanwhile
            if current[1] and current[1] > now:
                return "locked", current[1]
            if right:
                conn.execute(
                    "UPDATE annotators SET failed_logins = 0, locked_until = NULL WHERE name = ?",
                    (name,),
                )
                return "ok", self.annotator(name)
            failures = conn.execute(
                "UPDATE annotators SET failed_logins = failed_logins + 1 WHERE name = ? "
                "RETURNING failed_logins",
                (name,),
            ).fetchone()[0]
            if failures < lock_after:
                return "wrong", None
            conn.execute(
                "UPDATE annotators SET failed_logins = 0, locked_until = ? WHERE name = ?",
                (locked_until, name),
            )
            return "locked", locked_until

    def remove_annotator(self, name: str) -> None:
        """Remove a user's account and end their browser sessions. Their events stay in the
        log (nothing is ever lost); the queries assigned to them and not yet finished go back
        to be dealt again."""
        with self._writing() as conn:
            if not conn.execute("DELETE FROM annotators WHERE name = ?", (name,)).rowcount:
                raise ValueError(f"unknown annotator {name!r}")
            conn.execute("DELETE FROM assignments WHERE annotator = ? AND open = 1", (name,))
            self._revoke_sessions(conn, name)

    def add_browser_session(
        self, name: str, ticket_hash: str, *, now: str, ticket_expires: str, expires_at: str
    ) -> int:
        """Open a browser session for user ``name`` at ``now`` (log times throughout), to be
        claimed once with the ticket whose hash is ``ticket_hash`` before ``ticket_expires``;
        returns its id."""
        with self._writing() as conn:
            if not conn.execute("SELECT 1 FROM annotators WHERE name = ?", (name,)).fetchone():
                raise ValueError(f"unknown annotator {name!r}")
            return conn.execute(
                "INSERT INTO browser_sessions (annotator, ticket_hash, ticket_expires, "
                "created_at, last_seen, expires_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (name, ticket_hash, ticket_expires, now, now, expires_at),
            ).fetchone()[0]

    def claim_browser_session(self, ticket_hash: str, token_hash: str, now: str) -> int | None:
        """Bind a browser's cookie (``token_hash``) to the open session of that ticket, once:
        the ticket is spent in the same statement. Returns the session id, or None when the
        ticket is unknown, spent, expired or its session already ended."""
        with self._writing() as conn:
            row = conn.execute(
                "UPDATE browser_sessions SET token_hash = ?, ticket_hash = NULL, "
                "ticket_expires = NULL WHERE ticket_hash = ? AND ticket_expires > ? "
                "AND revoked_at IS NULL AND expires_at > ? RETURNING id",
                (token_hash, ticket_hash, now, now),
            ).fetchone()
        return row[0] if row else None

    def browser_session(self, *, session_id: int | None = None, token_hash: str | None = None):
        """A browser session by id or by its cookie's hash, with its user's current role
        (``role`` None when the user was removed), or None."""
        column, value = ("id", session_id) if token_hash is None else ("token_hash", token_hash)
        rows = self._rows(
            "SELECT s.id, s.annotator, s.created_at, s.last_seen, s.expires_at, s.revoked_at, "
            f"a.role FROM browser_sessions s LEFT JOIN annotators a ON a.name = s.annotator "
            f"WHERE s.{column} = ?",
            (value,),
        )
        return rows[0] if rows else None

    def touch_browser_session(self, session_id: int, now: str) -> None:
        """Record that the session was used at ``now`` (its idle time starts again)."""
        with self._writing() as conn:
            conn.execute(
                "UPDATE browser_sessions SET last_seen = ? WHERE id = ? AND last_seen < ?",
                (now, session_id, now),
            )

    def revoke_browser_session(self, session_id: int) -> None:
        """End one browser session (logout): every tab using it is signed out."""
        with self._writing() as conn:
            conn.execute(
                "UPDATE browser_sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (golden.now(), session_id),
            )

    @staticmethod
    def _revoke_sessions(conn: sqlite3.Connection, name: str) -> None:
        conn.execute(
            "UPDATE browser_sessions SET revoked_at = ? WHERE annotator = ? AND revoked_at IS NULL",
            (golden.now(), name),
        )
