"""The project database: the one module that owns the schema, the connections and every SQL
statement. The app, the CLI and the team features all go through :class:`Store`.

Design, in short:

- SQLite through sqlite-utils, on our own ``sqlite3`` connection (``check_same_thread=False``
  because Streamlit reruns a session on new threads; ``isolation_level=None`` so that we, not
  the driver, say where transactions begin). One :class:`Store` per thread or browser session.
- WAL journal, a busy timeout, and every write transaction opened with ``BEGIN IMMEDIATE``:
  a deferred ``BEGIN`` that reads before writing cannot wait for the lock and fails with
  "database is locked" under concurrent writers (measured in NOTES.md); ``IMMEDIATE`` takes
  the write lock up front, so writers queue on the busy timeout instead of failing.
- The judgement log (``events``) is append-only: triggers refuse UPDATE and DELETE. Undo is a
  new event. ``labels``, ``query_state``, ``progress`` and ``queries.status`` are projections
  of the log, rewritten in the same transaction as each event for the (query, annotator) it
  touches — so every key press costs a handful of index lookups, never a table scan — and
  :meth:`Store.rebuild_projections` can recompute them all from the log.
"""

from __future__ import annotations

import fcntl
import gc
import json
import math
import os
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from dataclasses import field as default_field
from pathlib import Path

import pandas as pd
import sqlite_utils
from sqlite_utils import Migrations

from eval.readers import InputError
from labeler import golden
from labeler.golden import Decision, Event, QueryContext, QueryState
from labeler.importing import (
    GoldenLabels,
    Task,
    collect_documents,
    read_tasks,
    tasks_from_records,
)
from labeler.pooling import (
    PooledRun,
    fuse,
    fusion_scores,
    line_of_doc,
    next_to_judge,
    read_corpus,
    read_pooled_run,
    read_queries,
)

# The demo set ships inside the package (labeler/data, from the repository's data/ folder).
# From a clone, the default project lives in data/ beside the demo; an installed package may sit
# in a read-only site-packages, so there the default project lives in the user's data folder.
PACKAGE_DATA = Path(__file__).resolve().parent / "data"
SOURCE_DATA = Path(__file__).resolve().parents[1] / "data"
FROM_CLONE = (SOURCE_DATA / "demo.jsonl").exists() and not (PACKAGE_DATA / "demo.jsonl").exists()
DATA_DIR = SOURCE_DATA if FROM_CLONE else PACKAGE_DATA
DEMO_TASKS = DATA_DIR / "demo.jsonl"


