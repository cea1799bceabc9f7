"""The Python side of the key log: each press applied once, in order, whatever the batching."""

from labeler.judging import IDLE_CAP_SECONDS, ActiveTime
from labeler.keys import KeyCursor, KeyPress


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


def test_no_log_yet_applies_nothing():
    assert KeyCursor().take_new(None) == []


def test_presses_of_one_batch_carry_how_long_before_the_newest_they_were_typed():
    presses = KeyCursor().take_new(log("A", (1, "0", 1000), (2, "0", 1250), (3, "1", 4000)))
    assert presses == [KeyPress(1, "0", 3.0), KeyPress(2, "0", 2.75), KeyPress(3, "1", 0.0)]


def test_active_time_is_the_gap_since_the_previous_action():
    clock = ActiveTime(last=100.0)
    assert clock.lap(104.5) == 4.5
    assert clock.lap(106.0) == 1.5


def test_active_time_caps_idle_gaps():
    clock = ActiveTime(last=0.0)
    assert clock.lap(3600.0) == IDLE_CAP_SECONDS


def test_active_time_never_goes_negative_for_a_press_typed_before_the_last_lap():
    clock = ActiveTime(last=10.0)
    assert clock.lap(9.8) == 0.0
