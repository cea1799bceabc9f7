"""The Python side of the key log: each press applied once, in order, whatever the batching."""

import sqlite3
from pathlib import Path

import pytest

from goldset.labeler.judging import IDLE_CAP_SECONDS, ActiveTime, LabelSession
from goldset.labeler.keys import KeyCursor, KeyPress
from goldset.labeler.store import Store

TASKS = [
    {
        "query_id": f"q{number}",
        "query": f"query {number}",
        "candidates": [{"doc_id": f"q{number}-d{rank}", "text": "text"} for rank in (1, 2, 3)],
    }
    for number in (1, 2)
]


def log(page: str, *entries: tuple[int, str, float]) -> dict:
    """The component state the browser sends: its page id and the unacknowledged presses."""
    return {"page": page, "entries": [list(entry) for entry in entries]}


def apply_all(cursor: KeyCursor, state: dict) -> list[str]:
    applied = []
    for press in cursor.take_new(state):
        cursor.mark_applied(press)
        applied.append(press.key)
    return applied


def test_presses_arriving_in_growing_logs_are_applied_once_each_in_order():
    cursor = KeyCursor()
    assert apply_all(cursor, log("A", (1, "0", 10))) == ["0"]
    # The browser typed two more during the rerun; the log still holds the first one.
    assert apply_all(cursor, log("A", (1, "0", 10), (2, "0", 40), (3, "1", 70))) == ["0", "1"]
    assert apply_all(cursor, log("A", (1, "0", 10), (2, "0", 40), (3, "1", 70))) == []


def test_log_trimmed_after_acknowledgement_applies_only_new_presses():
    cursor = KeyCursor()
    apply_all(cursor, log("A", (1, "0", 10), (2, "1", 20)))
    assert apply_all(cursor, log("A", (3, "z", 30))) == ["z"]


def test_a_reloaded_page_starts_counting_again():
    cursor = KeyCursor()
    apply_all(cursor, log("A", (1, "0", 10), (2, "0", 20), (3, "0", 30)))
    assert apply_all(cursor, log("B", (1, "1", 5))) == ["1"]
    assert cursor.page == "B" and cursor.applied == 1


def test_a_page_seen_by_an_earlier_server_resumes_after_its_last_applied_press():
    cursor = KeyCursor()
    state = log("A", (1, "0", 10), (2, "0", 20), (3, "1", 30))
    presses = cursor.take_new(state, applied_before={"A": 2}.get)
    assert [press.seq for press in presses] == [3]


@pytest.fixture
def ana_db(make_project) -> Path:
    """The two queries of ``TASKS`` and one annotator, ana; closed."""
    return make_project(TASKS, users=["ana"])


def serve(path, state: dict) -> list[int]:
    """One server process's session receiving the browser's log: apply what is new."""
    store = Store(path)
    session, cursor, applied = LabelSession(store, "ana"), KeyCursor(), []
    for press in cursor.take_new(state, store.applied_key_press):
        cursor.mark_applied(press)
        session.press_typed(press.key, page=press.page, seq=press.seq)
        applied.append(press.seq)
    store.close()
    return applied


def test_presses_applied_before_a_server_restart_are_not_applied_again(ana_db):
    # "0", "0", "1": q1's first two candidates are not relevant, the third is.
    state = log("page-1", (1, "0", 10), (2, "0", 20), (3, "1", 30))
    assert serve(ana_db, state) == [1, 2, 3]
    with Store(ana_db) as store:
        before = store.golden_records()
    # The server restarts before the browser hears that 1-3 were applied, and it sends them
    # again with a new one: "0" on q2. Only that one is applied.
    state = log("page-1", (1, "0", 10), (2, "0", 20), (3, "1", 30), (4, "0", 40))
    assert serve(ana_db, state) == [4]
    with Store(ana_db) as store:
        after = {record["query_id"]: record for record in store.golden_records()}
        assert store.applied_key_press("page-1") == 4
    assert (
        after["q1"]["judgments"]
        == before[0]["judgments"]
        == {
            "q1-d1": 0,
            "q1-d2": 0,
            "q1-d3": 1,
        }
    )
    assert after["q2"]["judgments"] == {"q2-d1": 0}


