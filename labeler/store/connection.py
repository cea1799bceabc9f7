"""Opening the database, transactions, snapshots and key-press tagging."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Self

import sqlite_utils
from sqlite_utils import Migrations

from goldset.labeler import golden
from goldset.labeler.store.schema import create_schema, migrations

SYNCHRONOUS = ("NORMAL", "FULL")


CHUNK = 500  # ids per "IN (...)" query, well under SQLite's variable limit


# A pool's copy of the candidates table, renamed into place when it publishes, and the table
# it replaces, until dropped (see Pool._build_next_candidates); a crash may leave either.
CANDIDATES_NEXT, CANDIDATES_RETIRED = "candidates_next", "candidates_retired"


DROP_ROWS = 20_000  # rows deleted per transaction before a large table is dropped


LOCK_POLL = 0.02  # seconds SQLite's busy handler waits per try for the write lock (_begin)


class ProjectError(ValueError):
    """A database path that is not a usable goldset project (missing, a directory, a foreign
    or corrupt file, read-only for a write). The message is one line, for the user."""


def is_busy(error: BaseException) -> bool:
    """Whether ``error`` is a write that found the database locked past the busy timeout
    (nothing was written): callers tell the user to try again instead of failing."""
    text = str(error)
    return isinstance(error, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


# A file this large is checked in the background when the app opens it (quick_check reads the
# whole file: seconds for a large project); smaller ones are checked before the open returns,
# as every command does.
BACKGROUND_CHECK_BYTES = 32 << 20


class IntegrityCheck:
    """``PRAGMA quick_check`` of one project file, run once per process (see :func:`_check_of`).

    :meth:`run` does the check (through a read-only connection of its own); :meth:`wait`
    blocks until it is done and raises :class:`ProjectError` if the file is corrupt;
    :meth:`problem` says so without waiting. Writes wait for it (:meth:`Connection._writing`).
    """

    def __init__(self, path: Path):
        self.path = path
        self._done = threading.Event()
        self._error: ProjectError | None = None

    def run(self) -> None:
        """Check the file now (``PRAGMA quick_check``) and keep the outcome."""
        try:
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                problems = [row[0] for row in conn.execute("PRAGMA quick_check(1)")]
            finally:
                conn.close()
        except sqlite3.Error as error:
            problems = [str(error)]
        if problems != ["ok"]:
            problem = " ".join(problems[0].split())  # one line
            self._error = ProjectError(
                f"{self.path} is corrupt (PRAGMA quick_check: {problem}); restore it from a backup"
            )
        self._done.set()

    def in_background(self) -> IntegrityCheck:
        """Start :meth:`run` in a daemon thread; returns self."""
        threading.Thread(target=self.run, name="goldset-quick-check", daemon=True).start()
        return self

    def running(self) -> bool:
        """Whether the check has not finished yet."""
        return not self._done.is_set()

    def problem(self) -> ProjectError | None:
        """The error if the check found the file corrupt (None while it runs or if it passed)."""
        return self._error if self._done.is_set() else None

    def wait(self) -> None:
        """Wait for the check; raise :class:`ProjectError` if the file is corrupt."""
        self._done.wait()
        if self._error is not None:
            raise self._error


# The integrity check of each project file this process opened, by (path, inode): one check
# per file and process, so that the app's sessions and repeated opens pay it once. A file
# whose check failed is checked again at its next open (it may have been restored).
_CHECKS: dict[tuple[str, int], IntegrityCheck] = {}


def _identity(path: Path) -> tuple[str, int]:
    return str(path.resolve()), path.stat().st_ino


def _check_of(path: Path, background: bool) -> IntegrityCheck:
    """The integrity check of ``path`` in this process, started if none was: in the background
    when ``background`` is asked for and the file is large (:data:`BACKGROUND_CHECK_BYTES`),
    else done before returning, raising :class:`ProjectError` if the file is corrupt."""
    identity = _identity(path)
    check = _CHECKS.get(identity)
    if check is None or (not check.running() and check.problem() is not None):
        check = _CHECKS[identity] = IntegrityCheck(path)
        if background and path.stat().st_size >= BACKGROUND_CHECK_BYTES:
            return check.in_background()
        check.run()
    if not background:
        check.wait()
    elif (problem := check.problem()) is not None:
        raise problem
    return check


def _inspect_project(path: Path, background: bool = False) -> list:
    """Check, through a read-only connection, that ``path`` is a goldset project whose
    integrity check passed (or, with ``background``, runs: see :func:`_check_of`); return
    its pending migrations. Raises :class:`ProjectError` otherwise."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise ProjectError(f"cannot open {path}: {error}") from None
    try:
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError:
            problem = "is not a goldset project (not an SQLite database)"
            raise ProjectError(f"{path} {problem}") from None
        applied = set()
        if Migrations.migrations_table in tables:
            applied = {
                row[0]
                for row in conn.execute(
                    f"SELECT name FROM {Migrations.migrations_table} WHERE migration_set = ?",
                    (migrations.name,),
                )
            }
        if create_schema.__name__ not in applied or "queries" not in tables:
            raise ProjectError(
                f"{path} is not a goldset project (an SQLite file without goldset's tables)"
            )
        if not background:  # checked before anything more is read of a scribbled file
            _check_of(path, background=False)
        try:
            pending = migrations.pending(sqlite_utils.Database(conn))
        except sqlite3.DatabaseError as error:
            _check_of(path, background=False)  # says which page is corrupt, if it can
            raise ProjectError(f"{path} is corrupt ({error}); restore it from a backup") from None
    finally:
        conn.close()
    if background:  # a migration writes: it waits for the check
        _check_of(path, background=not pending)
    return pending


