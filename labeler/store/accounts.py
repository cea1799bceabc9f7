"""Users: annotators and their roles, sign-in and lockout, browser sessions."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from goldset.labeler import golden
from goldset.labeler.auth import ROLES
from goldset.labeler.store.connection import Connection


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
            # A new account starts with no failures, as a new password clears them.
            conn.execute(
                "DELETE FROM unknown_sign_ins WHERE name_digest = ?", (_name_digest(name),)
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
        """Check a sign-in under ``name`` so that parallel attempts can never check more than
        ``lock_after`` passwords in a row, nor clear a lock another attempt has just set.

        A name that is no user's is counted and locked the same way (in ``unknown_sign_ins``,
        under a digest of it), and ``verify(None)`` then runs as long as a check: sign-in
        answers alike whether the name exists. The slow ``verify(password_hash)`` (scrypt)
        runs outside any transaction, so a burst of sign-ins never holds the write lock that
        annotators' key presses need. Instead one short ``BEGIN IMMEDIATE`` transaction reads
        the lock and reserves an attempt slot — only while failures so far plus attempts in
        flight stay below ``lock_after`` — and a second one records the outcome. A
        reservation older than ``stale_before`` (its process died mid-check) frees its slot.
        Returns one of:

        - ``("ok", user)``: the password is right; the count of failures starts again;
        - ``("locked", until)``: locked (now or by this failure) until that log time; while
          locked no password is checked, and a right one checked meanwhile is refused;
        - ``("wrong", None)``: a wrong password, or a name that is no user's;
        - ``("busy", None)``: the slots are taken by attempts in flight: nothing checked.
        """
        if lock_after < 1:
            raise ValueError(f"lock_after must be at least 1, got {lock_after}")
        with self._writing() as conn:
            # An unknown name whose lock ended, failing none since, is as one that never
            # failed: its row goes (so that guessed names do not pile up).
            conn.execute(
                "DELETE FROM unknown_sign_ins WHERE locked_until <= ? AND failed_logins = 0",
                (now,),
            )
            account = _account(conn, name)
            count = _FailureCount.of(name, account)
            failures, locked = count.read(conn)
            if locked and locked > now:
                return "locked", locked
            conn.execute("DELETE FROM login_attempts WHERE started_at < ?", (stale_before,))
            in_flight = conn.execute(
                "SELECT count(*) FROM login_attempts WHERE annotator = ?", (count.key,)
            ).fetchone()[0]
            if failures + in_flight >= lock_after:
                return "busy", None
            attempt = conn.execute(
                "INSERT INTO login_attempts (annotator, started_at) VALUES (?, ?) RETURNING id",
                (count.key, now),
            ).fetchone()[0]
        right = verify(account[0] if account else None)
        with self._writing() as conn:
            conn.execute("DELETE FROM login_attempts WHERE id = ?", (attempt,))
            if _account(conn, name) != account:
                return "wrong", None  # added, removed, or given a new password meanwhile
            locked = count.read(conn)[1]
            if locked and locked > now:
                return "locked", locked
            if right:
                count.clear(conn)
                return "ok", self.annotator(name)
            if count.add_failure(conn) < lock_after:
                return "wrong", None
            count.lock(conn, locked_until)
            return "locked", locked_until

    def remove_annotator(self, name: str) -> None:
        """Remove a user's account and end their browser sessions. Their events stay in the
        log (nothing is ever lost); the queries assigned to them and not yet finished go back
        to be dealt again. Failed sign-ins under the name count on (it is no user's now)."""
        with self._writing() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO unknown_sign_ins (name_digest, failed_logins, "
                "locked_until) SELECT ?, failed_logins, locked_until FROM annotators "
                "WHERE name = ? AND (failed_logins > 0 OR locked_until IS NOT NULL)",
                (_name_digest(name), name),
            )
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


def _account(conn: sqlite3.Connection, name: str) -> tuple | None:
    """The user's ``(password_hash,)`` (None inside for identity-provider sign-in only), or
    None when ``name`` is no user's."""
    return conn.execute("SELECT password_hash FROM annotators WHERE name = ?", (name,)).fetchone()


def _name_digest(name: str) -> str:
    # A fixed size whatever was typed ("sha256:" cannot start a user name).
    return "sha256:" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class _FailureCount:
    """Where the failed sign-ins under a name are counted: its user's row of ``annotators``,
    or, for a name that is no user's, a row of ``unknown_sign_ins`` made at its first failure.
    Both count and lock alike."""

    table: str
    column: str
    key: str

    @classmethod
    def of(cls, name: str, account: tuple | None) -> _FailureCount:
        if account is not None:
            return cls("annotators", "name", name)
        return cls("unknown_sign_ins", "name_digest", _name_digest(name))

    def read(self, conn: sqlite3.Connection) -> tuple[int, str | None]:
        """The failures in a row, and when the last lock ends (None: none)."""
        row = conn.execute(
            f"SELECT failed_logins, locked_until FROM {self.table} WHERE {self.column} = ?",
            (self.key,),
        ).fetchone()
        return row or (0, None)

    def clear(self, conn: sqlite3.Connection) -> None:
        """Start the count again (a right password)."""
        self._set(conn, "failed_logins = 0, locked_until = NULL")

    def lock(self, conn: sqlite3.Connection, until: str) -> None:
        """Lock until that log time; the count starts again after it."""
        self._set(conn, "failed_logins = 0, locked_until = ?", until)

    def add_failure(self, conn: sqlite3.Connection) -> int:
        """Count one more failure (a lock that has ended is forgotten); the count now."""
        row = conn.execute(
            f"UPDATE {self.table} SET failed_logins = failed_logins + 1, locked_until = NULL "
            f"WHERE {self.column} = ? RETURNING failed_logins",
            (self.key,),
        ).fetchone()
        if row:
            return row[0]
        conn.execute(
            "INSERT INTO unknown_sign_ins (name_digest, failed_logins) VALUES (?, 1)", (self.key,)
        )
        return 1

    def _set(self, conn: sqlite3.Connection, assignments: str, *values: str) -> None:
        conn.execute(
            f"UPDATE {self.table} SET {assignments} WHERE {self.column} = ?", (*values, self.key)
        )
