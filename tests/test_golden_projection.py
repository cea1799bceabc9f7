"""The golden projection: each query's golden label, written by the one merge rule
(``goldset.labeler.golden.merge``) in the transaction of every event and decision, and read by
export, ``eval --db`` and the dashboard. Rebuilt from the log alone, it equals the live one."""

import sqlite3
from contextlib import contextmanager

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_round_trip import tasks

from goldset.eval.readers import Golden, golden_from_records
from goldset.labeler import judges
from goldset.labeler.store import Store

JUDGE = "machine:rule"


def projection(store: Store) -> dict:
    """Everything the golden projection holds, and the progress counts kept beside it."""
    return {
        "judgments": store.conn.execute(
            "SELECT * FROM golden_judgments ORDER BY query_id, doc_id"
        ).fetchall(),
        "queries": store.conn.execute(
            "SELECT query_id, status, answerable, golden_mode, holes FROM queries ORDER BY query_id"
        ).fetchall(),
        "progress": store.progress(),
    }


def add_machine_labels(store: Store, pairs) -> None:
    context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
    for query_id, doc_id in pairs:
        pair = judges.Pair(query_id, doc_id, "", "", "")
        call = judges.Call("ok", 0.5, 40, 8, grade=1, reason="rule")
        store.record_judge_calls(judges.call_rows(pair, [call], context))


@pytest.fixture
def mixed(tmp_path):
    """A project in every state the merge rule meets: first-hit and full passes, overlap
    with disagreement, a decision, undo, U and M, an attached answer, a skip, a note, a
    pooled run, and machine labels beside the human ones."""
    run = tmp_path / "bm25.trec"
    run.write_text(
        "".join(
            f"q{n} Q0 q{n}-d{rank} {rank} {10 - rank} bm25\n" for n in (7, 8) for rank in (4, 3)
        )
    )
    with Store(tmp_path / "mixed.db") as store:
        store.import_records(tasks(9, prefix="q"))
        store.pool(None, None, [run], depth=2)
        store.add_annotator("rita", role="reviewer")
        store.judge("q1", "q1-d1", 0, "ana")
        store.judge("q1", "q1-d2", 1, "ana")  # first hit at 2...
        store.judge("q1", "q1-d1", 2, "ben", mode="full")  # ...ben disagrees, in full mode
        store.adjudicate("q1", "rita", {"q1-d1": 1, "q1-d3": 0}, True)
        store.judge("q2", "q2-d1", 1, "ana")
        store.judge("q2", "q2-d1", 0, "ben")  # the later label wins
        store.mark("q3", "unanswerable", "ana")  # U at the first candidate
        store.judge("q4", "q4-d1", 0, "ana")
        store.mark("q4", "miss", "ana")  # M after one judgement
        store.attach("q4", "q9-d4", 1, "ben")  # ben found the answer by search
        store.mark("q5", "skip", "ana")
        store.judge("q6", "q6-d1", 1, "ana")
        store.undo("ana")  # ana leaves nothing on q6
        store.set_note("q6", "ben", "ambiguous")
        for doc in ("q7-d1", "q7-d2", "q7-d3"):
            store.judge("q7", doc, 0, "ana", mode="full")  # full mode, in progress
        store.judge("q8", "q8-d4", 1, "ben")  # the pooled run's first doc
        store.adjudicate("q8", "rita", {"q8-d4": 0}, False)
        store.adjudicate("q8", "rita", {"q8-d4": 2}, True)  # deciding again: the latest counts
        add_machine_labels(store, [("q9", "q9-d1"), ("q9", "q9-d2"), ("q2", "q2-d3")])
        yield store


def test_rebuilding_the_golden_projection_from_the_log_equals_the_live_one(mixed):
    live = projection(mixed)
    assert len(live["judgments"]) > 5, "the scenario wrote no golden judgements"
    mixed.rebuild_projections()
    assert projection(mixed) == live


def test_machine_labels_never_enter_the_golden_projection(mixed):
    golden_pairs = {(q, d) for q, d, *_ in projection(mixed)["judgments"]}
    assert ("q2", "q2-d1") in golden_pairs
    assert {("q9", "q9-d1"), ("q9", "q9-d2"), ("q2", "q2-d3")} & golden_pairs == set()
    sources = {row[0] for row in mixed.conn.execute("SELECT source FROM golden_judgments")}
    assert sources == {"ana", "ben", "rita"}