def user_data_dir() -> Path:
    """Where an installed goldset keeps its default project: ``$XDG_DATA_HOME/goldset``
    (``~/.local/share/goldset``), ``%LOCALAPPDATA%\\goldset`` on Windows, ``~/Library/Application
    Support/goldset`` on macOS."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "goldset"


DEFAULT_DB = SOURCE_DATA / "goldset.db" if FROM_CLONE else user_data_dir() / "goldset.db"
IMPORT_RUN = "import"  # provenance name of a list imported from a tasks file
ROLES = ("annotator", "reviewer", "admin")
# depth 0 = every candidate of a query is judged (no cut-off).
DEFAULT_SETTINGS = {"mode": "first_hit", "max_grade": 3, "rel_threshold": 1, "depth": 0}
SYNCHRONOUS = ("NORMAL", "FULL")
CHUNK = 500  # ids per "IN (...)" query, well under SQLite's variable limit
STAGE_ROWS = 20_000  # rows deleted per transaction when an unpublished import is discarded
STAGE_SECONDS = 0.3  # an import's transactions hold the write lock about this long...
STAGE_PAUSE = 0.1  # ...then let waiting writers in (see Store._in_short_transactions)
ROUND_TRIP_KEYS = (golden.POOL_KEY, "labels", "adjudication")
# Documents of an import batch not yet published are not found by search.
UNPUBLISHED_HIDDEN = (
    "batch IS NULL OR batch IN (SELECT id FROM import_batches WHERE published_at IS NOT NULL)"
)
_NO_TEXT = {"title": None, "text": None, "metadata": None}  # a doc named, not described

migrations = Migrations("goldset")


@migrations()
def create_schema(db: sqlite_utils.Database) -> None:
    """Version 1 of the schema."""
    actions = ", ".join(f"'{action}'" for action in golden.ACTIONS)
    db.executescript(
        f"""
        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE queries (
            query_id TEXT PRIMARY KEY,
            position INTEGER NOT NULL UNIQUE,          -- queue order: import order
            query TEXT NOT NULL,
            slice TEXT NOT NULL DEFAULT '',
            metadata TEXT NOT NULL DEFAULT '{{}}',     -- JSON: the input's extra keys
            content_hash TEXT NOT NULL,                -- re-importing the same query is a no-op
            source TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',    -- projection: golden status
            answerable INTEGER NOT NULL DEFAULT 1,     -- projection
            created_at TEXT NOT NULL
        );
        CREATE INDEX queries_open ON queries(position) WHERE status != 'done';
        CREATE TABLE documents (
            doc_id TEXT PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL DEFAULT '',
            metadata TEXT                              -- JSON: a candidate's extra keys
        );
        CREATE TABLE candidates (
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            doc_id TEXT NOT NULL REFERENCES documents(doc_id),
            position INTEGER NOT NULL,                 -- display order, 1-based
            score REAL,                                -- the system's score, or the fused one
            imported_rank INTEGER,                     -- rank in an imported list
            PRIMARY KEY (query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE INDEX candidates_position ON candidates(query_id, position);
        CREATE TABLE runs (
            name TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            depth INTEGER NOT NULL,
            pooled_at TEXT NOT NULL
        );
        CREATE TABLE pool_ranks (                      -- provenance: run -> rank of each doc
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            run TEXT NOT NULL REFERENCES runs(name),
            rank INTEGER NOT NULL,
            doc_id TEXT NOT NULL,
            score REAL NOT NULL,
            PRIMARY KEY (query_id, run, rank)
        ) WITHOUT ROWID;
        CREATE TABLE annotators (
            name TEXT PRIMARY KEY,
            role TEXT NOT NULL DEFAULT 'annotator',
            password_hash TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE assignments (
            annotator TEXT NOT NULL,
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            position INTEGER NOT NULL,
            open INTEGER NOT NULL DEFAULT 1,           -- projection: not done/skipped by them
            assigned_at TEXT NOT NULL,
            PRIMARY KEY (annotator, query_id)
        );
        CREATE INDEX assignments_open ON assignments(annotator, position) WHERE open = 1;
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            doc_id TEXT,
            annotator TEXT NOT NULL,
            action TEXT NOT NULL CHECK (action IN ({actions})),
            grade INTEGER,
            mode TEXT CHECK (mode IS NULL OR mode IN ('first_hit', 'full')),
            seconds REAL NOT NULL DEFAULT 0 CHECK (seconds >= 0),
            note TEXT,
            undoes INTEGER REFERENCES events(id),
            created_at TEXT NOT NULL
        );
        CREATE INDEX events_query_annotator ON events(query_id, annotator, id);
        CREATE INDEX events_annotator ON events(annotator, id);
        CREATE UNIQUE INDEX events_undoes ON events(undoes) WHERE undoes IS NOT NULL;
        CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
            BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
        CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
            BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
        CREATE TABLE labels (                          -- projection: current grade per doc
            query_id TEXT NOT NULL,
            annotator TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            grade INTEGER NOT NULL,
            event_id INTEGER NOT NULL,
            PRIMARY KEY (query_id, annotator, doc_id)
        ) WITHOUT ROWID;
        CREATE TABLE query_state (                     -- projection: per query and annotator
            query_id TEXT NOT NULL,
            annotator TEXT NOT NULL,
            slice TEXT NOT NULL,
            status TEXT NOT NULL,
            answerable INTEGER NOT NULL,
            needs_verdict INTEGER NOT NULL,
            mode TEXT NOT NULL,
            first_relevant_rank INTEGER,
            judged_depth INTEGER NOT NULL,
            seconds REAL NOT NULL,
            last_event_id INTEGER NOT NULL,
            updated_at TEXT,
            note TEXT NOT NULL,
            PRIMARY KEY (query_id, annotator)
        );
        CREATE INDEX query_state_queue ON query_state(annotator, status, last_event_id);
        CREATE INDEX query_state_recent ON query_state(annotator, last_event_id);
        CREATE TABLE progress (                        -- projection: counts for progress bars
            annotator TEXT NOT NULL,                   -- '' = the golden (merged) status
            slice TEXT NOT NULL,
            state TEXT NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (annotator, slice, state)
        ) WITHOUT ROWID;
        """
    )
    # No sync triggers: the store indexes new documents itself, in bulk (see _stage_documents).
    db["documents"].enable_fts(["title", "text"], tokenize="porter")


@migrations()
def create_eval_records(db: sqlite_utils.Database) -> None:
    """Version 2: run history, the results of ``goldset eval --record`` with their tags."""
    db.executescript(
        """
        CREATE TABLE eval_records (
            id INTEGER PRIMARY KEY,
            recorded_at TEXT NOT NULL,
            run TEXT NOT NULL,                          -- the run's name (file stem)
            run_sha256 TEXT NOT NULL,                   -- what was evaluated, exactly
            golden_version TEXT NOT NULL,               -- content hash of the labels used
            tags TEXT NOT NULL DEFAULT '{}',            -- JSON: model=..., chunking=...
            queries TEXT NOT NULL,                      -- JSON: the report's query accounting
            metrics TEXT NOT NULL,                      -- JSON: {metric: mean}
            slices TEXT NOT NULL DEFAULT '{}'           -- JSON: {slice: {metric: mean}}
        );
        """
    )


@migrations()
def create_team_tables(db: sqlite_utils.Database) -> None:
    """Version 3: login lockout counters, and reviewers' adjudications (an append-only log)."""
    db.executescript(
        """
        ALTER TABLE annotators ADD COLUMN failed_logins INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE annotators ADD COLUMN locked_until TEXT;   -- log time; NULL = not locked
        CREATE TABLE adjudications (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            reviewer TEXT NOT NULL,
            judgments TEXT NOT NULL,                   -- JSON {doc_id: grade}: the decision
            answerable INTEGER NOT NULL,
            adopted TEXT,                              -- annotator whose labels were accepted
            note TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        );
        CREATE INDEX adjudications_query ON adjudications(query_id, id);
        CREATE TRIGGER adjudications_append_only_update BEFORE UPDATE ON adjudications
            BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); END;
        CREATE TRIGGER adjudications_append_only_delete BEFORE DELETE ON adjudications
            BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); END;
        """
    )


@migrations()
def create_key_presses(db: sqlite_utils.Database) -> None:
    """Version 4: the last key press of each browser page whose writes are in the log."""
    db.executescript(
        """
        CREATE TABLE key_presses (
            page TEXT PRIMARY KEY,                     -- the browser page's random id
            seq INTEGER NOT NULL,                      -- its last press that wrote anything
            applied_at TEXT NOT NULL
        );
        """
    )


@migrations()
def create_sign_in_tables(db: sqlite_utils.Database) -> None:
    """Version 5: signed-in browsers, and password checks in flight (see attempt_login). Only
    hashes of the cookie's session id and of the one-time ticket that claims it are stored: a
    copy of the database signs nobody in."""
    db.executescript(
        """
        CREATE TABLE login_attempts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            annotator TEXT NOT NULL,
            started_at TEXT NOT NULL                   -- log time
        );
        CREATE TABLE browser_sessions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            annotator TEXT NOT NULL,
            token_hash TEXT UNIQUE,                    -- sha256 of the cookie; NULL until claimed
            ticket_hash TEXT UNIQUE,                   -- sha256 of the one-time ticket
            ticket_expires TEXT,                       -- log time; the ticket is void after it
            created_at TEXT NOT NULL,
            last_seen TEXT NOT NULL,
            expires_at TEXT NOT NULL,                  -- log time: the absolute end
            revoked_at TEXT                            -- log time: logout, removal, new role
        );
        CREATE INDEX browser_sessions_annotator ON browser_sessions(annotator);
        """
    )


class ProjectError(ValueError):
    """A database path that is not a usable goldset project (missing, a directory, a foreign
    or corrupt file, read-only for a write). The message is one line, for the user."""


@migrations()
def create_import_batches(db: sqlite_utils.Database) -> None:
    """Version 6: imports written in batches of short transactions, then published in one.

    A batch's documents and candidates are written first (``batch`` = its id), invisible
    until its queries are inserted by the one short transaction that publishes it; a batch
    never published (the importer died) is deleted by the next import. ``events.batch``
    marks the events an import replayed: they are on nobody's undo stack.
    """
    db.executescript(
        """
        CREATE TABLE import_batches (
            id INTEGER PRIMARY KEY,
            source TEXT NOT NULL,
            started_at TEXT NOT NULL,
            published_at TEXT                          -- NULL: staged, not visible
        );
        ALTER TABLE documents ADD COLUMN batch INTEGER;
        ALTER TABLE candidates ADD COLUMN batch INTEGER;
        ALTER TABLE events ADD COLUMN batch INTEGER;
        CREATE INDEX documents_batch ON documents(batch) WHERE batch IS NOT NULL;
        CREATE INDEX candidates_batch ON candidates(batch) WHERE batch IS NOT NULL;
        """
    )


@migrations()
def create_protocol_log(db: sqlite_utils.Database) -> None:
    """Version 7: every change of the labelling protocol, with who made it and when."""
    db.executescript(
        """
        CREATE TABLE protocol_log (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            changed_by TEXT NOT NULL,
            changed_at TEXT NOT NULL,
            changes TEXT NOT NULL,                     -- JSON {setting: new value}
            settings TEXT NOT NULL                     -- JSON: the whole protocol afterwards
        );
        """
    )


ANY_GRADE = object()  # Store.judge without a compare-and-set on the doc's current grade


class StaleTarget(ValueError):
    """A press aimed at what a page showed, which has changed since (e.g. in another tab)."""


# The key press being applied on this thread (see Store.key_press): (page id, sequence number).
_KEY_PRESS: ContextVar[tuple[str, int] | None] = ContextVar("goldset_key_press", default=None)


class Store:
    """A goldset project database.

    >>> store = Store("project.db")                           # doctest: +SKIP
    >>> store.import_tasks("tasks.jsonl")                     # doctest: +SKIP
    >>> query_id = store.next_query("ana")                    # doctest: +SKIP
    >>> doc = store.next_candidate(query_id, "ana")           # doctest: +SKIP
    >>> store.judge(query_id, doc["doc_id"], 1, "ana", seconds=4.2)   # doctest: +SKIP

    ``synchronous="NORMAL"`` (the default) with WAL makes every acknowledged write survive the
    process being killed at any instant: a commit is in the WAL file (in the OS page cache)
    before ``judge`` returns, and SQLite replays the WAL on the next open. Only an OS crash or
    power loss can lose the last commits; ``synchronous="FULL"`` fsyncs the WAL on every
    commit and closes that gap too, at the cost of one fsync per judgement.
    """

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
        if read_only:
            return
        self.db.enable_wal()
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.conn.execute("PRAGMA foreign_keys=ON")
        if migrations.pending(self.db):
            with self._writing():  # re-checked under the write lock: one process migrates
                migrations.apply(self.db)

    @classmethod
    def open_project(cls, path: str | Path, *, write: bool, create: bool = False) -> Store:
        """Open the goldset project at ``path`` for a command, or raise :class:`ProjectError`
        (a one-line message for the user) — and then the file has not been touched.

        A missing path is created only with ``create=True`` (the commands that create a
        project: import, pool). An existing file must be a goldset project (goldset's own
        migration record, checked through a read-only connection before anything is written),
        pass ``PRAGMA quick_check`` (a scribbled page is caught here, not halfway through a
        command) and, for ``write=True``, be writable. Read commands (``write=False``) get a
        read-only connection, so they never change the file's bytes. The app calls this with
        ``write=True`` for the project named by ``GOLDSET_DB``.
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
        pending = _inspect_project(path)
        if write or pending:
            if not _writable(path):
                why = "must upgrade it to this goldset version" if pending else "would change it"
                raise ProjectError(f"{path} is read-only, and this command {why}")
            return cls._opened(path)
        return cls._opened(path, read_only=True)

    @classmethod
    def _opened(cls, path: Path, *, read_only: bool = False) -> Store:
        try:
            return cls(path, read_only=read_only)
        except sqlite3.Error as error:
            raise ProjectError(f"cannot open the project {path}: {error}") from None

    @classmethod
    def open_default(cls) -> Store:
        """The default project (:data:`DEFAULT_DB`), created from the demo set on first use
        (and checked, when it exists, as :meth:`open_project` checks any project)."""
        DEFAULT_DB.parent.mkdir(parents=True, exist_ok=True)
        store = cls.open_project(DEFAULT_DB, write=True, create=True)
        if not store.has_queries():
            store.import_tasks(DEMO_TASKS)
        return store

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed when the last connection closes)."""
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- transactions -----------------------------------------------------------------------------

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

    # --- settings ---------------------------------------------------------------------------------

    def settings(self) -> dict:
        """The project's labelling protocol: ``mode`` (first_hit|full), ``depth`` (candidates
        judged per query, 0 = all), ``max_grade`` (1 = binary, default 3) and
        ``rel_threshold`` (grade counted as relevant, default 1)."""
        with self._lock:
            stored = dict(self.conn.execute("SELECT key, value FROM settings").fetchall())
        return {
            key: type(default)(stored.get(key, default))
            for key, default in DEFAULT_SETTINGS.items()
        }

    def configure(
        self,
        *,
        mode: str | None = None,
        max_grade: int | None = None,
        rel_threshold: int | None = None,
        depth: int | None = None,
        by: str = "cli",
    ) -> dict:
        """Change the labelling protocol; returns it whole. ``max_grade=1`` is a binary
        project; ``depth=0`` judges every candidate. A change is logged with ``by`` and the
        time (see :meth:`protocol_log`); settings given at their current value log nothing."""
        if mode is not None and mode not in golden.MODES:
            raise ValueError(f"mode must be one of {golden.MODES}, got {mode!r}")
        for name, value, least in (
            ("max_grade", max_grade, 1),
            ("rel_threshold", rel_threshold, 1),
            ("depth", depth, 0),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < least
            ):
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        given = dict(mode=mode, max_grade=max_grade, rel_threshold=rel_threshold, depth=depth)
        with self._writing() as conn:
            before = self.settings()
            changes = {k: v for k, v in given.items() if v is not None and v != before[k]}
            settings = {**before, **changes}
            if settings["rel_threshold"] > settings["max_grade"]:
                raise ValueError(
                    f"rel_threshold {settings['rel_threshold']} is above max_grade "
                    f"{settings['max_grade']}: nothing could be relevant"
                )
            highest = self._value("SELECT max(grade) FROM labels") or 0
            if settings["max_grade"] < highest:
                raise ValueError(
                    f"max_grade {settings['max_grade']} is below a grade given: {highest}"
                )
            if not changes:
                return settings
            conn.executemany(
                "INSERT INTO settings (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [(key, str(value)) for key, value in changes.items()],
            )
            conn.execute(
                "INSERT INTO protocol_log (changed_by, changed_at, changes, settings) "
                "VALUES (?, ?, ?, ?)",
                (by, golden.now(), json.dumps(changes), json.dumps(settings)),
            )
            for query_id in self._all_query_ids_with_events():
                self._refresh(query_id)
        return self.settings()

    def protocol_log(self) -> list[dict]:
        """Every change of the protocol, oldest first: changed_by, changed_at, changes (the
        settings changed, with their new values) and settings (the whole protocol after)."""
        rows = self._rows(
            "SELECT changed_by, changed_at, changes, settings FROM protocol_log ORDER BY id"
        )
        for row in rows:
            row.update(changes=json.loads(row["changes"]), settings=json.loads(row["settings"]))
        return rows

    # --- import -----------------------------------------------------------------------------------

    def import_tasks(self, path: str | Path) -> dict:
        """Import a tasks file (JSONL or CSV, see DESIGN.md; golden-set JSONL also accepted).

        All-or-nothing: everything is validated first; any problem raises
        :class:`eval.readers.InputError` (a ValueError naming file, line and field) and leaves
        the database unchanged. Queries already present with identical content are skipped,
        so importing the same file twice is a no-op; the same query_id with different content
        is an error. Returns counts: ``queries_added``, ``queries_unchanged``,
        ``candidates_added``, ``documents_added``.

        A large import never holds the write lock for long (annotators keep labelling): its
        documents and candidates are written in short transactions (about
        :data:`STAGE_SECONDS` each), invisible until one short transaction inserts its queries (see
        :func:`create_import_batches`). Readers see all of it or none; a crash leaves nothing
        visible, and the next import deletes what it left.
        """
        with _collector_paused():
            tasks = read_tasks(path, max_grade=self.settings()["max_grade"])
            return self._import(tasks, str(path))

    def import_records(self, records: Iterable[dict], source: str = "<records>") -> dict:
        """Import task (or golden-set) records given as dicts; see :meth:`import_tasks`."""
        with _collector_paused():
            tasks = tasks_from_records(records, source, max_grade=self.settings()["max_grade"])
            return self._import(tasks, source)

    def _import(self, tasks: Sequence[Task], source: str) -> dict:
        with self._import_lock():
            known = self._content_hashes([task.query_id for task in tasks])
            for task in tasks:
                if task.query_id in known and known[task.query_id] != task.content_hash:
                    problem = f"{task.query_id!r} is already in the database with different content"
                    raise InputError(source, task.line, "query_id", problem)
            new = [task for task in tasks if task.query_id not in known]
            plans = {
                task.query_id: _golden_plan(task, source, self.settings()["max_grade"])
                for task in new
                if task.golden is not None
            }
            documents = collect_documents(new, source)
            for task in new:
                if task.query_id in plans:
                    for doc_id in plans[task.query_id].doc_ids:
                        documents.setdefault(doc_id, (task.line, "", _NO_TEXT))
            new_documents, fill_ins = self._new_documents(documents, source)
            replay = _replayed(new, plans, self.settings(), source)
            candidates = [
                row
                for task in new
                for row in (
                    plans[task.query_id].candidate_rows(task.query_id)
                    if task.query_id in plans
                    else _imported_rows(task)
                )
            ]
            with self._batch(source) as batch:
                self._stage_documents(new_documents, batch)
                self._stage_candidates(candidates, batch)
                with self._writing():
                    self._add_queries(
                        [
                            (t.query_id, t.query, t.slice, _stored_metadata(t), t.content_hash)
                            for t in new
                        ],
                        source,
                    )
                    for doc_id, (title, text) in fill_ins.items():
                        self._rewrite_document(doc_id, title, text)
                    self._replay_golden(replay, batch)
                    self._publish(batch)
        return {
            "queries_added": len(new),
            "queries_unchanged": len(tasks) - len(new),
            "candidates_added": len(candidates),
            "documents_added": len(new_documents),
        }

    @contextmanager
    def _import_lock(self) -> Iterator[None]:
        """One import or pooling at a time per project file, across threads and processes.

        An OS lock (``flock``) on the database file, released by the OS if the importer dies;
        SQLite's own locks are ``fcntl`` byte ranges, which ``flock`` does not touch. Holding
        it, the import first deletes any batch that a dead importer left unpublished.
        """
        with open(self.path, "rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                for (batch,) in self.conn.execute(
                    "SELECT id FROM import_batches WHERE published_at IS NULL"
                ).fetchall():
                    self._discard_batch(batch)
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def _batch(self, source: str) -> Iterator[int]:
        """A new import batch; deleted again (in short transactions) if anything fails."""
        with self._writing() as conn:
            batch = conn.execute(
                "INSERT INTO import_batches (source, started_at) VALUES (?, ?)",
                (source, golden.now()),
            ).lastrowid
        try:
            yield batch
        except BaseException:
            self._discard_batch(batch)
            raise

    def _publish(self, batch: int) -> None:
        self.conn.execute(
            "UPDATE import_batches SET published_at = ? WHERE id = ?", (golden.now(), batch)
        )

    def _stage_documents(self, rows: Sequence[tuple], batch: int) -> None:
        """Insert new documents and their full-text entries, in short transactions. The
        full-text index is filled in bulk per chunk rather than by a trigger per row:
        measured 3x faster on large imports."""

        def insert(conn: sqlite3.Connection, chunk: Sequence[tuple]) -> None:
            (last_rowid,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM documents").fetchone()
            conn.executemany(
                "INSERT INTO documents (doc_id, title, text, metadata, batch) "
                "VALUES (?, ?, ?, ?, ?)",
                [(*row, batch) for row in chunk],
            )
            conn.execute(
                "INSERT INTO documents_fts (rowid, title, text) "
                "SELECT rowid, title, text FROM documents WHERE rowid > ?",
                (last_rowid,),
            )

        self._in_short_transactions(rows, insert)

    def _stage_candidates(self, rows: Sequence[tuple], batch: int) -> None:
        """Insert candidates in short transactions, before their queries exist: no reader
        reaches a candidate but through its query, so they stay invisible until the batch is
        published (foreign keys are checked off meanwhile, on this connection only)."""

        def insert(conn: sqlite3.Connection, chunk: Sequence[tuple]) -> None:
            conn.executemany(
                "INSERT INTO candidates (query_id, doc_id, position, score, imported_rank, "
                "batch) VALUES (?, ?, ?, ?, ?, ?)",
                [(*row, batch) for row in chunk],
            )

        self.conn.execute("PRAGMA foreign_keys=OFF")
        try:
            self._in_short_transactions(rows, insert)
        finally:
            self.conn.execute("PRAGMA foreign_keys=ON")

    def _in_short_transactions(
        self, rows: Sequence[tuple], write: Callable[[sqlite3.Connection, Sequence[tuple]], None]
    ) -> None:
        """``write`` consecutive chunks of ``rows``, each in its own write transaction sized
        to last about :data:`STAGE_SECONDS` (from the pace of the previous one), with a pause
        of :data:`STAGE_PAUSE` between them. The pause is what lets waiting writers in:
        SQLite's busy handler polls (every 100 ms once it has waited a while), it does not
        queue, so back-to-back transactions would starve an annotator's press (measured:
        5.7 s waits during a 10,000-query import without it, under 1 s with it)."""
        size, start = 1_000, 0
        while start < len(rows):
            began = time.perf_counter()
            with self._writing() as conn:
                write(conn, rows[start : start + size])
            took = max(time.perf_counter() - began, 1e-3)
            start += size
            size = max(100, min(size * 2, int(size * STAGE_SECONDS / took)))
            if start < len(rows):
                time.sleep(STAGE_PAUSE)

    def _discard_batch(self, batch: int) -> None:
        """Delete an unpublished batch's rows, :data:`STAGE_ROWS` a transaction, then the batch."""
        deleted = 1
        while deleted:
            with self._writing() as conn:
                deleted = conn.execute(
                    "DELETE FROM candidates WHERE (query_id, doc_id) IN (SELECT query_id, doc_id "
                    "FROM candidates WHERE batch = ? LIMIT ?)",
                    (batch, STAGE_ROWS),
                ).rowcount
        deleted = 1
        while deleted:
            with self._writing() as conn:
                rows = conn.execute(
                    "SELECT rowid, title, text FROM documents WHERE batch = ? LIMIT ?",
                    (batch, STAGE_ROWS // 4),
                ).fetchall()
                conn.executemany(
                    "INSERT INTO documents_fts (documents_fts, rowid, title, text) "
                    "VALUES ('delete', ?, ?, ?)",
                    rows,
                )
                conn.executemany("DELETE FROM documents WHERE rowid = ?", [(r[0],) for r in rows])
                deleted = len(rows)
        with self._writing() as conn:
            conn.execute("DELETE FROM import_batches WHERE id = ?", (batch,))

    def _content_hashes(self, query_ids: Sequence[str]) -> dict[str, str]:
        hashes: dict[str, str] = {}
        for chunk in _chunks(query_ids):
            hashes.update(
                self.conn.execute(
                    "SELECT query_id, content_hash FROM queries "
                    f"WHERE query_id IN ({_marks(chunk)})",
                    chunk,
                ).fetchall()
            )
        return hashes

    def _add_queries(self, rows: Sequence[tuple[str, str, str, dict, str]], source: str) -> None:
        """Insert new queries at the end of the queue, all pending."""
        start = self.conn.execute("SELECT coalesce(max(position), 0) FROM queries").fetchone()[0]
        created_at = golden.now()
        self.conn.executemany(
            "INSERT INTO queries (query_id, position, query, slice, metadata, content_hash, "
            "source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    query_id,
                    start + i,
                    query,
                    slice_name,
                    json.dumps(metadata, ensure_ascii=False),
                    content_hash,
                    source,
                    created_at,
                )
                for i, (query_id, query, slice_name, metadata, content_hash) in enumerate(rows, 1)
            ),
        )
        per_slice: dict[str, int] = {}
        for _, _, slice_name, _, _ in rows:
            per_slice[slice_name] = per_slice.get(slice_name, 0) + 1
        for slice_name, count in per_slice.items():
            self._count("", slice_name, "pending", count)

    def _new_documents(
        self, documents: Mapping[str, tuple[int, str, dict]], source: str
    ) -> tuple[list[tuple], dict[str, tuple[str, str]]]:
        """Split documents into new rows (doc_id, title, text, metadata) and fill-ins of a
        known doc's empty title/text (doc_id -> (title, text)); refuse a different one.

        ``documents`` maps doc_id to (line, field prefix, {title, text, metadata}); title/text
        None = not given. An error names the line and the field (prefix + title/text).
        """
        existing: dict[str, tuple[str, str]] = {}
        if self.conn.execute("SELECT EXISTS (SELECT 1 FROM documents)").fetchone()[0]:
            for chunk in _chunks(list(documents)):
                for doc_id, title, text in self.conn.execute(
                    f"SELECT doc_id, title, text FROM documents WHERE doc_id IN ({_marks(chunk)})",
                    chunk,
                ):
                    existing[doc_id] = (title, text)
        new_rows, fill_ins = [], {}
        for doc_id, (line, prefix, doc) in documents.items():
            if doc_id not in existing:
                metadata = (
                    json.dumps(doc["metadata"], ensure_ascii=False) if doc["metadata"] else None
                )
                new_rows.append((doc_id, doc["title"] or "", doc["text"] or "", metadata))
                continue
            stored = dict(zip(("title", "text"), existing[doc_id], strict=True))
            for name in ("title", "text"):
                if doc[name] and stored[name] and doc[name] != stored[name]:
                    problem = f"doc {doc_id!r} is already in the database with a different {name}"
                    raise InputError(source, line, prefix + name, problem)
            if any(doc[name] and not stored[name] for name in ("title", "text")):
                fill_ins[doc_id] = (doc["title"] or stored["title"], doc["text"] or stored["text"])
        return new_rows, fill_ins

    def _rewrite_document(self, doc_id: str, title: str, text: str) -> None:
        """Change a document's title and text, and its full-text entry with them."""
        rowid, old_title, old_text = self.conn.execute(
            "SELECT rowid, title, text FROM documents WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        self.conn.execute(
            "INSERT INTO documents_fts (documents_fts, rowid, title, text) "
            "VALUES ('delete', ?, ?, ?)",
            (rowid, old_title, old_text),
        )
        self.conn.execute(
            "UPDATE documents SET title = ?, text = ? WHERE rowid = ?", (title, text, rowid)
        )
        self.conn.execute(
            "INSERT INTO documents_fts (rowid, title, text) VALUES (?, ?, ?)", (rowid, title, text)
        )

    def _replay_golden(self, replay: Replay, batch: int) -> None:
        """Write the events, projections and decisions that reproduce imported golden
        records (computed beforehand by :func:`_replayed`), inside the publishing
        transaction: bulk statements only, so that it stays short. The events carry the
        import ``batch``: they are on nobody's undo stack. Event ids are the replay's own
        numbers shifted past the log's last id."""
        base = self.conn.execute(
            "SELECT max(coalesce(max(id), 0), "
            "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)) FROM events"
        ).fetchone()[0]
        self.conn.executemany(
            "INSERT INTO events (id, query_id, doc_id, annotator, action, grade, mode, seconds, "
            "note, created_at, batch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(base + row[0], *row[1:], batch) for row in replay.events],
        )
        self.conn.executemany(
            "INSERT INTO labels (query_id, annotator, doc_id, grade, event_id) "
            "VALUES (?, ?, ?, ?, ?)",
            [(*row[:4], base + row[4]) for row in replay.labels],
        )
        self.conn.executemany(
            "INSERT INTO query_state (query_id, annotator, slice, status, answerable, "
            "needs_verdict, mode, first_relevant_rank, judged_depth, seconds, last_event_id, "
            "updated_at, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row[:10], base + row[10], *row[11:]) for row in replay.states],
        )
        self.conn.executemany(
            "UPDATE queries SET status = ?, answerable = ? WHERE query_id = ?", replay.statuses
        )
        self.conn.executemany(
            "INSERT INTO progress (annotator, slice, state, n) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (annotator, slice, state) DO UPDATE SET n = n + excluded.n",
            [(*key, n) for key, n in replay.counts.items()],
        )
        self.conn.executemany(
            "INSERT INTO adjudications (query_id, reviewer, judgments, answerable, adopted, "
            "note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            replay.decisions,
        )
        self.conn.executemany(
            "INSERT INTO runs (name, path, sha256, depth, pooled_at) VALUES (?, ?, '', ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET depth = max(depth, excluded.depth)",
            [(run, replay.source, depth, golden.now()) for run, depth in replay.runs.items()],
        )
        self.conn.executemany(
            "INSERT INTO pool_ranks (query_id, run, rank, doc_id, score) VALUES (?, ?, ?, ?, ?)",
            replay.pool_ranks,
        )

    # --- pooling ----------------------------------------------------------------------------------

    def pool(
        self,
        corpus: str | Path | None,
        queries: str | Path | None,
        runs: Sequence[str | Path],
        depth: int,
    ) -> dict:
        """Pool several systems' TREC runs over a BEIR corpus and queries file, to depth ``depth``.

        Each run's top ``depth`` per query (trec_eval order: score desc, doc_id desc) is added
        to the query's candidates, deduplicated, with provenance (run -> rank); candidates are
        shown in reciprocal-rank-fused order so no system is favoured. Pooling a new run later
        adds only docs not yet in the pool; judgements are keyed by (query, doc) and reused,
        and queries the new run reopens go back to the queue. The whole corpus is stored (for
        full-text search); queries of the file not answered by any run get no candidates.
        Without ``corpus`` or ``queries``, the documents and queries already in the project
        are used: ``pool(None, None, [new_run], 10)`` adds a new system's unjudged top 10 as
        work. All-or-nothing, like imports. Returns counts and the run names.
        """
        corpus_docs = {doc.doc_id: doc for doc in read_corpus(corpus)} if corpus else {}
        pool_queries = read_queries(queries) if queries else []
        pooled = [read_pooled_run(path, depth) for path in runs]
        names = [run.name for run in pooled]
        if len(set(names)) != len(names) or IMPORT_RUN in names:
            raise ValueError(f"run names must be distinct and not {IMPORT_RUN!r}: {names}")
        documents = {
            doc.doc_id: (
                doc.line,
                "",
                {"title": doc.title, "text": doc.text, "metadata": doc.metadata},
            )
            for doc in corpus_docs.values()
        }
        # The corpus, the bulk of the work, is staged in short transactions like an import's
        # documents; the pool itself (ranks, candidates of existing queries) in one.
        with self._import_lock(), self._batch(str(corpus or runs[0])) as batch:
            new_documents, fill_ins = self._new_documents(documents, str(corpus))
            self._stage_documents(new_documents, batch)
            with self._writing():
                self._register_runs(pooled)
                for doc_id, (title, text) in fill_ins.items():
                    self._rewrite_document(doc_id, title, text)
                queries_added = self._add_pool_queries(pool_queries, str(queries))
                corpus_name = f"the corpus {corpus}" if corpus else "the project"
                known_queries = {q.query_id for q in pool_queries} | set(
                    self._content_hashes([q for run in pooled for q in run.rankings])
                )
                self._check_pooled_docs(pooled, known_queries, corpus_name)
                added, touched = self._add_pool_ranks(pooled, known_queries)
                for query_id in touched:
                    self._reorder_candidates(query_id)
                    self._refresh(query_id)
                self._publish(batch)
        documents_added = len(new_documents)
        answered = {q for run in pooled for q in run.rankings}
        return {
            "runs": names,
            "queries_added": queries_added,
            "documents_added": documents_added,
            "candidates_added": added,
            "queries_touched": len(touched),
            "run_queries_ignored": len(answered - known_queries),
        }

    def _register_runs(self, pooled: Sequence[PooledRun]) -> None:
        for run in pooled:
            row = self.conn.execute(
                "SELECT sha256 FROM runs WHERE name = ?", (run.name,)
            ).fetchone()
            if row and row[0] != run.sha256:
                problem = f"a different run named {run.name!r} is already pooled: rename the file"
                raise InputError(run.path, None, None, problem)
            self.conn.execute(
                "INSERT INTO runs (name, path, sha256, depth, pooled_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET depth = max(depth, excluded.depth)",
                (run.name, run.path, run.sha256, run.depth, golden.now()),
            )

    def _add_pool_queries(self, pool_queries: Sequence, source: str) -> int:
        tasks = [Task(q.query_id, q.query, q.slice, q.metadata, (), q.line) for q in pool_queries]
        known = self._content_hashes([task.query_id for task in tasks])
        for task in tasks:
            if task.query_id in known and known[task.query_id] != task.content_hash:
                problem = (
                    f"query {task.query_id!r} is already in the database with different content"
                )
                raise InputError(source, task.line, "_id", problem)
        new = [t for t in tasks if t.query_id not in known]
        self._add_queries(
            [(t.query_id, t.query, t.slice, t.metadata, t.content_hash) for t in new], source
        )
        return len(new)

    def _check_pooled_docs(
        self, pooled: Sequence[PooledRun], known_queries: set[str], corpus: str
    ) -> None:
        for run in pooled:
            doc_ids = {
                d for q, ranking in run.rankings.items() if q in known_queries for d, _ in ranking
            }
            stored = set()
            for chunk in _chunks(list(doc_ids)):
                stored.update(
                    row[0]
                    for row in self.conn.execute(
                        f"SELECT doc_id FROM documents WHERE doc_id IN ({_marks(chunk)})", chunk
                    )
                )
            missing = doc_ids - stored
            if missing:
                doc_id = min(missing)
                query_id = next(q for q, r in run.rankings.items() if doc_id in dict(r))
                line = line_of_doc(run.path, query_id, doc_id)
                problem = f"doc {doc_id!r} (query {query_id!r}) is not in {corpus}"
                raise InputError(run.path, line, "docno", problem)

    def _add_pool_ranks(
        self, pooled: Sequence[PooledRun], known_queries: set[str]
    ) -> tuple[int, list[str]]:
        """Store provenance, add new (query, doc) candidates; return (added, queries touched)."""
        touched: dict[str, None] = {}
        added = 0
        for run in pooled:
            for query_id, ranking in run.rankings.items():
                if query_id not in known_queries:
                    continue
                rows = [
                    (query_id, run.name, rank, doc_id, score)
                    for rank, (doc_id, score) in enumerate(ranking, start=1)
                ]
                cursor = self.conn.executemany(
                    "INSERT OR IGNORE INTO pool_ranks (query_id, run, rank, doc_id, score) "
                    "VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
                if cursor.rowcount:
                    touched[query_id] = None
                cursor = self.conn.executemany(
                    "INSERT OR IGNORE INTO candidates (query_id, doc_id, position) "
                    "VALUES (?, ?, 0)",
                    [(query_id, doc_id) for doc_id, _ in ranking],
                )
                added += cursor.rowcount
        return added, list(touched)

    def _reorder_candidates(self, query_id: str) -> None:
        """Display positions and scores of a pooled query: reciprocal-rank fusion of its runs."""
        rankings = self._context(query_id).rankings
        scores = fusion_scores(rankings)
        self.conn.executemany(
            "UPDATE candidates SET position = ?, score = ? WHERE query_id = ? AND doc_id = ?",
            [
                (position, scores[doc_id], query_id, doc_id)
                for position, doc_id in enumerate(fuse(rankings), start=1)
            ],
        )

    # --- reading queries and candidates -----------------------------------------------------------

    def has_queries(self) -> bool:
        """True when at least one query has been imported or pooled."""
        return bool(self._value("SELECT EXISTS (SELECT 1 FROM queries)"))

    def query(self, query_id: str) -> dict:
        """A query: query_id, query, slice, metadata (dict), position, status, answerable and
        the number of candidates. Raises ValueError for an unknown id."""
        rows = self._rows(
            "SELECT query_id, query, slice, metadata, position, status, answerable, "
            "(SELECT count(*) FROM candidates c WHERE c.query_id = q.query_id) AS candidates "
            "FROM queries q WHERE query_id = ?",
            (query_id,),
        )
        if not rows:
            raise ValueError(f"unknown query {query_id!r}")
        row = rows[0]
        return {
            **row,
            "metadata": json.loads(row["metadata"]),
            "answerable": bool(row["answerable"]),
        }

    def candidates(self, query_id: str, annotator: str | None = None) -> list[dict]:
        """The query's candidates in display order, each a dict: doc_id, title, text, position,
        score, provenance ({run: rank}; an imported list is the run ``"import"``) and grade
        (the annotator's current grade, None when unjudged; with no annotator, the golden
        grade: the latest given by anyone)."""
        with self._reading():
            rows = self._rows(
                "SELECT c.doc_id, d.title, d.text, c.position, c.score, c.imported_rank "
                "FROM candidates c JOIN documents d ON d.doc_id = c.doc_id "
                "WHERE c.query_id = ? ORDER BY c.position",
                (query_id,),
            )
            provenance: dict[str, dict[str, int]] = {}
            for doc_id, run, rank in self.conn.execute(
                "SELECT doc_id, run, rank FROM pool_ranks WHERE query_id = ?", (query_id,)
            ):
                provenance.setdefault(doc_id, {})[run] = rank
            grades = self._grades(query_id, annotator)
        for row in rows:
            imported_rank = row.pop("imported_rank")
            runs = provenance.get(row["doc_id"], {})
            row["provenance"] = {IMPORT_RUN: imported_rank, **runs} if imported_rank else runs
            row["grade"] = grades.get(row["doc_id"])
        return rows

    def _grades(self, query_id: str, annotator: str | None) -> dict[str, int]:
        if annotator is not None:
            return dict(
                self.conn.execute(
                    "SELECT doc_id, grade FROM labels WHERE query_id = ? AND annotator = ?",
                    (query_id, annotator),
                ).fetchall()
            )
        decision = self._decisions([query_id]).get(query_id)
        if decision is not None:  # a reviewer's decision is the golden label
            return dict(decision.judgments)
        # Rows in event order: a later label overwrites an earlier one.
        return dict(
            self.conn.execute(
                "SELECT doc_id, grade FROM labels WHERE query_id = ? ORDER BY event_id", (query_id,)
            ).fetchall()
        )

    def labels(self, query_id: str, annotator: str | None = None) -> dict[str, int]:
        """Current grades of the query's judged docs (candidates and attached ones) by the
        annotator, or the golden grades when ``annotator`` is None."""
        with self._reading():
            return self._grades(query_id, annotator)

    def next_candidate(self, query_id: str, annotator: str, mode: str | None = None) -> dict | None:
        """The candidate the annotator should judge next, or None when there is none left.

        First-hit mode: over a pool of several runs, the unjudged doc at the smallest rank
        among the runs whose first relevant doc is not yet known (see
        :func:`labeler.pooling.next_to_judge`); for one list, the first unjudged doc from the
        top, and None once a relevant one is found. Full mode: the first unjudged candidate.
        None with no relevant judgement means the annotator must choose unanswerable or miss
        (see :meth:`query_state`, ``needs_verdict``). ``mode`` defaults to the mode the
        annotator is using on this query, else the project's.
        """
        with self._reading():
            context = self._context(query_id)
            grades = self._grades(query_id, annotator)
            mode = mode or self._mode_of(query_id, annotator)
            display = sorted(context.positions, key=context.positions.get)
            if mode == "full":
                doc_id = next((d for d in display if d not in grades), None)
            else:
                candidate_grades = {d: g for d, g in grades.items() if d in context.positions}
                doc_id = next_to_judge(
                    context.rankings, candidate_grades, context.threshold, display
                )
        if doc_id is None:
            return None
        return next(c for c in self.candidates(query_id, annotator) if c["doc_id"] == doc_id)

    def _mode_of(self, query_id: str, annotator: str) -> str:
        mode = self.conn.execute(
            "SELECT mode FROM query_state WHERE query_id = ? AND annotator = ?",
            (query_id, annotator),
        ).fetchone()
        return mode[0] if mode else self.settings()["mode"]

    def query_state(self, query_id: str, annotator: str | None = None) -> dict:
        """Where a query stands, for one annotator or (None) for the golden set.

        Keys: status (pending | in_progress | skipped | done), complete (bool), answerable,
        needs_verdict (every candidate that matters judged non-relevant: the annotator must
        choose unanswerable or miss), first_relevant_rank (display position, None if none),
        judged_depth (judged candidates), mode, note.
        """
        with self._reading():
            self.query(query_id)
            context = self._context(query_id)
            if annotator is None:
                states = self._states([query_id]).get(query_id, {})
                decision = self._decisions([query_id]).get(query_id)
                record = golden.golden_record(self.query(query_id), states, context, decision)
                status, answerable = golden.merged_status(states.values(), decision)
                state = QueryState(
                    status=status,
                    answerable=answerable,
                    needs_verdict=any(s.needs_verdict for s in states.values()),
                    mode=record["mode"],
                    first_relevant_rank=record["first_relevant_rank"],
                    judged_depth=record["judged_depth"],
                    note=record["notes"],
                )
            else:
                state = golden.derive_state(self._events(query_id, annotator), context)
        return {
            "query_id": query_id,
            "status": state.status,
            "complete": state.complete,
            "answerable": state.answerable,
            "needs_verdict": state.needs_verdict,
            "first_relevant_rank": state.first_relevant_rank,
            "judged_depth": state.judged_depth,
            "mode": state.mode,
            "note": state.note,
        }

    # --- the work queue ---------------------------------------------------------------------------

    def next_query(self, annotator: str, after: str | None = None) -> str | None:
        """The next query for the annotator to work on, or None when nothing is left.

        Open queries (not done, not skipped by this annotator) come first, in queue order,
        starting after ``after`` and wrapping around; then the annotator's skipped queries,
        oldest skip first. An annotator with assignments gets only their assigned queries
        (blind to others' work); without assignments everyone shares one queue, and a query
        someone completed is no longer offered. ``after`` itself is never returned.
        Index-backed: no table scan per call.
        """
        with self._reading():
            assigned = self.conn.execute(
                "SELECT 1 FROM assignments WHERE annotator = ? LIMIT 1", (annotator,)
            ).fetchone()
            if assigned:
                return self._next_assigned(annotator, after)
            return self._next_shared(annotator, after)

    def _next_shared(self, annotator: str, after: str | None) -> str | None:
        start = self._queue_position("SELECT position FROM queries WHERE query_id = ?", after)
        return self._next_in_queue(
            "SELECT query_id FROM queries q WHERE status != 'done' AND position > :lower "
            "AND query_id != :after AND NOT EXISTS (SELECT 1 FROM query_state s WHERE "
            "s.query_id = q.query_id AND s.annotator = :annotator AND s.status = 'skipped') "
            "ORDER BY position LIMIT 1",
            "SELECT s.query_id FROM query_state s JOIN queries q ON q.query_id = s.query_id "
            "WHERE s.annotator = :annotator AND s.status = 'skipped' AND q.status != 'done' "
            "AND s.query_id != :after ORDER BY s.last_event_id LIMIT 1",
            {"annotator": annotator, "after": after or "", "lower": start},
        )

    def _next_assigned(self, annotator: str, after: str | None) -> str | None:
        start = self._queue_position(
            "SELECT position FROM assignments WHERE query_id = ? AND annotator = ?",
            after,
            annotator,
        )
        return self._next_in_queue(
            "SELECT query_id FROM assignments WHERE annotator = :annotator AND open = 1 "
            "AND position > :lower AND query_id != :after ORDER BY position LIMIT 1",
            "SELECT s.query_id FROM query_state s JOIN assignments a ON a.query_id = s.query_id "
            "AND a.annotator = s.annotator WHERE s.annotator = :annotator "
            "AND s.status = 'skipped' AND s.query_id != :after ORDER BY s.last_event_id LIMIT 1",
            {"annotator": annotator, "after": after or "", "lower": start},
        )

    def _next_in_queue(self, open_sql: str, skipped_sql: str, params: dict) -> str | None:
        """The first open query after position ``lower`` (wrapping around to the start of the
        queue), else the annotator's oldest skipped query."""
        for lower in (params["lower"], 0):
            row = self.conn.execute(open_sql, {**params, "lower": lower}).fetchone()
            if row:
                return row[0]
        row = self.conn.execute(skipped_sql, params).fetchone()
        return row[0] if row else None

    def _queue_position(self, sql: str, query_id: str | None, *params: str) -> int:
        if query_id is None:
            return 0
        row = self.conn.execute(sql, (query_id, *params)).fetchone()
        return row[0] if row else 0

    def previous_query(self, annotator: str, before: str | None = None) -> str | None:
        """The query the annotator worked on before ``before`` (most recent first), for going
        back; None when there is none. Without ``before``, their most recent query."""
        with self._reading():
            bound = None
            if before is not None:
                bound = self._value(
                    "SELECT last_event_id FROM query_state WHERE query_id = ? AND annotator = ?",
                    (before, annotator),
                )
            row = self.conn.execute(
                "SELECT query_id FROM query_state WHERE annotator = ? AND last_event_id < ? "
                "AND query_id != ? ORDER BY last_event_id DESC LIMIT 1",
                (annotator, bound if bound is not None else 2**63 - 1, before or ""),
            ).fetchone()
        return row[0] if row else None

    def recent_queries(self, annotator: str, limit: int = 10) -> list[str]:
        """The queries the annotator acted on most recently, newest first (index-backed)."""
        return [
            row["query_id"]
            for row in self._rows(
                "SELECT query_id FROM query_state WHERE annotator = ? "
                "ORDER BY last_event_id DESC LIMIT ?",
                (annotator, limit),
            )
        ]

    def recent_states(self, annotator: str, query_ids: Sequence[str]) -> dict[str, dict]:
        """Status, answerable and first_relevant_rank of some queries for the annotator, read
        from the maintained projection (cheap: the label page's history strip)."""
        rows = self._rows(
            "SELECT query_id, status, answerable, first_relevant_rank FROM query_state "
            f"WHERE annotator = ? AND query_id IN ({_marks(query_ids)})",
            (annotator, *query_ids),
        )
        return {row.pop("query_id"): row for row in rows}

    def resume_query(self, annotator: str) -> str | None:
        """Where the annotator left off: their most recent query if it is not finished for
        them, else :meth:`next_query`. What the app opens after a reload or a new login."""
        recent = self.previous_query(annotator)
        if recent is not None:
            status = self._value(
                "SELECT status FROM query_state WHERE query_id = ? AND annotator = ?",
                (recent, annotator),
            )
            if status in ("pending", "in_progress"):
                return recent
        return self.next_query(annotator)

    # --- actions: each appends one event and returns its id ---------------------------------------

    def judge(
        self,
        query_id: str,
        doc_id: str,
        grade: int,
        annotator: str,
        seconds: float = 0.0,
        mode: str = "first_hit",
        expected_grade: int | None | object = ANY_GRADE,
    ) -> int:
        """Record a grade for one of the query's candidates; returns the event id.

        When this returns, the judgement is committed (durable, see :class:`Store`). Grades
        run 0..max_grade (see :meth:`settings`); 0 is not relevant. Judging a doc again
        replaces its grade (both events stay in the log). With ``expected_grade`` (the
        annotator's grade of the doc as a page showed it, None = unjudged) the judgement is
        written only if that is still its grade, else :class:`StaleTarget` is raised and
        nothing is written.
        """
        self._check_grade(grade)
        if mode not in golden.MODES:
            raise ValueError(f"mode must be one of {golden.MODES}, got {mode!r}")
        with self._writing():
            if not self._value(
                "SELECT 1 FROM candidates WHERE query_id = ? AND doc_id = ?", (query_id, doc_id)
            ):
                raise ValueError(
                    f"doc {doc_id!r} is not a candidate of query {query_id!r} (use attach)"
                )
            if expected_grade is not ANY_GRADE:
                # Checked inside the write transaction: another tab's judgement either
                # committed before (and is seen here) or waits until this one is done.
                now = self._value(
                    "SELECT grade FROM labels WHERE query_id = ? AND annotator = ? AND doc_id = ?",
                    (query_id, annotator, doc_id),
                )
                if now != expected_grade:
                    raise StaleTarget(
                        f"doc {doc_id!r} of {query_id!r} was judged {now} meanwhile "
                        f"(the page showed {expected_grade})"
                    )
            return self._act(
                query_id,
                annotator,
                action="judge",
                doc_id=doc_id,
                grade=grade,
                mode=mode,
                seconds=seconds,
            )

    def mark(self, query_id: str, action: str, annotator: str, seconds: float = 0.0) -> int:
        """Mark the query ``unanswerable`` (no answer exists in the corpus), a ``miss`` (an
        answer should exist but the candidates hold none) or ``skip`` it (it comes back at the
        end of the queue and is exported as skipped). Returns the event id."""
        if action not in ("unanswerable", "miss", "skip"):
            raise ValueError(f"action must be unanswerable, miss or skip, got {action!r}")
        with self._writing():
            self._require_query(query_id)
            return self._act(query_id, annotator, action=action, seconds=seconds)

    def attach(
        self, query_id: str, doc_id: str, grade: int, annotator: str, seconds: float = 0.0
    ) -> int:
        """Attach a document found by search (not a candidate) with a grade — the answer the
        system missed. A relevant attached doc completes the query as a miss. Returns the
        event id."""
        self._check_grade(grade)
        with self._writing():
            self._require_query(query_id)
            if not self._value("SELECT 1 FROM documents WHERE doc_id = ?", (doc_id,)):
                raise ValueError(f"unknown document {doc_id!r}")
            if self._value(
                "SELECT 1 FROM candidates WHERE query_id = ? AND doc_id = ?", (query_id, doc_id)
            ):
                raise ValueError(f"doc {doc_id!r} is a candidate of {query_id!r}: judge it instead")
            return self._act(
                query_id, annotator, action="attach", doc_id=doc_id, grade=grade, seconds=seconds
            )

    def set_note(self, query_id: str, annotator: str, text: str) -> int:
        """Set the annotator's note on a query (the latest note counts). Returns the event id."""
        if not isinstance(text, str):
            raise ValueError("a note must be a string")
        with self._writing():
            self._require_query(query_id)
            return self._act(query_id, annotator, action="note", note=text)

    def undo(self, annotator: str, query_id: str | None = None) -> dict | None:
        """Undo the annotator's latest action not yet undone (judge, attach, unanswerable,
        miss or skip) — on whatever query it was, or only on ``query_id``: call again to go
        further back. Appends an undo event. Returns the undone event (id, query_id, doc_id,
        action, grade) plus ``undo_event_id``, or None when there is nothing left to undo."""
        undoable = ", ".join(f"'{action}'" for action in golden.UNDOABLE_ACTIONS)
        with self._writing():
            rows = self._rows(
                "SELECT id, query_id, doc_id, action, grade FROM events e WHERE annotator = ? "
                f"AND action IN ({undoable}) AND batch IS NULL "  # not what an import replayed
                "AND (? IS NULL OR query_id = ?) "
                "AND NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id) "
                "ORDER BY id DESC LIMIT 1",
                (annotator, query_id, query_id),
            )
            if not rows:
                return None
            undone = rows[0]
            undo_id = self._act(
                undone["query_id"],
                annotator,
                action="undo",
                doc_id=undone["doc_id"],
                undoes=undone["id"],
            )
        return {**undone, "undo_event_id": undo_id}

    def _act(self, query_id: str, annotator: str, **event: object) -> int:
        """Append one event and re-derive the query's projections for the annotator (inside
        the caller's write transaction). Marks and attachments take the annotator's current
        mode on the query. Returns the event id."""
        if event["action"] in ("unanswerable", "miss", "skip", "attach"):
            event["mode"] = self._mode_of(query_id, annotator)
        event_id = self._append(query_id, annotator=annotator, **event)
        self._refresh(query_id, [annotator])
        return event_id

    def _check_grade(self, grade: int) -> None:
        max_grade = self.settings()["max_grade"]
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= max_grade:
            raise ValueError(f"grade must be an integer in 0..{max_grade}, got {grade!r}")

    def _require_query(self, query_id: str) -> None:
        if not self._value("SELECT 1 FROM queries WHERE query_id = ?", (query_id,)):
            raise ValueError(f"unknown query {query_id!r}")

    def _append(
        self,
        query_id: str,
        *,
        annotator: str,
        action: str,
        doc_id: str | None = None,
        grade: int | None = None,
        mode: str | None = None,
        seconds: float = 0.0,
        note: str | None = None,
        undoes: int | None = None,
        created_at: str | None = None,
        batch: int | None = None,
    ) -> int:
        """Append one event (inside the caller's write transaction); returns its id. ``batch``:
        the import that replayed it (such events are on nobody's undo stack)."""
        if not isinstance(annotator, str) or not annotator:
            raise ValueError("annotator must be a non-empty string")
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not 0 <= seconds < math.inf
        ):
            raise ValueError(f"seconds must be a number >= 0, got {seconds!r}")
        cursor = self.conn.execute(
            "INSERT INTO events (query_id, doc_id, annotator, action, grade, mode, seconds, note, "
            "undoes, created_at, batch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                query_id,
                doc_id,
                annotator,
                action,
                grade,
                mode,
                float(seconds),
                note,
                undoes,
                created_at or golden.now(),
                batch,
            ),
        )
        return cursor.lastrowid

    # --- projections of the log -------------------------------------------------------------------

    def _context(self, query_id: str) -> QueryContext:
        """The query's candidates within the protocol's depth, and each run's ranking of them."""
        settings = self.settings()
        positions: dict[str, int] = {}
        imported: list[tuple[int, str]] = []
        for doc_id, position, imported_rank in self.conn.execute(
            "SELECT doc_id, position, imported_rank FROM candidates WHERE query_id = :query_id "
            "AND (:depth = 0 OR position <= :depth) ORDER BY position",
            {"query_id": query_id, "depth": settings["depth"]},
        ):
            positions[doc_id] = position
            if imported_rank is not None:
                imported.append((imported_rank, doc_id))
        rankings: dict[str, list[str]] = {}
        if imported:
            rankings[IMPORT_RUN] = [doc_id for _, doc_id in sorted(imported)]
        for run, doc_id in self.conn.execute(
            "SELECT run, doc_id FROM pool_ranks WHERE query_id = ? ORDER BY run, rank", (query_id,)
        ):
            if doc_id in positions:
                rankings.setdefault(run, []).append(doc_id)
        return QueryContext(rankings, positions, settings["rel_threshold"], settings["mode"])

    def _events(self, query_id: str, annotator: str) -> list[Event]:
        return [
            Event(**row)
            for row in self._rows(
                "SELECT id, query_id, annotator, action, doc_id, grade, mode, seconds, note, "
                "undoes, created_at FROM events WHERE query_id = ? AND annotator = ? ORDER BY id",
                (query_id, annotator),
            )
        ]

    def _refresh(self, query_id: str, annotators: Sequence[str] | None = None) -> None:
        """Re-derive the projections of ``query_id`` for these annotators (default: everyone
        who acted on it) from the log, then its golden status. Inside a write transaction."""
        if annotators is None:
            annotators = [
                row[0]
                for row in self.conn.execute(
                    "SELECT DISTINCT annotator FROM events WHERE query_id = ?", (query_id,)
                )
            ]
        context = self._context(query_id)
        slice_name = self._value("SELECT slice FROM queries WHERE query_id = ?", (query_id,))
        for annotator in annotators:
            state = golden.derive_state(self._events(query_id, annotator), context)
            self._store_state(query_id, annotator, slice_name, state)
        states = [
            QueryState(status=status, answerable=bool(answerable), last_event_id=last_event_id)
            for status, answerable, last_event_id in self.conn.execute(
                "SELECT status, answerable, last_event_id FROM query_state WHERE query_id = ?",
                (query_id,),
            )
        ]
        decision = self._decisions([query_id]).get(query_id)
        status, answerable = golden.merged_status(states, decision)
        old_status, old_answerable = self.conn.execute(
            "SELECT status, answerable FROM queries WHERE query_id = ?", (query_id,)
        ).fetchone()
        if (old_status, bool(old_answerable)) != (status, answerable):
            self._count("", slice_name, _progress_key(old_status, bool(old_answerable)), -1)
            self._count("", slice_name, _progress_key(status, answerable), 1)
            self.conn.execute(
                "UPDATE queries SET status = ?, answerable = ? WHERE query_id = ?",
                (status, int(answerable), query_id),
            )

    def _store_state(
        self, query_id: str, annotator: str, slice_name: str, state: QueryState
    ) -> None:
        old = self.conn.execute(
            "SELECT status, answerable FROM query_state WHERE query_id = ? AND annotator = ?",
            (query_id, annotator),
        ).fetchone()
        if old:
            self._count(annotator, slice_name, _progress_key(old[0], bool(old[1])), -1)
        self._count(annotator, slice_name, _progress_key(state.status, state.answerable), 1)
        self.conn.execute(
            "DELETE FROM labels WHERE query_id = ? AND annotator = ?", (query_id, annotator)
        )
        self.conn.executemany(
            "INSERT INTO labels (query_id, annotator, doc_id, grade, event_id) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (query_id, annotator, doc_id, grade, state.label_events[doc_id])
                for doc_id, grade in state.grades.items()
            ],
        )
        self.conn.execute(
            "INSERT OR REPLACE INTO query_state (query_id, annotator, slice, status, answerable, "
            "needs_verdict, mode, first_relevant_rank, judged_depth, seconds, last_event_id, "
            "updated_at, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                query_id,
                annotator,
                slice_name,
                state.status,
                int(state.answerable),
                int(state.needs_verdict),
                state.mode,
                state.first_relevant_rank,
                state.judged_depth,
                state.seconds,
                state.last_event_id,
                state.updated_at,
                state.note,
            ),
        )
        self.conn.execute(
            "UPDATE assignments SET open = ? WHERE annotator = ? AND query_id = ?",
            (int(state.status not in ("done", "skipped")), annotator, query_id),
        )

    def _count(self, annotator: str, slice_name: str, state: str, delta: int) -> None:
        self.conn.execute(
            "INSERT INTO progress (annotator, slice, state, n) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (annotator, slice, state) DO UPDATE SET n = n + excluded.n",
            (annotator, slice_name, state, delta),
        )

    def _all_query_ids_with_events(self) -> list[str]:
        """Every query with events or an adjudication: those with projections to derive."""
        return [
            row[0]
            for row in self.conn.execute(
                "SELECT query_id FROM events UNION SELECT query_id FROM adjudications"
            )
        ]

    def rebuild_projections(self) -> None:
        """Recompute every projection (labels, query states, counts, golden status) from the
        log alone. The result must equal what the incremental updates produced."""
        with self._writing() as conn:
            for table in ("labels", "query_state", "progress"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("UPDATE queries SET status = 'pending', answerable = 1")
            conn.execute("UPDATE assignments SET open = 1")
            conn.executemany(
                "INSERT INTO progress (annotator, slice, state, n) VALUES ('', ?, 'pending', ?)",
                conn.execute("SELECT slice, count(*) FROM queries GROUP BY slice").fetchall(),
            )
            conn.executemany(
                "INSERT INTO progress (annotator, slice, state, n) VALUES (?, ?, 'assigned', ?)",
                conn.execute(
                    "SELECT a.annotator, q.slice, count(*) FROM assignments a "
                    "JOIN queries q ON q.query_id = a.query_id GROUP BY a.annotator, q.slice"
                ).fetchall(),
            )
            for query_id in self._all_query_ids_with_events():
                self._refresh(query_id)

    # --- progress and status ----------------------------------------------------------------------

    def progress(self, annotator: str | None = None) -> dict[str, dict[str, int]]:
        """Counts per slice ("" = no slice): total, done (unanswerable included), unanswerable,
        skipped, in_progress, pending.

        With no annotator, the golden status of every query. For an annotator, their own work:
        total is their assigned queries (all queries when they have no assignments). Read from
        maintained counters: cheap at any size.
        """
        with self._reading():
            golden_counts = self._counts("")
            if annotator is None:
                return {s: _progress_summary(c, sum(c.values())) for s, c in golden_counts.items()}
            mine = self._counts(annotator)
            has_assignments = any(counts.get("assigned") for counts in mine.values())
        summary = {}
        for slice_name in sorted(set(golden_counts) | set(mine)):
            counts = mine.get(slice_name, {})
            total = (
                counts.get("assigned", 0)
                if has_assignments
                else sum(golden_counts.get(slice_name, {}).values())
            )
            summary[slice_name] = _progress_summary(counts, total)
        return summary

    def _counts(self, annotator: str) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for slice_name, state, n in self.conn.execute(
            "SELECT slice, state, n FROM progress WHERE annotator = ? AND n != 0", (annotator,)
        ):
            counts.setdefault(slice_name, {})[state] = n
        return counts

    def status(self) -> dict:
        """The project at a glance: golden progress per slice, judgements (current labels),
        events, annotators who acted, documents, pooled runs, and the settings."""
        with self._reading():
            return {
                "path": str(self.path),
                "queries": self._value("SELECT count(*) FROM queries"),
                "slices": self.progress(),
                "judgements": self._value("SELECT count(*) FROM labels"),
                "events": self._value("SELECT count(*) FROM events"),
                "annotators": [
                    row[0]
                    for row in self.conn.execute(
                        "SELECT DISTINCT annotator FROM query_state ORDER BY annotator"
                    )
                ],
                "documents": self._value("SELECT count(*) FROM documents"),
                "runs": self._rows("SELECT name, depth, sha256, pooled_at FROM runs ORDER BY name"),
                "settings": self.settings(),
            }

    # --- search -----------------------------------------------------------------------------------

    def search(self, text: str, limit: int = 20) -> list[dict]:
        """Full-text search over documents (FTS5, porter stemming), best first by bm25: doc_id,
        title, text. A document matches when it holds ANY of the words of ``text``, each as a
        prefix (``auth`` finds ``authenticate``); more and rarer words rank higher. Words are
        runs of letters and digits, each quoted for FTS5, so punctuation and FTS operators
        (``"``, ``-``, ``AND``, ``*``) in ``text`` are taken literally, never as syntax."""
        words = dict.fromkeys(re.findall(r"[^\W_]+", text.lower()))
        if not words:
            return []
        match = " OR ".join(f'"{word}"*' for word in words)
        with self._lock:
            return list(
                self.db["documents"].search(
                    match,
                    columns=["doc_id", "title", "text"],
                    limit=limit,
                    quote=False,
                    where=UNPUBLISHED_HIDDEN,
                )
            )

    def add_corpus(self, path: str | Path) -> int:
        """Add a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``) to the project's
        documents, searchable from the label page; returns how many were new. A known doc
        keeps its text (a different one is an error naming the line). All-or-nothing."""
        return self.pool(path, None, [], depth=1)["documents_added"]

    def document(self, doc_id: str) -> dict:
        """One document: doc_id, title, text, metadata. Raises ValueError when unknown."""
        rows = self._rows(
            "SELECT doc_id, title, text, metadata FROM documents WHERE doc_id = ?", (doc_id,)
        )
        if not rows:
            raise ValueError(f"unknown document {doc_id!r}")
        return {**rows[0], "metadata": json.loads(rows[0]["metadata"] or "{}")}

    # --- annotators and assignments ---------------------------------------------------------------

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

    # --- browser sessions -------------------------------------------------------------------------

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

    def assign(self, annotator: str, query_ids: Sequence[str]) -> int:
        """Give queries to an annotator (appended to their queue; already assigned ones are
        kept as they are: nobody gets the same query twice). From then on :meth:`next_query`
        offers them only their assigned queries. Returns how many were newly assigned."""
        return self.assign_plan({annotator: query_ids})[annotator]

    def assign_plan(self, plan: Mapping[str, Sequence[str]]) -> dict[str, int]:
        """Give each annotator their queries (see :meth:`assign`) in one transaction: the whole
        plan or, on any error (an unknown query), nothing. Returns newly assigned per annotator."""
        with self._writing():
            for query_ids in plan.values():
                for query_id in query_ids:
                    self._require_query(query_id)
            return {
                annotator: self._assign(annotator, query_ids)
                for annotator, query_ids in plan.items()
            }

    def _assign(self, annotator: str, query_ids: Sequence[str]) -> int:
        if not isinstance(annotator, str) or not annotator:
            raise ValueError("annotator must be a non-empty string")
        conn = self.conn
        start = conn.execute(
            "SELECT coalesce(max(position), 0) FROM assignments WHERE annotator = ?",
            (annotator,),
        ).fetchone()[0]
        added = 0
        for query_id in dict.fromkeys(query_ids):
            status = conn.execute(
                "SELECT status FROM query_state WHERE query_id = ? AND annotator = ?",
                (query_id, annotator),
            ).fetchone()
            cursor = conn.execute(
                "INSERT OR IGNORE INTO assignments (annotator, query_id, position, open, "
                "assigned_at) VALUES (?, ?, ?, ?, ?)",
                (
                    annotator,
                    query_id,
                    start + added + 1,
                    int(not status or status[0] not in ("done", "skipped")),
                    golden.now(),
                ),
            )
            if cursor.rowcount:
                added += 1
                slice_name = self._value(
                    "SELECT slice FROM queries WHERE query_id = ?", (query_id,)
                )
                self._count(annotator, slice_name, "assigned", 1)
        return added

    def assignment_counts(self) -> dict[str, dict[str, int]]:
        """Per annotator with assignments: ``assigned`` queries and how many are still ``open``
        (neither done nor skipped by them)."""
        return {
            row["annotator"]: {"assigned": row["assigned"], "open": row["open"]}
            for row in self._rows(
                "SELECT annotator, count(*) AS assigned, sum(open) AS open FROM assignments "
                "GROUP BY annotator ORDER BY annotator"
            )
        }

    def assignees(self) -> dict[str, list[str]]:
        """Who each assigned query went to: query_id -> annotators (by name), in queue order."""
        assigned: dict[str, list[str]] = {}
        for row in self._rows(
            "SELECT a.query_id, a.annotator FROM assignments a "
            "JOIN queries q ON q.query_id = a.query_id ORDER BY q.position, a.annotator"
        ):
            assigned.setdefault(row["query_id"], []).append(row["annotator"])
        return assigned

    def dealable_queries(self, slices: Sequence[str] | None = None) -> list[dict]:
        """Queries that can still be dealt out, in queue order: not done and assigned to nobody
        (of these ``slices`` when given). Each is a dict: query_id, slice, and ``labelled_by``,
        the annotators who already worked on it (it must not go to them again)."""
        where, params = "", []
        if slices is not None:
            where, params = f"AND q.slice IN ({_marks(slices)})", list(slices)
        with self._reading():
            rows = self._rows(
                "SELECT q.query_id, q.slice FROM queries q WHERE q.status != 'done' AND NOT "
                "EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = q.query_id) "
                f"{where} ORDER BY q.position",
                params,
            )
            labelled_by: dict[str, list[str]] = {}
            for query_id, annotator in self.conn.execute(
                "SELECT s.query_id, s.annotator FROM query_state s JOIN queries q "
                "ON q.query_id = s.query_id WHERE q.status != 'done' ORDER BY s.annotator"
            ):
                labelled_by.setdefault(query_id, []).append(annotator)
        return [{**row, "labelled_by": labelled_by.get(row["query_id"], [])} for row in rows]

    def assignments(self, annotator: str) -> list[str]:
        """The annotator's assigned query ids, in queue order."""
        return [
            row["query_id"]
            for row in self._rows(
                "SELECT query_id FROM assignments WHERE annotator = ? ORDER BY position",
                (annotator,),
            )
        ]

    # --- adjudication -----------------------------------------------------------------------------

    def adjudicate(
        self,
        query_id: str,
        reviewer: str,
        judgments: Mapping[str, int],
        answerable: bool,
        *,
        adopted: str | None = None,
        note: str = "",
    ) -> int:
        """Record a reviewer's decision on a query; returns the decision id.

        From then on the query's golden label is the decision — these grades, this
        answerability, status done — whatever its annotators' labels say; their labels stay in
        the log and in the export beside it. Decisions are an append-only log: deciding again
        appends a new decision, which counts from then on. ``reviewer`` must be a registered
        reviewer or admin; grades run 0..max_grade; each doc must be a candidate of the query
        or a known document (one found by search); ``adopted`` names the annotator whose
        labels the decision accepts as they were, if any.
        """
        if not isinstance(answerable, bool):
            raise ValueError(f"answerable must be true or false, got {answerable!r}")
        if not isinstance(note, str):
            raise ValueError("a note must be a string")
        for grade in judgments.values():
            self._check_grade(grade)
        with self._writing() as conn:
            self._require_query(query_id)
            role = self._value("SELECT role FROM annotators WHERE name = ?", (reviewer,))
            if role not in ("reviewer", "admin"):
                raise ValueError(f"{reviewer!r} is not a reviewer or admin: only they adjudicate")
            for doc_id in judgments:
                if not self._value("SELECT 1 FROM documents WHERE doc_id = ?", (doc_id,)):
                    raise ValueError(f"unknown document {doc_id!r}")
            cursor = conn.execute(
                "INSERT INTO adjudications (query_id, reviewer, judgments, answerable, adopted, "
                "note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    query_id,
                    reviewer,
                    json.dumps(dict(judgments), ensure_ascii=False),
                    int(answerable),
                    adopted,
                    note,
                    golden.now(),
                ),
            )
            self._refresh(query_id)
        return int(cursor.lastrowid)

    def decision(self, query_id: str) -> Decision | None:
        """The decision that counts on a query (the latest), or None when none was made."""
        with self._reading():
            return self._decisions([query_id]).get(query_id)

    def decisions(self) -> dict[str, Decision]:
        """The decision that counts on every adjudicated query: query_id -> Decision."""
        with self._reading():
            ids = [
                row[0] for row in self.conn.execute("SELECT DISTINCT query_id FROM adjudications")
            ]
            found: dict[str, Decision] = {}
            for chunk in _chunks(ids):
                found.update(self._decisions(chunk))
        return found

    def _decisions(self, query_ids: Sequence[str]) -> dict[str, Decision]:
        rows = self._rows(
            "SELECT id, query_id, reviewer, judgments, answerable, adopted, note, created_at "
            f"FROM adjudications a WHERE query_id IN ({_marks(query_ids)}) AND id = "
            "(SELECT max(id) FROM adjudications b WHERE b.query_id = a.query_id)",
            query_ids,
        )
        return {
            row["query_id"]: Decision(
                **{
                    **row,
                    "judgments": json.loads(row["judgments"]),
                    "answerable": bool(row["answerable"]),
                }
            )
            for row in rows
        }

    def overlap_states(self) -> list[dict]:
        """The doubly judged queries — done by two or more annotators — in queue order, for
        agreement and adjudication. Each is a dict: query_id, query, slice, position,
        ``positions`` (doc_id -> display position of each candidate) and ``states``
        (annotator -> :class:`labeler.golden.QueryState`, only those who completed it)."""
        with self._reading():
            ids = [
                row[0]
                for row in self.conn.execute(
                    "SELECT query_id FROM query_state WHERE status = 'done' "
                    "GROUP BY query_id HAVING count(*) >= 2"
                )
            ]
            overlap = []
            for chunk in _chunks(ids):
                states, positions = self._states(chunk), self._positions(chunk)
                for query in self._rows(
                    "SELECT query_id, query, slice, position FROM queries "
                    f"WHERE query_id IN ({_marks(chunk)})",
                    chunk,
                ):
                    done = {
                        name: state
                        for name, state in states[query["query_id"]].items()
                        if state.status == "done"
                    }
                    overlap.append(
                        {
                            **query,
                            "positions": positions.get(query["query_id"], {}),
                            "states": done,
                        }
                    )
        return sorted(overlap, key=lambda query: query["position"])

    # --- the log, for dashboards and audits -------------------------------------------------------

    def events_frame(self, query_id: str | None = None) -> pd.DataFrame:
        """The judgement log as a DataFrame (id, query_id, doc_id, annotator, action, grade,
        mode, seconds, note, undoes, created_at, undone), oldest first."""
        where, params = ("WHERE query_id = ?", (query_id,)) if query_id is not None else ("", ())
        with self._reading():
            frame = pd.read_sql_query(
                "SELECT id, query_id, doc_id, annotator, action, grade, mode, seconds, note, "
                f"undoes, created_at, EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id) "
                f"AS undone FROM events e {where} ORDER BY id",
                self.conn,
                params=params,
            )
        return frame.astype({"undone": bool})

    # --- dashboard aggregates ---------------------------------------------------------------------
    # Read-only bulk reads for the live dashboard (labeler.live): each is one SQL statement over
    # the projections, with no Python per query, so they stay fast at 100,000 labelled queries.

    def dashboard_marks(self) -> dict[str, object]:
        """Cheap marks that change whenever a dashboard figure can change: the last
        ``events``, ``adjudications``, ``queries`` and ``records`` (run history), the pooled
        ``runs`` and the ``settings``. Caches key on them."""
        names = ("events", "adjudications", "queries", "records", "runs")
        with self._reading():
            marks = self.conn.execute(
                "SELECT (SELECT max(id) FROM events), (SELECT max(id) FROM adjudications), "
                "(SELECT max(position) FROM queries), (SELECT max(id) FROM eval_records), "
                "(SELECT count(*) || ':' || total(depth) FROM runs)"
            ).fetchone()
            settings = tuple(sorted(self.settings().items()))
        return {**dict(zip(names, marks, strict=True)), "settings": settings}

    def pooled_run_names(self) -> list[str]:
        """The names of the pooled runs, sorted (a cheap read, unlike :meth:`status`)."""
        return [row["name"] for row in self._rows("SELECT name FROM runs ORDER BY name")]

    def golden_frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The golden set as the two frames of :class:`eval.readers.Golden`, read in bulk.

        ``queries``: query_id, query, slice, status (done, skipped or pending), answerable and
        mode, in queue order. ``judgments`` (in no particular order): query_id, doc_id, grade,
        a doc's latest label by any annotator or, on an adjudicated query, the decision's.
        The same labels as :meth:`golden_records` (the tests hold them equal), without
        building a record per query. An annotator left with nothing (every action undone)
        has status pending and no note: their mode does not count, as in the records.
        """
        with self._reading():
            queries = pd.read_sql_query(
                "SELECT q.query_id, q.query, q.slice, q.status, q.answerable, "
                "coalesce(newest.mode, :mode) AS mode FROM queries q LEFT JOIN ("
                "  SELECT query_id, mode, max(last_event_id) FROM query_state"
                "  WHERE status != 'pending' OR note != '' GROUP BY query_id"
                ") newest ON newest.query_id = q.query_id ORDER BY q.position",
                self.conn,
                params={"mode": self.settings()["mode"]},
            )
            judgments = pd.read_sql_query(
                "SELECT query_id, doc_id, grade FROM labels l "
                "WHERE event_id = (SELECT max(event_id) FROM labels m "
                "WHERE m.query_id = l.query_id AND m.doc_id = l.doc_id) "
                "AND query_id NOT IN (SELECT query_id FROM adjudications) "
                "UNION ALL SELECT a.query_id, decided.key, decided.value "
                "FROM adjudications a, json_each(a.judgments) decided "
                "WHERE a.id = (SELECT max(id) FROM adjudications b WHERE b.query_id = a.query_id)",
                self.conn,
            )
        queries["status"] = queries["status"].map(golden.EXPORTED_STATUS)
        return (
            queries.astype({"answerable": bool}),
            judgments.astype({"query_id": str, "doc_id": str, "grade": "int64"}),
        )

    def top_ranked_frame(self, run: str | None, depth: int) -> pd.DataFrame:
        """:meth:`candidate_run_frame` cut to each query's top ``depth``, read in bulk: all
        that metrics with cutoffs below ``depth`` look at. DataFrame(query_id, doc_id, score)."""
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, got {depth!r}")
        with self._reading():
            if run is None:
                frame = pd.read_sql_query(
                    "SELECT query_id, doc_id, imported_rank AS rank FROM candidates "
                    "WHERE imported_rank <= :depth UNION ALL "
                    "SELECT query_id, doc_id, position FROM candidates WHERE position <= :depth "
                    "AND query_id NOT IN "
                    "(SELECT query_id FROM candidates WHERE imported_rank IS NOT NULL)",
                    self.conn,
                    params={"depth": depth},
                )
                frame["score"] = 1.0 / frame.pop("rank")  # as candidate_run_frame scores them
            else:
                if not self._value("SELECT 1 FROM runs WHERE name = ?", (run,)):
                    raise ValueError(f"no pooled run named {run!r}")
                frame = pd.read_sql_query(
                    "SELECT query_id, doc_id, score FROM pool_ranks WHERE run = ? AND rank <= ?",
                    self.conn,
                    params=(run, depth),
                )
        return frame.astype({"query_id": str, "doc_id": str, "score": "float64"})

    def judgement_seconds(self) -> pd.DataFrame:
        """Active seconds of every judgement in the log (judge and attach events, undone ones
        too: the time was spent): DataFrame(annotator, seconds)."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT annotator, seconds FROM events WHERE action IN ('judge', 'attach')",
                self.conn,
            )

    def completed_depths(self) -> pd.DataFrame:
        """Judged depth of every completed pass, one per (query, annotator) done:
        DataFrame(annotator, judged_depth)."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT annotator, judged_depth FROM query_state WHERE status = 'done'", self.conn
            )

    def judgements_per_hour(self, since: str = "") -> pd.DataFrame:
        """Judgements (judge and attach events) per UTC hour and annotator, from the log time
        ``since`` on: DataFrame(hour ``YYYY-MM-DDTHH``, annotator, judgements), oldest first."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT substr(created_at, 1, 13) AS hour, annotator, count(*) AS judgements "
                "FROM events WHERE action IN ('judge', 'attach') AND created_at >= ? "
                "GROUP BY hour, annotator ORDER BY hour, annotator",
                self.conn,
                params=(since,),
            )

    # --- run history ------------------------------------------------------------------------------

    def record_eval(self, report: Mapping, run_sha256: str, tags: Mapping[str, str]) -> int:
        """Keep an evaluation report's figures (means overall and per slice) with its tags.

        ``report`` is what :func:`eval.report.build_report` returns. Returns the record id.
        """
        means = {spec: entry["mean"] for spec, entry in report["metrics"].items()}
        slices = {
            name: {spec: entry["mean"] for spec, entry in data["metrics"].items()}
            for name, data in report["slices"].items()
        }
        record = {
            "recorded_at": golden.now(),
            "run": report["run"],
            "run_sha256": run_sha256,
            "golden_version": report["golden_version"],
            "tags": json.dumps(dict(tags), sort_keys=True),
            "queries": json.dumps(report["queries"]),
            "metrics": json.dumps(means),
            "slices": json.dumps(slices),
        }
        with self._writing():
            cursor = self.conn.execute(
                f"INSERT INTO eval_records ({', '.join(record)}) "
                f"VALUES ({', '.join('?' * len(record))})",
                list(record.values()),
            )
        return int(cursor.lastrowid)

    def eval_history(self) -> list[dict]:
        """Every recorded evaluation, oldest first, with its JSON fields decoded."""
        rows = self._rows("SELECT * FROM eval_records ORDER BY id")
        for row in rows:
            for field in ("tags", "queries", "metrics", "slices"):
                row[field] = json.loads(row[field])
        return rows

    # --- export -----------------------------------------------------------------------------------

    def golden_records(self) -> list[dict]:
        """The golden set: one dict per query, in queue order, as DESIGN.md's golden-set JSONL.

        Every query is there: done, skipped and unanswerable ones, and pending ones (status
        ``pending``, with whatever was judged so far). Unjudged docs are absent, never 0.
        """
        return list(self.iter_golden_records())

    def iter_golden_records(self) -> Iterator[dict]:
        """:meth:`golden_records` as a generator, reading the database in chunks of queries."""
        with self._reading():
            settings = self.settings()
            last_position = 0
            while True:
                queries = self._rows(
                    "SELECT query_id, query, slice, metadata, position FROM queries "
                    "WHERE position > ? ORDER BY position LIMIT ?",
                    (last_position, CHUNK),
                )
                if not queries:
                    return
                ids = [query["query_id"] for query in queries]
                positions = self._positions(ids)
                rankings = self._rankings(ids)
                states = self._states(ids)
                decisions = self._decisions(ids)
                for query in queries:
                    query["metadata"] = json.loads(query["metadata"])
                    context = QueryContext(
                        rankings.get(query["query_id"], {}),
                        positions.get(query["query_id"], {}),
                        settings["rel_threshold"],
                        settings["mode"],
                    )
                    yield golden.golden_record(
                        query,
                        states.get(query["query_id"], {}),
                        context,
                        decisions.get(query["query_id"]),
                    )
                last_position = queries[-1]["position"]

    def _positions(self, query_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        positions: dict[str, dict[str, int]] = {}
        for query_id, doc_id, position in self.conn.execute(
            "SELECT query_id, doc_id, position FROM candidates "
            f"WHERE query_id IN ({_marks(query_ids)})",
            query_ids,
        ):
            positions.setdefault(query_id, {})[doc_id] = position
        return positions

    def _rankings(self, query_ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        """Each query's rankings as :meth:`_context` gives them: the imported list, then
        each pooled run (by name), docs in rank order."""
        marks = _marks(query_ids)
        rows = self.conn.execute(
            "SELECT query_id, ?, imported_rank, doc_id FROM candidates "
            f"WHERE query_id IN ({marks}) AND imported_rank IS NOT NULL "
            "UNION ALL SELECT query_id, run, rank, doc_id FROM pool_ranks "
            f"WHERE query_id IN ({marks})",
            [IMPORT_RUN, *query_ids, *query_ids],
        ).fetchall()
        rows.sort(key=lambda row: (row[0], row[1] != IMPORT_RUN, row[1], row[2]))
        rankings: dict[str, dict[str, list[str]]] = {}
        for query_id, run, _, doc_id in rows:
            rankings.setdefault(query_id, {}).setdefault(run, []).append(doc_id)
        return rankings

    def _states(self, query_ids: Sequence[str]) -> dict[str, dict[str, QueryState]]:
        """Stored per-annotator states (with their labels) of these queries."""
        marks = _marks(query_ids)
        labels: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
        for query_id, annotator, doc_id, grade, event_id in self.conn.execute(
            "SELECT query_id, annotator, doc_id, grade, event_id FROM labels "
            f"WHERE query_id IN ({marks}) ORDER BY event_id",
            query_ids,
        ):
            labels.setdefault((query_id, annotator), []).append((doc_id, grade, event_id))
        states: dict[str, dict[str, QueryState]] = {}
        for row in self._rows(
            "SELECT query_id, annotator, status, answerable, needs_verdict, mode, "
            "first_relevant_rank, judged_depth, seconds, last_event_id, updated_at, note "
            f"FROM query_state WHERE query_id IN ({marks})",
            query_ids,
        ):
            query_id, annotator = row.pop("query_id"), row.pop("annotator")
            mine = labels.get((query_id, annotator), [])
            states.setdefault(query_id, {})[annotator] = QueryState(
                **{
                    **row,
                    "answerable": bool(row["answerable"]),
                    "needs_verdict": bool(row["needs_verdict"]),
                },
                grades={doc_id: grade for doc_id, grade, _ in mine},
                label_events={doc_id: event_id for doc_id, _, event_id in mine},
            )
        return states

    def write_jsonl(self, path: str | Path) -> int:
        """Export the golden set as JSONL (see :meth:`golden_records`); returns the query count."""
        return golden.write_jsonl(self.iter_golden_records(), path)

    def write_qrels(self, path: str | Path) -> int:
        """Export TREC qrels of the scored queries (see :func:`labeler.golden.write_qrels`);
        returns the line count."""
        return golden.write_qrels(self.iter_golden_records(), path)

    def candidate_run_frame(self, run: str | None = None) -> pd.DataFrame:
        """A run to evaluate straight from the database: DataFrame(query_id, doc_id, score).

        With no ``run``: the imported candidate lists (the system that produced them) — for a
        pooled query without an imported list, its fused display order. Scores are derived
        from the rank (1 / rank), so trec_eval's ordering reproduces the list order exactly.
        With a pooled run's name: that run's top-k as pooled, with its own scores.
        """
        with self._reading():
            if run is None:
                rows = self.conn.execute(
                    "SELECT query_id, doc_id, coalesce(imported_rank, position) FROM candidates c "
                    "WHERE imported_rank IS NOT NULL OR NOT EXISTS (SELECT 1 FROM candidates i "
                    "WHERE i.query_id = c.query_id AND i.imported_rank IS NOT NULL) "
                    "ORDER BY query_id, 3"
                ).fetchall()
                rows = [(query_id, doc_id, 1.0 / rank) for query_id, doc_id, rank in rows]
            else:
                if not self._value("SELECT 1 FROM runs WHERE name = ?", (run,)):
                    raise ValueError(f"no pooled run named {run!r}")
                rows = self.conn.execute(
                    "SELECT query_id, doc_id, score FROM pool_ranks WHERE run = ? "
                    "ORDER BY query_id, rank",
                    (run,),
                ).fetchall()
        frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
        return frame.astype({"query_id": str, "doc_id": str, "score": "float64"})


# --- helpers --------------------------------------------------------------------------------------


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a bulk import.

    An import allocates millions of small containers, none in reference cycles; the
    collector's repeated passes over them took a large share of the import time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True)
class GoldenPlan:
    """How an imported golden record is rebuilt (see :func:`_golden_plan`).

    ``order``: the candidates in display order; ``runs``: each ranking's doc ids (``import``:
    the imported list); ``replayed``: (created_at, record for
    :func:`labeler.golden.events_for_record`) per annotator; ``decision``: the adjudication
    row's values after query_id, or None; ``expected``: the status and answerability that
    the replay must give; ``doc_ids``: every document the record names.
    """

    order: list[str]
    runs: dict[str, list[str]]
    replayed: list[tuple[str, dict]]
    decision: tuple | None
    expected: dict[str, object]
    doc_ids: list[str]

    def candidate_rows(self, query_id: str) -> list[tuple]:
        """Rows of ``candidates`` (query_id, doc_id, position, score, imported_rank)."""
        imported = {doc_id: rank for rank, doc_id in enumerate(self.runs.get(IMPORT_RUN, []), 1)}
        return [
            (query_id, doc_id, position, None, imported.get(doc_id))
            for position, doc_id in enumerate(self.order, start=1)
        ]


@dataclass
class Replay:
    """The rows that reproduce imported golden records (see :func:`_replayed`); event ids
    (in ``events``, ``labels`` and ``states``) count from 1, shifted when written."""

    source: str
    events: list[tuple] = default_field(default_factory=list)
    labels: list[tuple] = default_field(default_factory=list)
    states: list[tuple] = default_field(default_factory=list)
    statuses: list[tuple] = default_field(default_factory=list)
    counts: dict[tuple[str, str, str], int] = default_field(default_factory=dict)
    decisions: list[tuple] = default_field(default_factory=list)
    runs: dict[str, int] = default_field(default_factory=dict)
    pool_ranks: list[tuple] = default_field(default_factory=list)

    def count(self, annotator: str, slice_name: str, state: str, delta: int) -> None:
        key = (annotator, slice_name, state)
        self.counts[key] = self.counts.get(key, 0) + delta


def _replayed(
    tasks: Sequence[Task], plans: Mapping[str, GoldenPlan], settings: Mapping, source: str
) -> Replay:
    """Derive, without the database, what importing these golden records writes: each
    annotator's events (as :func:`labeler.golden.events_for_record` gives them) and the
    projections :func:`labeler.golden.derive_state` makes of them — the same functions as
    every key press, so :meth:`Store.rebuild_projections` finds the same. A record whose
    labels cannot come out as it says (a ``pending`` query whose judged docs already hold a
    relevant one, say) is an input error, raised before anything is written."""
    replay, next_id = Replay(source), 1
    threshold = settings["rel_threshold"]
    for task in tasks:
        plan = plans.get(task.query_id)
        if plan is None:
            continue
        query_id = task.query_id
        context = QueryContext(
            plan.runs,
            {doc_id: position for position, doc_id in enumerate(plan.order, start=1)},
            threshold,
            settings["mode"],
        )
        events: dict[str, list[Event]] = {}
        for created_at, record in plan.replayed:
            for event in golden.events_for_record(record, threshold):
                events.setdefault(event["annotator"], []).append(
                    Event(id=next_id, query_id=query_id, created_at=created_at, **event)
                )
                next_id += 1
        states = {name: golden.derive_state(mine, context) for name, mine in events.items()}
        for name, mine in events.items():
            replay.events += [
                (e.id, query_id, e.doc_id, name, e.action, e.grade, e.mode, float(e.seconds))
                + (e.note, e.created_at)
                for e in mine
            ]
            state = states[name]
            replay.labels += [
                (query_id, name, doc_id, grade, state.label_events[doc_id])
                for doc_id, grade in state.grades.items()
            ]
            replay.states.append(
                (query_id, name, task.slice, state.status, int(state.answerable))
                + (int(state.needs_verdict), state.mode, state.first_relevant_rank)
                + (state.judged_depth, state.seconds, state.last_event_id, state.updated_at)
                + (state.note,)
            )
            replay.count(name, task.slice, _progress_key(state.status, state.answerable), 1)
        decision = None
        if plan.decision is not None:
            replay.decisions.append((query_id, *plan.decision))
            reviewer, judgments, decided_answerable = plan.decision[:3]
            decision = Decision(0, query_id, reviewer, json.loads(judgments), decided_answerable)
        status, answerable = golden.merged_status(states.values(), decision)
        for field_name, value in (
            ("status", golden.EXPORTED_STATUS[status]),
            ("answerable", answerable),
        ):
            if value != plan.expected[field_name]:
                problem = f"{plan.expected[field_name]!r}, but these labels give {value!r}"
                raise InputError(source, task.line, field_name, problem)
        if status != "pending":
            replay.statuses.append((status, int(answerable), query_id))
            replay.count("", task.slice, "pending", -1)
            replay.count("", task.slice, _progress_key(status, answerable), 1)
        for run, ranking in plan.runs.items():
            if run != IMPORT_RUN:
                replay.runs[run] = max(replay.runs.get(run, 0), len(ranking))
                replay.pool_ranks += [
                    (query_id, run, rank, doc_id, 1.0 / rank)
                    for rank, doc_id in enumerate(ranking, start=1)
                ]
    return replay


def _golden_plan(task: Task, source: str, max_grade: int) -> GoldenPlan:
    """Read what a golden record holds beyond DESIGN.md's keys (it arrives in the task's
    metadata): ``pool`` (its candidates), ``labels`` (each annotator's own) and
    ``adjudication`` (the decision). Raises :class:`InputError` when they are malformed."""
    where = (source, task.line)
    labels, metadata = task.golden, task.metadata
    if golden.POOL_KEY in metadata:
        order, runs = _pool_of(metadata[golden.POOL_KEY], where)
    else:
        order = [candidate.doc_id for candidate in task.candidates]
        runs = {IMPORT_RUN: order}
    own = metadata.get("labels")
    if own is None:
        people = [(labels.labelled_at, list(labels.annotators) or [IMPORT_RUN], labels)]
    else:
        if not isinstance(own, dict) or not own:
            raise InputError(*where, "labels", "must be an object of annotator: label")
        people = []
        for name, label in own.items():
            if not isinstance(label, dict):
                raise InputError(*where, f"labels.{name}", "must be an object")
            record = {**label, "query_id": task.query_id, "query": task.query}
            parsed = tasks_from_records([(task.line, record)], source, max_grade)[0].golden
            people.append((parsed.labelled_at, [name], parsed))
        people.sort(key=lambda person: (person[0] or "", person[1]))
    replayed = []
    for index, (labelled_at, names, person) in enumerate(people):
        first = index == 0
        record = {
            "status": person.status,
            "answerable": person.answerable,
            "judgments": person.judgments,
            "judged_depth": person.judged_depth,
            "mode": person.mode,
            "annotators": names,
            "seconds": labels.seconds if first else 0.0,  # the record keeps only the total
            "notes": labels.notes if first else "",
        }
        replayed.append((labelled_at or golden.now(), record))
    decision = None
    if "adjudication" in metadata:
        decision = _decision_of(metadata["adjudication"], labels, where)
    doc_ids = [*order, *labels.judgments]
    doc_ids += [doc_id for _, record in replayed for doc_id in record["judgments"]]
    if decision is not None:
        doc_ids += list(json.loads(decision[1]))
    expected = {"status": labels.status, "answerable": labels.answerable}
    return GoldenPlan(order, runs, replayed, decision, expected, list(dict.fromkeys(doc_ids)))


def _pool_of(pool: object, where: tuple[str, int]) -> tuple[list[str], dict[str, list[str]]]:
    """A record's ``pool``: ``order`` (doc ids, display order) and ``runs`` (name: doc ids)."""
    if not isinstance(pool, dict) or set(pool) - {"order", "runs"}:
        raise InputError(*where, golden.POOL_KEY, "must be an object with order and runs")
    order, runs = pool.get("order"), pool.get("runs", {})
    if not _id_list(order):
        raise InputError(*where, "pool.order", "must be a list of distinct non-empty doc ids")
    if not isinstance(runs, dict) or not all(
        isinstance(name, str) and name and _id_list(ranking) and set(ranking) <= set(order)
        for name, ranking in runs.items()
    ):
        problem = "must map run names to distinct doc ids of pool.order"
        raise InputError(*where, "pool.runs", problem)
    return order, runs


def _id_list(value: object) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(item, str) and item for item in value)
        and len(set(value)) == len(value)
    )


