"""Opening the database, transactions, snapshots and key-press tagging."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Self

import sqlite_utils

from labeler import golden
from labeler.store.schema import migrations

SYNCHRONOUS = ("NORMAL", "FULL")


CHUNK = 500  # ids per "IN (...)" query, well under SQLite's variable limit


# The key press being applied on this thread (see Store.key_press): (page id, sequence number).
_KEY_PRESS: ContextVar[tuple[str, int] | None] = ContextVar("goldset_key_press", default=None)


def _chunks(items: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), CHUNK):
        yield list(items[start : start + CHUNK])


def _marks(items: Sequence) -> str:
    return ", ".join("?" * len(items))


class Connection:
    """Opening the database, transactions, snapshots and key-press tagging."""

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL", timeout: float = 30.0):
        """Open (creating and migrating if needed) the project database at ``path``."""
        if synchronous not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS}, got {synchronous!r}")
        self.path = Path(path)
        self.conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=timeout
        )
        self.db = sqlite_utils.Database(self.conn)
        self._lock = threading.RLock()
        self.db.enable_wal()
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.conn.execute("PRAGMA foreign_keys=ON")
        if migrations.pending(self.db):
            with self._writing():  # re-checked under the write lock: one process migrates
                migrations.apply(self.db)

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed when the last connection closes)."""
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, ``BEGIN IMMEDIATE`` (see the module docstring)."""
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                if (press := _KEY_PRESS.get()) is not None:
                    self._record_key_press(*press)
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    @contextmanager
    def key_press(self, page: str, seq: int) -> Iterator[None]:
        """Tag every write made inside with one key press of a browser page.

        Each write transaction inside also records ``(page, seq)``, in the same commit, so
        the log itself says which presses it holds. A server that restarts while a browser
        still holds presses it was never told were applied asks
        :meth:`applied_key_press` instead of applying them a second time.
        """
        token = _KEY_PRESS.set((page, seq))
        try:
            yield
        finally:
            _KEY_PRESS.reset(token)

    def applied_key_press(self, page: str) -> int:
        """The sequence number of the page's last key press that wrote to the log (0: none)."""
        return self._value("SELECT seq FROM key_presses WHERE page = ?", (page,)) or 0

    def _record_key_press(self, page: str, seq: int) -> None:
        self.conn.execute(
            "INSERT INTO key_presses (page, seq, applied_at) VALUES (?, ?, ?) "
            "ON CONFLICT (page) DO UPDATE SET seq = max(seq, excluded.seq), "
            "applied_at = excluded.applied_at",
            (page, seq, golden.now()),
        )

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read inside one transaction: every read made inside sees the same state of the
        database, whatever other annotators commit meanwhile."""
        with self._reading():
            yield

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: several SELECTs see one consistent snapshot."""
        with self._lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("COMMIT")

    def _rows(self, sql: str, params: Sequence | Mapping = ()) -> list[dict]:
        with self._lock:
            cursor = self.conn.execute(sql, params)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _value(self, sql: str, params: Sequence | Mapping = ()) -> object:
        with self._lock:
            row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None