def test_a_decision_replaces_the_annotators_labels_and_names_the_reviewer(mixed):
    rows = mixed.conn.execute(
        "SELECT doc_id, grade, source, decision_id FROM golden_judgments WHERE query_id = 'q1' "
        "ORDER BY seq"
    ).fetchall()
    decision = mixed.decision("q1")
    assert rows == [("q1-d1", 1, "rita", decision.id), ("q1-d3", 0, "rita", decision.id)]
    assert mixed.labels("q1") == {"q1-d1": 1, "q1-d3": 0}


def test_the_latest_label_of_any_annotator_is_the_golden_one(mixed):
    rows = mixed.conn.execute(
        "SELECT doc_id, grade, source, decision_id FROM golden_judgments WHERE query_id = 'q2'"
    ).fetchall()
    assert rows == [("q2-d1", 0, "ben", None)]


def test_export_and_eval_frames_read_the_same_golden_set_from_the_projection(mixed):
    from_frames = Golden(*mixed.golden_frames())
    from_records = golden_from_records(mixed.golden_records())
    assert from_frames.version == from_records.version
    pd.testing.assert_frame_equal(from_frames.queries, from_records.queries)
    stored = {(q, d): g for q, d, g, *_ in projection(mixed)["judgments"]}
    assert {(q, d): g for q, d, g in from_frames.judgments.itertuples(index=False)} == stored
    modes = dict(zip(from_frames.queries["query_id"], from_frames.queries["mode"], strict=True))
    assert (modes["q1"], modes["q7"], modes["q9"]) == ("full", "full", "first_hit")
    decided = {r["query_id"]: r for r in mixed.golden_records()}["q8"]
    assert decided["judgments"] == {"q8-d4": 2} and decided["answerable"]


def test_the_migration_backfills_the_projection_of_an_existing_project(mixed, tmp_path):
    live = projection(mixed)
    path = mixed.path
    mixed.close()
    old = sqlite3.connect(path)  # the project as it was before the golden projection
    old.executescript(
        "DROP TABLE golden_judgments; ALTER TABLE queries DROP COLUMN golden_mode; "
        "DELETE FROM _sqlite_migrations WHERE name = 'm9_golden_judgments';"
    )
    old.close()
    with Store(path) as upgraded:
        assert projection(upgraded) == live


def test_an_imported_golden_set_writes_the_projection_a_rebuild_finds(mixed, tmp_path):
    exported = tmp_path / "golden.jsonl"
    mixed.write_jsonl(exported)
    with Store(tmp_path / "fresh.db") as fresh:
        fresh.import_tasks(exported)
        imported = projection(fresh)
        assert len(imported["judgments"]) == len(projection(mixed)["judgments"])
        fresh.rebuild_projections()
        assert projection(fresh) == imported


def test_a_key_press_reads_and_writes_the_projection_by_index_only(mixed):
    statements = []
    mixed.conn.set_trace_callback(statements.append)
    try:
        mixed.judge("q7", "q7-d4", 1, "ana", mode="full")
    finally:
        mixed.conn.set_trace_callback(None)
    touching = [sql for sql in statements if "golden_judgments" in sql]
    assert touching, "the press did not refresh the golden projection"
    plans = [
        detail
        for sql in touching
        for *_, detail in mixed.conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
    ]
    # json_each: the rows the statement was given (a press's labels in one statement)
    assert not [d for d in plans if d.startswith("SCAN") and not d.startswith("SCAN json_each")]
    assert [d for d in plans if d.startswith("SEARCH")]


# --- the property: any sequence of actions ------------------------------------------------------

