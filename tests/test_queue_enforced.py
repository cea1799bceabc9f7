"""The queue is enforced on the server for every action: an annotator acts on, and sees, only
the queries of their queue (their assigned ones, or the shared queue when they have none);
reviewers and admins any query. A press, a history reopen, N/P, a search-attach or an undo
aimed at another query is refused with a message and changes nothing, and nothing of that
query (text, candidates, labels) is drawn on the page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.team import team_project
from streamlit.testing.v1 import AppTest

from goldset.labeler import team
from goldset.labeler.judging import LabelSession
from goldset.labeler.store import Store

APP = "../labeler/app.py"
# ana's queue is q1 and q2; q3 and q4 are a blind overlap dealt to bob and carl; q5 and q6
# are dealt to nobody (the shared queue of annotators without assignments, like dave).
PLAN = {"ana": ["q1", "q2"], "bob": ["q3", "q4"], "carl": ["q3", "q4"]}


@pytest.fixture
def dealt_db(tmp_path) -> Path:
    """The team project (tests/helpers/team.py) with carl and dave added, dealt as ``PLAN``."""
    path = team_project(tmp_path / "team.db", with_passwords=False)
    with Store(path) as store:
        for name in ("carl", "dave"):
            store.add_annotator(name)
        store.assign_plan(PLAN)
    return path


@pytest.fixture
def dealt_store(dealt_db) -> Iterator[Store]:
    with Store(dealt_db) as opened:
        yield opened


def events_on(store: Store, query_id: str) -> list[dict]:
    """Every event of the log on ``query_id``, whoever made it."""
    return store.events_frame(query_id).to_dict("records")


# --- the rule -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "allowed"),
    [
        ("ana", {"q1", "q2"}),
        ("bob", {"q3", "q4"}),
        ("dave", {"q5", "q6"}),  # no assignment: the queries dealt to nobody
        ("rita", {"q1", "q2", "q3", "q4", "q5", "q6"}),  # a reviewer, by role
        ("alan", {"q1", "q2", "q3", "q4", "q5", "q6"}),  # an admin, by role
    ],
)
def test_who_may_open_which_query(dealt_store, user, allowed):
    queries = {f"q{number}" for number in range(1, 7)}
    assert {q for q in queries if team.may_open(dealt_store, user, q)} == allowed
    assert not team.may_open(dealt_store, user, "no-such-query")


def test_the_shared_queue_never_offers_a_query_dealt_to_others(dealt_store):
    offered = []
    query_id = None
    for _ in range(6):
        query_id = dealt_store.next_query("dave", after=query_id)
        offered.append(query_id)
    assert set(offered) == {"q5", "q6"}


def test_every_query_next_query_offers_is_in_the_queue(dealt_store):
    for name in ("ana", "bob", "carl", "dave"):
        query_id = dealt_store.next_query(name)
        assert query_id is not None and dealt_store.in_queue(name, query_id)


# --- each action aimed outside the queue ----------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["u", "m", "s", "0", "1", "j", "k", "n", "p", "h", "/", "enter", "x", "z"]
)
def test_a_press_aimed_at_a_query_outside_the_queue_is_refused(dealt_store, key):
    session = LabelSession(dealt_store, "ana")
    target = {"query": "q3", "doc": "q3-d1", "grade": None} if key.isdigit() else {"query": "q3"}
    session.press_typed(key, page="page-1", seq=1, target=target)
    assert session.message == "Not done: no query q3 in your queue"
    assert session.query_id == "q1"
    assert session.page().view.query["query_id"] == "q1"
    assert events_on(dealt_store, "q3") == []
    assert dealt_store.applied_key_press("page-1") == 0


def test_a_blind_overlap_query_gets_no_verdict_from_outside_and_its_export_is_unchanged(
    dealt_store,
):
    before = dealt_store.golden_records()
    session = LabelSession(dealt_store, "ana")
    session.press_typed("u", page="page-1", seq=1, target={"query": "q3"})
    assert dealt_store.query_state("q3", "ana")["status"] == "pending"
    assert dealt_store.golden_records() == before


def test_a_history_reopen_or_link_outside_the_queue_is_refused(dealt_store):
    session = LabelSession(dealt_store, "ana")
    session.history.append("q4")  # as if a crafted history entry had reached the session
    session.press("h")
    session.press(str(session.recent().index("q4") + 1))
    assert session.query_id == "q1"
    assert session.message == "Not done: no query q4 in your queue"
    session.reopen("q3")
    assert session.query_id == "q1" and "no query q3 in your queue" in session.message
    session.reopen("q2")
    assert session.query_id == "q2" and session.message == ""


def test_a_search_attach_on_a_query_outside_the_queue_is_refused(dealt_store):
    session = LabelSession(dealt_store, "ana")
    session.press_typed("/", page="page-1", seq=1, target={"query": "q1"})
    assert session.search is not None and session.search.results
    session.press_typed("enter", page="page-1", seq=2, target={"query": "q3"})
    assert "no query q3 in your queue" in session.message
    assert events_on(dealt_store, "q3") == [] and events_on(dealt_store, "q1") == []


def test_an_undo_of_an_action_on_a_query_dealt_away_since_is_refused(dealt_store):
    session = LabelSession(dealt_store, "dave")
    assert session.query_id == "q5"
    session.press_typed("0", page="page-1", seq=1, target={"query": "q5"})
    dealt_store.assign("bob", ["q5"])  # an admin deals q5 to bob: it leaves dave's shared queue
    session.press_typed("z", page="page-1", seq=2)
    assert "not in your queue" in session.message
    assert dealt_store.labels("q5", "dave") == {"q5-d1": 0}
    page = session.page()  # Z would take back the 0 on q5, the open query: none drawn behind
    assert (page.last_action, page.behind) == (dealt_store.last_undoable("dave"), None)


def test_an_action_on_the_open_query_dealt_away_since_is_refused(dealt_store):
    session = LabelSession(dealt_store, "dave")
    dealt_store.assign("bob", ["q5"])
    for key in ("0", "u", "s", "x"):
        session.press(key)
        assert session.message == "Not done: no query q5 in your queue"
    session.attach("q1-d1")
    assert session.message == "Not done: no query q5 in your queue"
    assert events_on(dealt_store, "q5") == []


def test_a_new_session_does_not_resume_a_query_dealt_away_since(dealt_store):
    LabelSession(dealt_store, "dave").press("0")  # dave starts q5, in the shared queue
    dealt_store.assign("bob", ["q5"])
    assert dealt_store.resume_query("dave") == "q5"  # where dave left off, but no longer his
    assert LabelSession(dealt_store, "dave").query_id == "q6"


def test_a_reviewer_may_label_any_query(dealt_store):
    session = LabelSession(dealt_store, "rita")
    session.press_typed("1", page="page-1", seq=1, target={"query": "q3", "doc": "q3-d1"})
    assert dealt_store.labels("q3", "rita") == {"q3-d1": 1}


# --- the page -------------------------------------------------------------------------------------


@pytest.fixture
def app(dealt_db, open_in_app) -> Path:
    """The app opens the dealt project."""
    return open_in_app(dealt_db)


def signed_in(user: str, link: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state["annotator"] = user
    if link:
        at.query_params["query"] = link
    at.run()
    assert not at.exception, at.exception
    return at


def page_html(at: AppTest) -> str:
    return "\n".join(element.proto.body for element in at.get("html"))


@pytest.mark.parametrize("key", ["j", "u", "n", "p", "enter", "z"])
def test_the_page_shows_nothing_of_a_query_a_press_was_aimed_at_outside_the_queue(app, key):
    at = signed_in("ana")
    session = at.session_state["label_session"]
    session.press_typed(key, page="page-1", seq=1, target={"query": "q3"})
    at.run()
    html = page_html(at)
    assert "question 1" in html
    assert "question 3" not in html and "q3-d1" not in html and "doc 3." not in html
    assert "no query q3 in your queue" in html


def test_a_link_to_a_query_outside_the_queue_opens_nothing_of_it(app):
    at = signed_in("ana", link="q3")
    html = page_html(at)
    assert "question 1" in html and "question 3" not in html
    assert "no query q3 in your queue" in html
    assert "question 2" in page_html(signed_in("ana", link="q2"))  # her own: opened
    assert "question 3" in page_html(signed_in("rita", link="q3"))  # a reviewer's: any
