"""The project database: the one module that owns the schema, the connections and every SQL
statement. The app, the CLI and the team features all go through :class:`Store`.

Design, in short:

- SQLite through sqlite-utils, on our own ``sqlite3`` connection (``check_same_thread=False``
  because Streamlit reruns a session on new threads; ``isolation_level=None`` so that we, not
  the driver, say where transactions begin). One :class:`Store` per thread or browser session.
- WAL journal, a busy timeout, and every write transaction opened with ``BEGIN IMMEDIATE``:
  a deferred ``BEGIN`` that reads before writing cannot wait for the lock and fails with
  "database is locked" under concurrent writers (measured: bench/README.md); ``IMMEDIATE`` takes
  the write lock up front, so writers queue on the busy timeout instead of failing.
- The judgement log (``events``) is append-only: triggers refuse UPDATE and DELETE. Undo is a
  new event. ``labels``, ``query_state``, ``progress`` and the golden projection
  (``golden_judgments``, ``queries.status``) are projections of the log, rewritten in the
  same transaction as each event for the (query, annotator) it touches — so every key press
  costs a handful of index lookups, never a table scan — and
  :meth:`Store.rebuild_projections` can recompute them all from the log.

The package, bottom up: each module imports only modules listed before it, and its mixin
uses through ``self`` only what it or a module listed before it defines
(tests/test_architecture.py reads this list and checks both; docs/architecture.md draws it):

- ``golden_rows``: the golden projection's rows, below the schema whose migration backfills it
- ``schema``: the migrations, appended in order
- ``paths``: the demo set, the default project
- ``connection``: opening, transactions, snapshots, key-press tagging, the import lock
- ``settings``: the protocol
- ``corpus``: queries, documents, search
- ``log``: the append-only event log
- ``states``: per-query state and reviewers' decisions
- ``projections``: the tables the log maintains
- ``replay``: golden records read back for import (pure)
- ``imports``: tasks files and golden sets
- ``pool``: pooling runs
- ``machine``: machine judges' labels and calls
- ``sampling``: the sample humans label first
- ``labelling``: the queue, which follows the sample, and the actions
- ``accounts``: users, sign-in, sessions
- ``team``: assignments, adjudication
- ``frames``: bulk frames for eval and the dashboard, run history
- ``metric_cache``: the dashboard's last figures
- ``export``: JSONL and qrels
- ``worklist``: an annotator's own queries, filtered and paged

:class:`Store` is the one facade composed of them: callers import only it and the constants
re-exported here.
"""

from __future__ import annotations

from goldset.labeler.auth import ROLES
from goldset.labeler.store.accounts import Accounts
from goldset.labeler.store.connection import CHUNK, SYNCHRONOUS, ProjectError, is_busy
from goldset.labeler.store.corpus import UNPUBLISHED_HIDDEN
from goldset.labeler.store.export import Export
from goldset.labeler.store.frames import Frames
from goldset.labeler.store.imports import STAGE_PAUSE, STAGE_ROWS, STAGE_SECONDS
from goldset.labeler.store.labelling import ANY_GRADE, is_write_failure
from goldset.labeler.store.log import IMPORT_RUN, StaleTarget
from goldset.labeler.store.machine import MachineJudges
from goldset.labeler.store.metric_cache import MetricCache
from goldset.labeler.store.paths import (
    DATA_DIR,
    DEFAULT_DB,
    DEMO_TASKS,
    FROM_CLONE,
    PACKAGE_DATA,
    SOURCE_DATA,
    user_data_dir,
)
from goldset.labeler.store.pool import Pool
from goldset.labeler.store.replay import ROUND_TRIP_KEYS, GoldenPlan, Replay
from goldset.labeler.store.sampling import SAMPLING_MODES, Sampling
from goldset.labeler.store.schema import migrations
from goldset.labeler.store.settings import DEFAULT_SETTINGS
from goldset.labeler.store.states import QuerySheet
from goldset.labeler.store.team import Team
from goldset.labeler.store.worklist import VERDICTS, Worklist

__all__ = [
    "ANY_GRADE",
    "CHUNK",
    "DATA_DIR",
    "DEFAULT_DB",
    "DEFAULT_SETTINGS",
    "DEMO_TASKS",
    "FROM_CLONE",
    "GoldenPlan",
    "IMPORT_RUN",
    "PACKAGE_DATA",
    "ProjectError",
    "QuerySheet",
    "ROLES",
    "ROUND_TRIP_KEYS",
    "Replay",
    "SOURCE_DATA",
    "STAGE_PAUSE",
    "STAGE_ROWS",
    "SAMPLING_MODES",
    "STAGE_SECONDS",
    "SYNCHRONOUS",
    "StaleTarget",
    "Store",
    "UNPUBLISHED_HIDDEN",
    "VERDICTS",
    "is_busy",
    "is_write_failure",
    "migrations",
    "user_data_dir",
]


class Store(Export, Frames, Team, Accounts, Worklist, Pool, Sampling, MachineJudges, MetricCache):
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

    @classmethod
    def open_default(cls) -> Store:
        """The default project (:data:`DEFAULT_DB`), created from the demo set on first use
        (and checked, when it exists, as :meth:`open_project` checks any project)."""
        DEFAULT_DB.parent.mkdir(parents=True, exist_ok=True)
        store = cls.open_project(DEFAULT_DB, write=True, create=True)
        if not store.has_queries():
            store.import_tasks(DEMO_TASKS)
        return store