ANNOTATORS = ("ana", "ben")
DOCS = [f"q{n}-d{rank}" for n in (1, 2) for rank in range(1, 5)]
ACTIONS = st.one_of(
    st.tuples(
        st.just("judge"),
        st.sampled_from(ANNOTATORS),
        st.sampled_from(DOCS),
        st.integers(0, 3),
        st.sampled_from(["first_hit", "full"]),
    ),
    st.tuples(
        st.sampled_from(["unanswerable", "miss", "skip"]),
        st.sampled_from(ANNOTATORS),
        st.sampled_from(["q1", "q2"]),
    ),
    st.tuples(st.just("undo"), st.sampled_from(ANNOTATORS)),
    st.tuples(st.just("attach"), st.sampled_from(ANNOTATORS), st.sampled_from(DOCS)),
    st.tuples(
        st.just("configure"),
        st.sampled_from([0, 2, 3]),
        st.integers(1, 2),
        st.sampled_from(["first_hit", "full"]),
    ),
    st.tuples(
        st.just("decide"),
        st.sampled_from(["q1", "q2"]),
        st.dictionaries(st.sampled_from(DOCS[:4]), st.integers(0, 3), max_size=3),
        st.booleans(),
    ),
)


def apply(store: Store, action: tuple) -> None:
    kind, *args = action
    if kind == "judge":
        annotator, doc_id, grade, mode = args
        store.judge(doc_id.split("-")[0], doc_id, grade, annotator, mode=mode)
    elif kind == "undo":
        store.undo(args[0])
    elif kind == "attach":
        annotator, doc_id = args
        other = "q2" if doc_id.startswith("q1") else "q1"  # a doc of another query: search
        store.attach(other, doc_id, 1, annotator)
    elif kind == "configure":  # a change of protocol re-derives every labelled query
        depth, threshold, mode = args
        store.configure(depth=depth, rel_threshold=threshold, mode=mode)
    elif kind == "decide":
        query_id, judgments, answerable = args
        store.adjudicate(query_id, "rita", judgments, answerable)
    else:
        annotator, query_id = args
        store.mark(query_id, kind, annotator)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(actions=st.lists(ACTIONS, min_size=1, max_size=12))
def test_any_sequence_of_actions_leaves_a_projection_that_a_rebuild_reproduces(
    tmp_path_factory, actions
):
    with Store(tmp_path_factory.mktemp("any") / "any.db") as store:
        store.import_records(tasks(2, prefix="q"))
        for action in actions:
            apply(store, action)
        live = projection(store)
        store.rebuild_projections()
        assert projection(store) == live


# --- bulk re-derivation: a pool or a protocol change equals a rebuild -----------------------------


def every_projection(store: Store) -> dict:
    """Every table the log is projected into (the golden projection with them)."""
    tables = {
        "labels": "SELECT * FROM labels ORDER BY query_id, annotator, doc_id",
        "query_state": "SELECT * FROM query_state ORDER BY query_id, annotator",
        "counters": "SELECT annotator, slice, state, n FROM progress WHERE n != 0 "
        "ORDER BY annotator, slice, state",
        "second_opinions": "SELECT * FROM second_opinions ORDER BY query_id",
        "assignments": "SELECT annotator, query_id, open FROM assignments "
        "ORDER BY annotator, query_id",
    }
    found = {name: store.conn.execute(sql).fetchall() for name, sql in tables.items()}
    return {**projection(store), **found}


def rebuilt(store: Store) -> dict:
    """Every projection once rebuilt from the log alone."""
    store.rebuild_projections()
    return every_projection(store)


def reordering_run(folder, queries: int = 9) -> str:
    """A run "fresh" over q1..q{queries} that ranks each query's third candidate first, then
    the next query's first candidate (a new one), then its first."""
    path = folder / "fresh.trec"
    path.write_text(
        "".join(
            f"q{n} Q0 {doc} {rank} {10 - rank} fresh\n"
            for n in range(1, queries + 1)
            for rank, doc in enumerate((f"q{n}-d3", f"q{n % queries + 1}-d1", f"q{n}-d1"), start=1)
        )
    )
    return str(path)