def _check_in_process(path: Path) -> IntegrityCheck | None:
    """The integrity check of ``path`` that this process started, if any (running, or
    passed): a connection's writes wait for it."""
    try:
        return _CHECKS.get(_identity(path))
    except OSError:  # no such file (yet): nothing checked
        return None


def _writable(path: Path) -> bool:
    """True when the file may be written: its permission bits allow it (checked even for root,
    who may write anything: a file made read-only is meant to stay so) and so does the OS."""
    return bool(path.stat().st_mode & 0o222) and os.access(path, os.W_OK)


def chunks(items: Sequence[str]) -> Iterator[list[str]]:
    """``items`` in lists of at most :data:`CHUNK`: the bound parameters one statement
    may take."""
    for start in range(0, len(items), CHUNK):
        yield list(items[start : start + CHUNK])


def qmarks(items: Sequence) -> str:
    """SQL placeholders for ``items`` (``?, ?, ?``), as in ``IN (...)``."""
    return ", ".join("?" * len(items))


class Connection:
    """Opening the database, transactions, snapshots and key-press tagging."""

    # Told, after each write transaction commits, how long it held the write lock (seconds)
    # and how many rows it changed: how tests and bench/lock_contention.py see the longest.
    transaction_observer: Callable[[float, int], None] | None = None

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        timeout: float = 30.0,
        read_only: bool = False,
    ):
        """Open (creating and migrating if needed) the project database at ``path``.

        ``read_only=True`` opens it with SQLite's ``mode=ro``: nothing is written to the file,
        not even the switch to WAL or a migration (see :meth:`open_project`, which decides).
        """
        if synchronous not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS}, got {synchronous!r}")
        self.path = Path(path)
        target = f"{self.path.resolve().as_uri()}?mode=ro" if read_only else self.path
        self.conn = sqlite3.connect(
            target, check_same_thread=False, isolation_level=None, timeout=timeout, uri=read_only
        )
        self.db = sqlite_utils.Database(self.conn)
        self._lock = threading.RLock()
        # The open write transaction (see _writing): the thread that holds it (None: none is
        # open), and whether a block that joined it failed (then all of it is rolled back).
        self._writer: int | None = None
        self._write_failed = False
        # What the open transaction has read once (see _once): None outside a transaction.
        self._memo: dict[str, object] | None = None
        self._integrity = _check_in_process(self.path)  # writes wait for it
        self._timeout = timeout
        if read_only:
            return
        self.db.enable_wal()
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.conn.execute("PRAGMA foreign_keys=ON")
        if migrations.pending(self.db):
            with self._writing():  # re-checked under the write lock: one process migrates
                migrations.apply(self.db)
        self._after_migrating()

    def _after_migrating(self) -> None:
        """What a migration leaves to the layers above the schema (on every writable open,
        so that a process that died before doing it leaves it to the next): nothing here;
        :meth:`Projections._after_migrating` re-derives projections marked stale."""

    @contextmanager
    def _import_lock(self) -> Iterator[None]:
        """One import, pooling or projection rebuild at a time per project file, across
        threads and processes.

        An OS lock (``flock``) on the database file, released by the OS if the holder dies;
        SQLite's own locks are ``fcntl`` byte ranges, which ``flock`` does not touch. Holding
        it, :meth:`_discard_abandoned` first removes what a dead holder left behind.
        """
        with open(self.path, "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                self._discard_abandoned()
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _discard_abandoned(self) -> None:
        """What a holder of :meth:`_import_lock` that died left behind, removed by the next
        holder: here a pool's half-swapped candidates tables (see ``Pool.pool``);
        :meth:`Imports._discard_abandoned` adds an import's unpublished batches."""
        self._drop_tables(CANDIDATES_NEXT, CANDIDATES_RETIRED)

    @classmethod
    def open_project(
        cls, path: str | Path, *, write: bool, create: bool = False, background_check: bool = False
    ) -> Self:
        """Open the goldset project at ``path`` for a command, or raise :class:`ProjectError`
        (a one-line message for the user) — and then the file has not been touched.

        A missing path is created only with ``create=True`` (the commands that create a
        project: import, pool). An existing file must be a goldset project (goldset's own
        migration record, checked through a read-only connection before anything is written),
        pass ``PRAGMA quick_check`` (a scribbled page is caught here, not halfway through a
        command) and, for ``write=True``, be writable. Read commands (``write=False``) get a
        read-only connection, so they never change the file's bytes. The app calls this with
        ``write=True`` for the project named by ``GOLDSET_DB``, and ``background_check=True``:
        a large file's ``quick_check`` then runs in the background (once per process), so
        that pages show at once; meanwhile every write waits for it, and once it has failed
        writes and :meth:`integrity_problem` raise the one-line :class:`ProjectError`.
        """
        path = Path(path)
        if path.is_dir():
            raise ProjectError(f"{path} is a directory, not a goldset project")
        if not path.exists() or (create and path.stat().st_size == 0):
            if not create:
                raise ProjectError(f"no goldset project at {path}; `goldset import` creates one")
            if not path.parent.is_dir():
                raise ProjectError(f"cannot create a project at {path}: no folder {path.parent}")
            return cls._opened(path)
        pending = _inspect_project(path, background_check)
        if write or pending:
            if not _writable(path):
                why = "must upgrade it to this goldset version" if pending else "would change it"
                raise ProjectError(f"{path} is read-only, and this command {why}")
            return cls._opened(path)
        return cls._opened(path, read_only=True)

    @classmethod
    def _opened(cls, path: Path, *, read_only: bool = False) -> Self:
        try:
            return cls(path, read_only=read_only)
        except sqlite3.Error as error:
            raise ProjectError(f"cannot open the project {path}: {error}") from None

    def integrity_problem(self) -> ProjectError | None:
        """The error if this process's integrity check of the file (see :meth:`open_project`)
        found it corrupt; None while it runs, once it passed, or when none ran."""
        return None if self._integrity is None else self._integrity.problem()

    def wait_for_integrity_check(self) -> None:
        """Wait for this process's integrity check of the file if one runs (see
        :meth:`open_project`); raise :class:`ProjectError` if it failed. Writes call it."""
        if self._integrity is not None:
            self._integrity.wait()

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed when the last connection closes)."""
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _writing(self, press: tuple[str, int] | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction, ``BEGIN IMMEDIATE`` (see the module docstring).

        A block inside one that is already open on the same thread joins it: one key press is
        one transaction whatever store methods it calls (see :meth:`key_press`); another
        thread's block waits for it to end, never joins it (it would be rolled back with it).
        A joined block that raises dooms the whole transaction: it is rolled back at its end
        even if the caller went on, so that an action refused halfway never commits what it
        wrote before the refusal.
        ``press`` (a browser page's id and press number) is recorded in the same commit when
        the transaction changed anything (see :meth:`applied_key_press`).
        """
        if self._writer == threading.get_ident():  # another thread waits for the lock below
            try:
                yield self.conn
            except BaseException:
                self._write_failed = True
                raise
            return
        self.wait_for_integrity_check()
        with self._lock:
            self._begin()
            began, changes = time.perf_counter(), self.conn.total_changes
            self._writer, self._write_failed, self._memo = threading.get_ident(), False, {}
            try:
                yield self.conn
                doomed = self._write_failed
                if doomed:
                    self._end_transaction("ROLLBACK")
                else:
                    if press is not None and self.conn.total_changes != changes:
                        self._record_key_press(*press)
                    self.conn.execute("COMMIT")
            except BaseException:
                self._end_transaction("ROLLBACK")
                raise
            finally:
                self._writer, self._memo = None, None
            if not doomed and self.transaction_observer is not None:
                self.transaction_observer(
                    time.perf_counter() - began, self.conn.total_changes - changes
                )

    def _once(self, key: str, read: Callable[[], object]) -> object:
        """``read()``, called once per transaction: the open transaction (read or write) keeps
        what it returned under ``key``; outside a transaction it is read every time. A
        transaction that changes what ``read`` reads calls :meth:`_forget` after."""
        if self._memo is None:
            return read()
        if key not in self._memo:
            self._memo[key] = read()
        return self._memo[key]

    def _forget(self, key: str) -> None:
        """Drop what the open transaction kept under ``key`` (see :meth:`_once`)."""
        if self._memo is not None:
            self._memo.pop(key, None)

    def _begin(self) -> None:
        """``BEGIN IMMEDIATE``, retried every few milliseconds until the busy timeout.

        SQLite's busy handler sleeps longer and longer between tries, 100 ms each after the first
        200 ms: a writer waiting behind an import's short transactions kept waking up after the
        pause between two of them had passed, and waited several times as long as the longest
        transaction (bench/lock_contention.py). Its first tries come within milliseconds, so each
        try here lets it wait only :data:`LOCK_POLL`, and tries again."""
        deadline = time.monotonic() + self._timeout
        self.conn.execute(f"PRAGMA busy_timeout = {int(LOCK_POLL * 1000)}")
        try:
            while True:
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as error:
                    if not is_busy(error) or time.monotonic() >= deadline:
                        raise
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")

    def _drop_tables(self, *names: str) -> None:
        """Drop each of the tables ``names`` (copies of ``candidates``) that exists: its rows
        first, :data:`DROP_ROWS` a transaction with a pause between for waiting writers,
        then the empty table (dropping millions of rows at once held the lock for over a
        second: bench/lock_contention.py)."""
        for name in names:
            deleted = self._value(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
            )
            while deleted:
                with self._writing() as conn:
                    deleted = conn.execute(
                        f"DELETE FROM {name} WHERE (query_id, doc_id) IN "
                        f"(SELECT query_id, doc_id FROM {name} LIMIT ?)",
                        (DROP_ROWS,),
                    ).rowcount
                time.sleep(LOCK_POLL)  # a waiting writer tries again within this
            with self._writing() as conn:
                conn.execute(f"DROP TABLE IF EXISTS {name}")

    @contextmanager
    def _scratch(self) -> Iterator[sqlite3.Connection]:
        """A transaction that writes only this connection's TEMP tables. It takes no lock on
        the project (TEMP tables are private to the connection), so an import prepares its
        rows there while annotators keep writing, then copies them in one short transaction."""
        with self._lock:
            self.conn.execute("BEGIN")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                self._end_transaction("ROLLBACK")
                raise

    @contextmanager
    def _foreign_keys_off(self) -> Iterator[None]:
        """Foreign keys unchecked on this connection only, for an import's bulk writes: its
        rows are checked beforehand, and some are written before the rows they refer to
        (invisible until then; see :meth:`Imports.import_tasks`). Outside any transaction."""
        self.conn.execute("PRAGMA foreign_keys=OFF")
        try:
            yield
        finally:
            self.conn.execute("PRAGMA foreign_keys=ON")

    @contextmanager
    def key_press(self, page: str | None = None, seq: int = 0) -> Iterator[None]:
        """One key press, applied in one write transaction: every store action called inside
        joins it (see :meth:`_writing`).

        A press typed in a browser page names the page and its sequence number: ``(page,
        seq)`` is recorded in the same commit when the press wrote anything, so the log
        itself says which presses it holds. A server that restarts while a browser still
        holds presses it was never told were applied asks :meth:`applied_key_press` instead
        of applying them a second time. Without a page (a click) nothing is recorded.
        """
        with self._writing(press=None if page is None else (page, seq)):
            yield

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
        """A read transaction: several SELECTs see one consistent snapshot. Inside an open
        transaction it joins it."""
        with self._lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            self._memo = {}
            try:
                yield self.conn
            finally:
                self._memo = None
                self._end_transaction("COMMIT")

    def _end_transaction(self, statement: str) -> None:
        """``COMMIT`` or ``ROLLBACK`` the open transaction, if the connection still has one.

        A generator that reads in chunks (:meth:`Export.iter_golden_records`) may be closed
        only after the store (a command that failed halfway, then closed the store): closing
        the connection already ended its transaction, and ending it again would raise from
        the generator's clean-up, a traceback after the command's own message.
        """
        try:
            open_transaction = self.conn.in_transaction
        except sqlite3.ProgrammingError:  # the connection was closed
            return
        if open_transaction:
            self.conn.execute(statement)

    def _rows(self, sql: str, params: Sequence | Mapping = ()) -> list[dict]:
        with self._lock:
            cursor = self.conn.execute(sql, params)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _value(self, sql: str, params: Sequence | Mapping = ()) -> object:
        with self._lock:
            row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None