def _decision_of(adjudication: object, labels: GoldenLabels, where: tuple[str, int]) -> tuple:
    """An exported ``adjudication`` as the values of an adjudications row (after query_id).
    What it leaves out is taken from the record: its answerability and time; no adopted
    annotator, no note."""
    if not isinstance(adjudication, dict):
        raise InputError(*where, "adjudication", "must be an object")
    decision = {
        "answerable": labels.answerable,
        "adopted": None,
        "note": "",
        "decided_at": labels.labelled_at or golden.now(),
        **adjudication,
    }
    valid = {
        "reviewer": lambda v: isinstance(v, str) and v,
        "judgments": lambda v: (
            isinstance(v, dict) and all(type(g) is int and g >= 0 for g in v.values())
        ),
        "answerable": lambda v: isinstance(v, bool),
        "adopted": lambda v: v is None or (isinstance(v, str) and v),
        "note": lambda v: isinstance(v, str),
        "decided_at": lambda v: isinstance(v, str),
    }
    for name, check in valid.items():
        if not check(decision.get(name)):
            raise InputError(*where, f"adjudication.{name}", "missing or mistyped")
    try:
        decided_at = golden.to_log_time(decision["decided_at"])
    except (ValueError, OverflowError):
        raise InputError(*where, "adjudication.decided_at", "not an ISO-8601 time") from None
    return (
        decision["reviewer"],
        json.dumps(decision["judgments"], ensure_ascii=False),
        int(decision["answerable"]),
        decision["adopted"],
        decision["note"],
        decided_at,
    )