@pytest.fixture
def trusted(mixed):
    """The mixed project with assignments, and a trusted machine judge that disagrees with
    the one annotator of q3 (U), q5 (skipped) and q6 (done at rank 2): q3 and q6 wait for a
    second opinion, q6 no more once the protocol reopens it (a new run's holes do not)."""
    mixed.judge("q6", "q6-d1", 0, "ana")
    mixed.judge("q6", "q6-d2", 1, "ana")
    mixed.assign("ana", ["q1", "q3", "q4", "q5", "q6", "q7"])
    mixed.assign("ben", ["q2", "q4", "q8"])
    add_machine_labels(mixed, [("q3", "q3-d1"), ("q5", "q5-d1"), ("q6", "q6-d1")])
    mixed.trust_judge(JUDGE)
    assert [row["query_id"] for row in mixed.second_opinions()] == ["q3", "q6"]
    return mixed


def test_pooling_a_run_over_a_labelled_project_leaves_what_a_rebuild_produces(trusted, tmp_path):
    before = every_projection(trusted)
    counts = trusted.pool(None, None, [reordering_run(tmp_path)], depth=3)
    live = every_projection(trusted)
    assert counts["queries_touched"] == 9 and live["query_state"] != before["query_state"]
    # q6 stays done: the new run's unjudged docs are holes, work that does not reopen it
    assert [row[0] for row in live["second_opinions"]] == ["q3", "q6"]
    assert rebuilt(trusted) == live


@pytest.mark.parametrize(
    "change",
    [
        {"depth": 2},
        {"mode": "full"},
        {"rel_threshold": 2},
        {"depth": 1, "rel_threshold": 2, "mode": "full"},
    ],
)
def test_a_protocol_change_on_a_labelled_project_leaves_what_a_rebuild_produces(trusted, change):
    before = every_projection(trusted)
    trusted.configure(**change)
    live = every_projection(trusted)
    assert live != before
    assert rebuilt(trusted) == live


def test_a_labelled_query_whose_state_was_lost_is_written_whole_by_a_protocol_change(trusted):
    # as if ana's projection of q4 had never been derived: its rows and counter gone
    conn = trusted.conn
    slice_name, state = conn.execute(
        "SELECT slice, status FROM query_state WHERE query_id = 'q4' AND annotator = 'ana'"
    ).fetchone()
    conn.execute("DELETE FROM query_state WHERE query_id = 'q4' AND annotator = 'ana'")
    conn.execute("DELETE FROM labels WHERE query_id = 'q4' AND annotator = 'ana'")
    conn.execute(
        "UPDATE progress SET n = n - 1 WHERE annotator = 'ana' AND slice = ? AND state = ?",
        (slice_name, state),
    )
    trusted.configure(depth=3)
    live = every_projection(trusted)
    assert ("q4", "ana") in {row[:2] for row in live["query_state"]}
    assert rebuilt(trusted) == live


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(actions=st.lists(ACTIONS, max_size=10), pool_depth=st.integers(1, 3))
def test_any_labelling_then_a_new_run_leaves_what_a_rebuild_produces(
    tmp_path_factory, actions, pool_depth
):
    folder = tmp_path_factory.mktemp("pooled")
    with Store(folder / "any.db") as store:
        store.import_records(tasks(2, prefix="q"))
        add_machine_labels(store, [("q1", "q1-d1"), ("q2", "q2-d2")])
        store.trust_judge(JUDGE)
        for action in actions:
            apply(store, action)
        store.pool(None, None, [reordering_run(folder, 2)], depth=pool_depth)
        live = every_projection(store)
        assert rebuilt(store) == live


def test_a_protocol_change_writes_the_main_tables_by_index_only(trusted, monkeypatch):
    @contextmanager
    def kept(self):  # the staged rows kept, to explain the statements that read them
        yield

    monkeypatch.setattr(Store, "_staging", kept)
    statements = []
    trusted.conn.set_trace_callback(statements.append)
    try:
        trusted.configure(depth=2, mode="full")
    finally:
        trusted.conn.set_trace_callback(None)
    staged = [  # the statements that publish them
        sql
        for sql in statements
        if "FROM temp.goldset_staged_rederived" in sql and not sql.startswith("DELETE FROM temp.")
    ]
    assert len(staged) == 8, "the re-derivation was not published from its staged rows"
    scans = [
        detail
        for sql in staged
        for *_, detail in trusted.conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
        if detail.startswith("SCAN")
        and detail not in ("SCAN t",)
        and not detail.startswith("SCAN json_each")
    ]
    assert scans == []
