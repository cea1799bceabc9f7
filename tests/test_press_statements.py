"""What one key press costs the database: its statements, and those of the label page's rerun
that follows it, counted with ``set_trace_callback`` (issue 25: at most 30 in all).

A press typed in the browser is ``LabelSession.press_typed``, applied in one write
transaction; the rerun of the label page's judging panel reads everything it shows with
``LabelSession.page`` in one snapshot, and takes the protocol that read found for the rest
(the key listener's panel, the grade buttons, the search's caption). The project is the demo
set (50 queries of 10 candidates, two slices), labelled by an annotator with the role
annotator, in both labelling modes.
"""

from __future__ import annotations

import pytest

from goldset.labeler import golden
from goldset.labeler.judging import LabelSession
from goldset.labeler.store import DEMO_TASKS

MOST_STATEMENTS = 30  # a press and the rerun after it, together
PAGE = "page-1"

# action -> (keys pressed before, the key measured)
ACTIONS = {
    "a grade": ((), "1"),
    "a not-relevant grade": (("0",), "0"),
    "a verdict": (("0",), "u"),
    "a skip": (("0",), "s"),
    "an undo": (("1",), "z"),
}


@pytest.fixture(params=["first_hit", "full"])
def session(request, make_store) -> LabelSession:
    """The annotator's label session on the demo set, in one labelling mode."""
    store = make_store(DEMO_TASKS, users=["ana"], protocol={"mode": request.param})
    return LabelSession(store, "ana")


def rerun(session: LabelSession) -> None:
    """What the judging panel reads on a rerun (see ``views/label.py``): the page, and the
    protocol it found (every key the listener accepts, the grade keys and names)."""
    session.page()
    assert session.accepted_keys and session.grade_keys and session.protocol


def typed(session: LabelSession, key: str, seq: int) -> None:
    """``key`` typed in the browser page, aimed at what the page shows (as the listener
    aims it: the query, and for a grade the current card and its grade)."""
    view = session.page().view
    target = {"query": view.query["query_id"]}
    if key.isdigit():
        target |= {"doc": view.current["doc_id"], "grade": view.current["grade"]}
    session.press_typed(key, page=PAGE, seq=seq, target=target)


def traced(session: LabelSession, step) -> list[str]:
    """The statements ``step()`` runs on the session's connection."""
    statements: list[str] = []
    session.store.conn.set_trace_callback(statements.append)
    try:
        step()
    finally:
        session.store.conn.set_trace_callback(None)
    return statements


def begins(statements: list[str]) -> int:
    """How many transactions the statements open."""
    return sum(1 for sql in statements if sql.lstrip().upper().startswith("BEGIN"))


def events(session: LabelSession) -> int:
    """How many events the log holds."""
    return session.store.conn.execute("SELECT count(*) FROM events").fetchone()[0]


@pytest.mark.parametrize("action", ACTIONS)
def test_a_press_and_the_rerun_after_it_take_few_statements(session, action):
    before, key = ACTIONS[action]
    for seq, earlier in enumerate(before, start=1):
        typed(session, earlier, seq)
        rerun(session)
    seq, logged = len(before) + 1, events(session)
    target_view = session.page().view  # what the page showed: read before the press, by the page
    target = {"query": target_view.query["query_id"]}
    if key.isdigit():
        current = target_view.current
        target |= {"doc": current["doc_id"], "grade": current["grade"]}

    press = traced(session, lambda: session.press_typed(key, page=PAGE, seq=seq, target=target))
    page = traced(session, lambda: rerun(session))

    assert session.message.startswith(("#", "q", "Undid")), session.message  # it acted
    assert events(session) == logged + 1 and session.store.applied_key_press(PAGE) == seq
    assert begins(press) == 1, press  # one transaction: its BEGIN IMMEDIATE
    assert any(sql.startswith("BEGIN IMMEDIATE") for sql in press)
    assert begins(page) == 1, page  # one snapshot
    assert len(press) + len(page) <= MOST_STATEMENTS, (len(press), len(page), press + page)


def test_the_rerun_reads_the_states_the_press_wrote_instead_of_replaying_the_log(
    session, monkeypatch
):
    replayed = []
    derive = golden.derive_state

    def counting(events, context):
        replayed.append(len(events))
        return derive(events, context)

    monkeypatch.setattr(golden, "derive_state", counting)
    typed(session, "0", 1)
    # the press derived its query's state once, from its one event (a query nobody acted on
    # is in the state of no events: no log read for it)
    assert [n for n in replayed if n] == [1]
    replayed.clear()
    rerun(session)
    assert replayed and not any(replayed)


def test_a_change_of_protocol_reaches_the_open_page_at_its_next_rerun(session):
    rerun(session)
    assert session.grade_keys == "0123"
    session.store.configure(max_grade=1, by="admin")
    assert session.grade_keys == "0123"  # as the page's last read found it
    rerun(session)
    assert session.grade_keys == "01"