def test_a_key_press_whose_write_fails_is_not_recorded(ana_db):
    with Store(ana_db) as store:
        with pytest.raises(ValueError), store.key_press("page-1", 7):
            store.judge("q1", "q1-d1", 99, "ana")  # no such grade: nothing is written
        assert store.applied_key_press("page-1") == 0
        with store.key_press("page-1", 8):
            store.judge("q1", "q1-d1", 1, "ana")
        assert store.applied_key_press("page-1") == 8
        assert store.applied_key_press("another page") == 0


def test_no_log_yet_applies_nothing():
    assert KeyCursor().take_new(None) == []


def test_presses_of_one_batch_carry_how_long_before_the_newest_they_were_typed():
    presses = KeyCursor().take_new(log("A", (1, "0", 1000), (2, "0", 1250), (3, "1", 4000)))
    assert presses == [
        KeyPress(1, "0", 3.0, "A"),
        KeyPress(2, "0", 2.75, "A"),
        KeyPress(3, "1", 0.0, "A"),
    ]


def test_active_time_is_the_gap_since_the_previous_action():
    clock = ActiveTime(last=100.0)
    assert clock.lap(104.5) == 4.5
    assert clock.lap(106.0) == 1.5


def test_active_time_caps_idle_gaps():
    clock = ActiveTime(last=0.0)
    assert IDLE_CAP_SECONDS == 120  # the README's figure
    assert clock.lap(3600.0) == 120.0


def test_active_time_never_goes_negative_for_a_press_typed_before_the_last_lap():
    clock = ActiveTime(last=10.0)
    assert clock.lap(9.8) == 0.0


def test_the_open_page_of_a_removed_user_writes_nothing(ana_db):
    with Store(ana_db) as store:
        store.add_annotator("admin", role="admin")  # the project keeps a user
        session = LabelSession(store, "ana")
        store.remove_annotator("ana")
        session.press_typed("1", page="page-1", seq=1)
        session.attach("q2-d1")
        assert "'ana' may not do this" in session.message
        assert store.labels("q1", "ana") == {}
        assert store.applied_key_press("page-1") == 0


def test_a_press_names_what_the_page_showed():
    target = {"query": "q1", "doc": "q1-d2", "grade": None}
    presses = KeyCursor().take_new(log("A", (1, "0", 10, target), (2, "n", 20)))
    assert [(press.key, press.target) for press in presses] == [("0", target), ("n", None)]


def test_a_press_while_another_writer_holds_the_database_is_not_applied_and_can_be_retried(
    ana_db,
):
    from goldset.labeler.judging import StillBusy

    blocker = sqlite3.connect(ana_db, isolation_level=None)
    with Store(ana_db, timeout=0.05) as store:
        session = LabelSession(store, "ana")
        blocker.execute("BEGIN IMMEDIATE")  # e.g. a long import holding the write lock
        with pytest.raises(StillBusy):
            session.press_typed("0", page="page-1", seq=1)
        blocker.execute("ROLLBACK")
        assert store.applied_key_press("page-1") == 0 and store.labels("q1", "ana") == {}
        session.press_typed("0", page="page-1", seq=1)  # the page sends it again
        assert store.applied_key_press("page-1") == 1
        assert store.labels("q1", "ana") == {"q1-d1": 0}
    blocker.close()


def test_a_press_acts_on_the_query_the_page_showed_not_the_one_open_here(ana_db):
    with Store(ana_db) as store:
        session = LabelSession(store, "ana")
        assert session.query_id == "q1"
        # The page showed q2 (fetched ahead), while this session still had q1 open.
        session.press_typed(
            "0", page="page-1", seq=1, target={"query": "q2", "doc": "q2-d1", "grade": None}
        )
        assert store.labels("q1", "ana") == {} and store.labels("q2", "ana") == {"q2-d1": 0}
        assert session.query_id == "q2"
