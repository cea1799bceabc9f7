"""A write that fails is never silent: a press the database refuses to store (full disk,
read-only file) is named to the annotator, the page stays on its query, and the presses are
kept and sent again — applied exactly once when writes succeed again, never marked applied
before.

The disk fills up for real as far as SQLite can tell: ``PRAGMA max_page_count`` caps the
project file at its present size, so the first write that needs a new page fails with
SQLITE_FULL ("database or disk is full"), as on a full disk; raising it again is the space
coming back. ``PRAGMA query_only`` gives the error of a read-only file (SQLITE_READONLY).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from goldset.labeler import render
from goldset.labeler.judging import LabelSession, StillBusy, WriteFailed
from goldset.labeler.keys import KeyCursor
from goldset.labeler.store import Store

APP = "../labeler/app.py"
UNLIMITED_PAGES = 1073741823  # SQLite's default max_page_count
# Enough queries that the capped file runs out of room well before the queue does.
TASKS = [
    {
        "query_id": f"q{number:02}",
        "query": f"question {number}",
        "candidates": [{"doc_id": f"q{number:02}-d{rank}", "text": "text"} for rank in (1, 2, 3)],
    }
    for number in range(1, 61)
]


@pytest.fixture
def long_queue_db(make_project) -> Path:
    """The sixty queries of ``TASKS`` and one annotator, ana; closed."""
    return make_project(TASKS, users=["ana"])


class Browser:
    """The key listener's side, as keys.js does it: an ordered log of (seq, key, ms, target),
    each press aimed at the query the page showed, sent whole until acknowledged."""

    def __init__(self, session: LabelSession):
        self.session, self.cursor, self.log, self.typed = session, KeyCursor(), [], 0

    def type(self, key: str) -> None:
        self.typed += 1
        self.log.append([self.typed, key, 0, {"query": self.session.query_id}])

    def send(self) -> int:
        """Send the log; the server applies what is new until a press cannot be stored (as
        :func:`goldset.labeler.keys.listen` does). Returns how many presses are still
        unacknowledged."""
        store = self.session.store
        for press in self.cursor.take_new({"page": "page-1", "entries": self.log}, None):
            try:
                self.session.press_typed(
                    press.key, page="page-1", seq=press.seq, target=press.target
                )
            except StillBusy:
                break
            self.cursor.mark_applied(press)
        self.log = [entry for entry in self.log if entry[0] > self.cursor.applied]
        assert store.applied_key_press("page-1") <= self.cursor.applied
        return len(self.log)


def cap_the_file(store: Store) -> None:
    """No page beyond those the project file has now: the next write needing one fails."""
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages}")


def press_until_refused(browser: Browser, most: int = 180) -> str:
    """Type ``0`` (then ``u`` once a query asks for a verdict), sending each at once, until
    the database refuses one; return the query it was on."""
    for _ in range(most):
        query_id = browser.session.query_id
        view = browser.session.page().view
        browser.type("u" if view.verdict_due else "0")
        if browser.send():
            return query_id
    raise AssertionError(f"the capped file took {most} presses")


def judgements(store: Store, query_id: str) -> list[tuple[str, int]]:
    events = store.events_frame(query_id)
    judged = events[events["action"] == "judge"]
    return list(zip(judged["doc_id"], judged["grade"], strict=True))


def test_presses_refused_by_a_full_disk_are_named_kept_and_applied_once_when_space_returns(
    long_queue_db,
):
    with Store(long_queue_db) as store:
        browser = Browser(LabelSession(store, "ana"))
        cap_the_file(store)
        query_id = press_until_refused(browser)
        refused_seq, refused_key = browser.log[0][:2]
        applied_before = store.applied_key_press("page-1")
        assert applied_before < refused_seq  # nothing marked applied that was not stored
        session = browser.session
        assert session.query_id == query_id  # the page stays on the query
        named = "grade 0" if refused_key == "0" else "unanswerable"
        assert session.unsaved.startswith(f"Not saved: {named}")
        assert f"(query {query_id})" in session.unsaved
        assert "database or disk is full" in session.unsaved
        judged = judgements(store, query_id)

        # Typed while the disk is full, kept behind the refused press: the rest of the query.
        left = 3 - len(judged) - (refused_key == "0")
        for key in "0" * left + "u":
            browser.type(key)
        kept = len(browser.log)
        assert browser.send() == kept and browser.send() == kept  # sent again: still refused
        assert judgements(store, query_id) == judged
        assert store.applied_key_press("page-1") == applied_before

        store.conn.execute(f"PRAGMA max_page_count = {UNLIMITED_PAGES}")  # space is back
        assert browser.send() == 0
        assert session.unsaved == ""
        assert store.applied_key_press("page-1") == browser.typed
        docs = [doc for doc, _ in judgements(store, query_id)]
        assert sorted(docs) == [f"{query_id}-d{rank}" for rank in (1, 2, 3)]  # once each
        assert store.query_state(query_id, "ana")["status"] == "done"
        assert session.query_id != query_id  # on to the next query only now


def test_a_restarted_server_does_not_apply_the_recovered_presses_again(long_queue_db):
    with Store(long_queue_db) as store:
        browser = Browser(LabelSession(store, "ana"))
        cap_the_file(store)
        query_id = press_until_refused(browser)
        store.conn.execute(f"PRAGMA max_page_count = {UNLIMITED_PAGES}")
        resent = browser.log[:]
        assert browser.send() == 0
        judged = judgements(store, query_id)
    with Store(long_queue_db) as store:  # a new server process gets the same log again
        browser = Browser(LabelSession(store, "ana"))
        browser.log = resent
        browser.cursor.page = "page-1"
        browser.cursor.applied = store.applied_key_press("page-1")
        assert browser.send() == 0
        assert judgements(store, query_id) == judged


def test_a_read_only_file_refuses_the_press_by_name_and_it_is_applied_once_writable(long_queue_db):
    with Store(long_queue_db) as store:
        browser = Browser(LabelSession(store, "ana"))
        store.conn.execute("PRAGMA query_only = ON")
        browser.type("1")
        assert browser.send() == 1
        assert "Not saved: grade 1 (query q01)" in browser.session.unsaved
        assert "readonly database" in browser.session.unsaved
        assert store.labels("q01", "ana") == {} and store.applied_key_press("page-1") == 0
        store.conn.execute("PRAGMA query_only = OFF")
        assert browser.send() == 0
        assert store.labels("q01", "ana") == {"q01-d1": 1}


def test_a_click_refused_by_the_file_says_so(long_queue_db):
    with Store(long_queue_db) as store:
        session = LabelSession(store, "ana")
        store.conn.execute("PRAGMA query_only = ON")
        session.click(session.press, "1")
        assert session.message.startswith("Not saved (attempt to write a readonly database)")
        with pytest.raises(WriteFailed):
            session.press("1")


# --- the page -------------------------------------------------------------------------------------


@pytest.fixture
def app(long_queue_db, open_in_app) -> Path:
    """The app opens the project."""
    return open_in_app(long_queue_db)


def test_the_page_names_the_unsaved_press_and_stays_on_its_query(app):
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state["annotator"] = "ana"
    at.run()
    session = at.session_state["label_session"]
    browser = Browser(session)
    cap_the_file(session.store)
    query_id = press_until_refused(browser)
    at.run()
    assert not at.exception, at.exception
    html = "\n".join(element.proto.body for element in at.get("html"))
    heading = next(part for part in html.split("\n") if "gs-query-text" in part)
    assert session.store.query(query_id)["query"] in heading
    alert = next(part for part in html.split("\n") if 'class="gs-alert"' in part)
    assert "Not saved: grade 0" in alert and "database or disk is full" in alert
    assert "kept on this page" in alert
    session.store.conn.execute(f"PRAGMA max_page_count = {UNLIMITED_PAGES}")
    assert browser.send() == 0
    at.run()
    assert 'class="gs-alert"' not in "".join(element.proto.body for element in at.get("html"))


def test_the_unsaved_line_is_text_not_markup():
    html = render.alert('Not saved: grade 1 on card <img src=x onerror="alert(1)"> (query q1)')
    assert "<img" not in html and "&lt;img" in html and 'role="alert"' in html
