"""The schema: every migration, appended in order (never edited once released)."""

from __future__ import annotations

import sqlite_utils
from sqlite_utils import Migrations

from goldset.labeler import golden
from goldset.labeler.identifiers import identifier_parts
from goldset.labeler.store.golden_rows import backfill

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


@migrations()
def create_machine_judges(db: sqlite_utils.Database) -> None:
    """Version 8: machine judges, kept apart from the human log. Every HTTP attempt a judge
    made (``judge_calls``), and the label of each pair it graded (``machine_judgments``)."""
    db.executescript(
        """
        CREATE TABLE judge_calls (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            judge TEXT NOT NULL,                       -- 'machine:<name>'
            model TEXT NOT NULL,
            prompt_sha256 TEXT NOT NULL,               -- the system message it was asked with
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            doc_id TEXT NOT NULL,
            attempt INTEGER NOT NULL,                  -- 1, 2, ... for one pair in one run
            outcome TEXT NOT NULL,                     -- ok, malformed, out_of_scale, timeout...
            grade INTEGER,
            reason TEXT NOT NULL DEFAULT '',
            detail TEXT NOT NULL DEFAULT '',           -- what went wrong, when it did
            prompt_tokens INTEGER,                     -- from the response's usage
            completion_tokens INTEGER,
            seconds REAL NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX judge_calls_judge ON judge_calls(judge, id);
        CREATE TABLE machine_judgments (
            judge TEXT NOT NULL,
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            doc_id TEXT NOT NULL,
            grade INTEGER NOT NULL,
            reason TEXT NOT NULL,
            call_id INTEGER NOT NULL REFERENCES judge_calls(id),
            PRIMARY KEY (judge, query_id, doc_id)
        ) WITHOUT ROWID;
        """
    )


@migrations()
def m9_golden_judgments(db: sqlite_utils.Database) -> None:
    """Version 9: the golden projection, each query's golden label as the one merge rule
    (:func:`goldset.labeler.golden.merge`) makes it — a row per judged doc, and the golden mode
    beside the golden status — backfilled from the stored states and decisions."""
    db.executescript(
        """
        CREATE TABLE golden_judgments (                -- projection: each query's golden grades
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            grade INTEGER NOT NULL,
            seq INTEGER NOT NULL,                      -- merge order: the label's event id, or
                                                       -- the doc's place in the decision
            source TEXT NOT NULL,                      -- who gave it: annotator, or reviewer
            decision_id INTEGER,                       -- the decision it is from; NULL: a label
            PRIMARY KEY (query_id, doc_id)
        ) WITHOUT ROWID;
        ALTER TABLE queries ADD COLUMN golden_mode TEXT;  -- projection: the newest
                                                       -- contributor's mode; NULL: the protocol's
        """
    )
    backfill(db.conn)


@migrations()
def create_second_opinions(db: sqlite_utils.Database) -> None:
    """Version 10: the queries the next annotator gets first: a machine judge the project
    trusts disagrees with the one human who judged them (see labeler/store/machine.py).
    Empty until an admin names that judge."""
    db.executescript(
        """
        CREATE TABLE second_opinions (
            query_id TEXT PRIMARY KEY REFERENCES queries(query_id),
            position INTEGER NOT NULL,                 -- the query's queue position
            first_annotator TEXT NOT NULL,             -- who judged it: not offered it first
            pairs INTEGER NOT NULL                     -- pairs the trusted judge disagrees on
        );
        CREATE INDEX second_opinions_order ON second_opinions(position);
        CREATE INDEX machine_judgments_pair ON machine_judgments(query_id, doc_id);
        """
    )


@migrations()
def index_identifier_parts(db: sqlite_utils.Database) -> None:
    """Version 11: documents are found by the parts of their id and of their title's
    identifiers (``legacy`` finds ``LegacyAuthClient``): a column ``parts`` (see
    :func:`goldset.labeler.identifiers.identifier_parts`), indexed beside title and text."""
    db.execute("ALTER TABLE documents ADD COLUMN parts TEXT NOT NULL DEFAULT ''")
    documents = db.execute("SELECT rowid, doc_id, title FROM documents").fetchall()
    db.conn.executemany(
        "UPDATE documents SET parts = ? WHERE rowid = ?",
        [(identifier_parts(doc_id, title), rowid) for rowid, doc_id, title in documents],
    )
    db.execute("DROP TABLE documents_fts")
    db["documents"].enable_fts(["title", "text", "parts"], tokenize="porter")


@migrations()
def create_dashboard_figures(db: sqlite_utils.Database) -> None:
    """Version 12: the dashboard's last figures per view (run and inputs), with the marks of
    the project state they were computed at, so that a server start shows them at once."""
    db.executescript(
        """
        CREATE TABLE dashboard_figures (
            view TEXT PRIMARY KEY,                     -- JSON: the run and the page's inputs
            marks TEXT NOT NULL,                       -- JSON: the dashboard marks computed at
            figures TEXT NOT NULL,                     -- JSON: live.kept's encoding
            seconds REAL NOT NULL,                     -- how long computing them took
            saved_at TEXT NOT NULL
        );
        """
    )