def _imported_rows(task: Task) -> list[tuple]:
    """Rows of ``candidates`` for a task's imported list: display order = its rank order."""
    return [
        (task.query_id, candidate.doc_id, rank, candidate.score, rank)
        for rank, candidate in enumerate(task.candidates, start=1)
    ]


def _stored_metadata(task: Task) -> dict:
    """The metadata kept with a query: a golden record's own keys beyond DESIGN.md's are
    rebuilt from the log (pool, labels, adjudication), not kept."""
    if task.golden is None:
        return task.metadata
    return {key: value for key, value in task.metadata.items() if key not in ROUND_TRIP_KEYS}


# Projects that passed quick_check in this process: it reads the whole file (2.2 s at 100,000
# queries x 20 candidates), so the app's sessions and repeated opens pay it once.
_CHECKED: set[tuple[str, int]] = set()


def _inspect_project(path: Path) -> list:
    """Check, through a read-only connection, that ``path`` is an intact goldset project;
    return its pending migrations. Raises :class:`ProjectError` otherwise."""
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
        identity = (str(path.resolve()), path.stat().st_ino)
        try:
            problems = (
                ["ok"]
                if identity in _CHECKED
                else [row[0] for row in conn.execute("PRAGMA quick_check(1)")]
            )
        except sqlite3.DatabaseError as error:
            problems = [str(error)]
        if problems == ["ok"]:
            _CHECKED.add(identity)
        else:
            problem = " ".join(problems[0].split())  # one line
            raise ProjectError(
                f"{path} is corrupt (PRAGMA quick_check: {problem}); restore it from a backup"
            )
        return migrations.pending(sqlite_utils.Database(conn))
    finally:
        conn.close()


def _writable(path: Path) -> bool:
    """True when the file may be written: its permission bits allow it (checked even for root,
    who may write anything: a file made read-only is meant to stay so) and so does the OS."""
    return bool(path.stat().st_mode & 0o222) and os.access(path, os.W_OK)


def _progress_key(status: str, answerable: bool) -> str:
    return "unanswerable" if status == "done" and not answerable else status


def _progress_summary(counts: Mapping[str, int], total: int) -> dict[str, int]:
    unanswerable = counts.get("unanswerable", 0)
    done = counts.get("done", 0) + unanswerable
    skipped, in_progress = counts.get("skipped", 0), counts.get("in_progress", 0)
    return {
        "total": total,
        "done": done,
        "unanswerable": unanswerable,
        "skipped": skipped,
        "in_progress": in_progress,
        "pending": total - done - skipped - in_progress,
    }


def _chunks(items: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), CHUNK):
        yield list(items[start : start + CHUNK])


def _marks(items: Sequence) -> str:
    return ", ".join("?" * len(items))