@migrations()
def m13_staged_golden_imports(db: sqlite_utils.Database) -> None:
    """Version 13: a golden-set import writes its replayed log early, in short transactions,
    and publishes it with its queries (see :meth:`Imports.import_tasks`). Decisions carry
    their import ``batch`` as events do, and the rows of a batch never published (the importer
    died) may be deleted — the only rows of the append-only log that ever are."""
    db.execute("ALTER TABLE adjudications ADD COLUMN batch INTEGER")
    for table in ("events", "adjudications"):
        db.executescript(
            f"""
            DROP TRIGGER {table}_append_only_delete;
            CREATE TRIGGER {table}_append_only_delete BEFORE DELETE ON {table}
                WHEN NOT EXISTS (SELECT 1 FROM import_batches
                                 WHERE id = old.batch AND published_at IS NULL)
                BEGIN SELECT RAISE(ABORT, '{table} are append-only'); END;
            CREATE INDEX {table}_batch ON {table}(batch) WHERE batch IS NOT NULL;
            """
        )


@migrations()
def m14_unknown_name_sign_ins(db: sqlite_utils.Database) -> None:
    """Version 14: failed sign-ins under names that are no user's, counted and locked as a
    user's are (see :meth:`Accounts.attempt_login`), so that the lockout does not tell which
    names exist. A name is kept as a digest: a fixed size whatever was typed."""
    db.executescript(
        """
        CREATE TABLE unknown_sign_ins (
            name_digest TEXT PRIMARY KEY,              -- 'sha256:' and the hex digest of the name
            failed_logins INTEGER NOT NULL DEFAULT 0,
            locked_until TEXT                          -- log time; NULL = not locked
        ) WITHOUT ROWID;
        CREATE INDEX unknown_sign_ins_lock ON unknown_sign_ins(locked_until)
            WHERE locked_until IS NOT NULL;
        """
    )


@migrations()
def m15_assignments_by_query(db: sqlite_utils.Database) -> None:
    """Version 15: assignments looked up by query. The queue rule asks whether a query is
    assigned to anyone, for every query a shared-queue annotator may open or lists: without
    this index each answer read all the assignments."""
    db.execute("CREATE INDEX assignments_query ON assignments(query_id)")


@migrations()
def m16_holes(db: sqlite_utils.Database) -> None:
    """Version 16: a query's *holes* beside its status (see
    :func:`goldset.labeler.golden.holes_left`):
    docs that a pooled run ranks above its first relevant one and nobody judged yet. A
    first-hit query stays done (in the golden set) while a new run's holes are pending; the
    queue offers the queries that are not done or have holes, through the partial index."""
    db.executescript(
        """
        ALTER TABLE queries ADD COLUMN holes INTEGER NOT NULL DEFAULT 0;      -- projection
        ALTER TABLE query_state ADD COLUMN holes INTEGER NOT NULL DEFAULT 0;  -- projection
        DROP INDEX queries_open;
        CREATE INDEX queries_open ON queries(position) WHERE status != 'done' OR holes > 0;
        """
    )
    backfill(db.conn)  # for a project that came through version 9 before holes existed


@migrations()
def m17_verdict_coverage(db: sqlite_utils.Database) -> None:
    """Version 17: a verdict covers the candidates that were in its query's pool when it was
    given (see :meth:`goldset.labeler.golden.QueryContext.covered_by`). An import or pool keeps the
    log's last event id when it was published (``last_event``): its candidates joined their
    pools after that event; those of earlier ones count as there from the start.

    And a project labelled before this version is marked for one re-derivation of its
    projections (``stale_projections``, done when it is next opened for writing: see
    :meth:`goldset.labeler.store.projections.Projections._after_migrating`): version 16 kept the
    states an earlier pool had derived, when a new run's unjudged docs reopened a done query.
    """
    db.executescript(
        """
        ALTER TABLE import_batches ADD COLUMN last_event INTEGER;  -- NULL: before version 17
        CREATE TABLE stale_projections (                -- why the projections are re-derived
            reason TEXT PRIMARY KEY,
            marked_at TEXT NOT NULL
        );
        """
    )
    db.execute(
        "INSERT INTO stale_projections (reason, marked_at) SELECT ?, ? WHERE EXISTS "
        "(SELECT 1 FROM events) OR EXISTS (SELECT 1 FROM adjudications)",
        ("derived before holes and verdict coverage", golden.now()),
    )


@migrations()
def m18_human_sample(db: sqlite_utils.Database) -> None:
    """Version 18: the sample the humans label first (see labeler/store/sampling.py): each
    drawn query with its inclusion probability and its place in the drawn order. Drawing
    again replaces it; labelling never changes it."""
    db.executescript(
        """
        CREATE TABLE sample (
            query_id TEXT PRIMARY KEY REFERENCES queries(query_id),
            probability REAL NOT NULL,                 -- inclusion probability, 1.0: census
            rank INTEGER NOT NULL UNIQUE,              -- place in the drawn order, 1 first
            drawn_at TEXT NOT NULL
        );
        """
    )
