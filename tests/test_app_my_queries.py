"""The "My queries" page: a signed-in user lists their own queries with their own verdicts,
filters them by slice and verdict, searches them by text and opens one in the label page —
never a query of someone else's queue, never someone else's verdict (blind overlap), and data
text only as text. The store's page of queries (:meth:`Store.own_queries`) is tested beside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from helpers.team import TASKS, team_project, type_keys
from streamlit.testing.v1 import AppTest
from test_second_opinions import JUDGE, machine_label

from goldset.labeler import team
from goldset.labeler.auth import LOCAL_ANNOTATOR
from goldset.labeler.store import VERDICTS, Store

APP = "../labeler/app.py"
PAGE = "views/my_queries.py"
# q1 and q2 are a blind overlap of ana and bob; q3 is bob's alone; q4-q6 ana's alone.
PLAN = {"ana": ["q1", "q2", "q4", "q5", "q6"], "bob": ["q1", "q2", "q3"]}
# What each types (tests/helpers/team.py keys; "s" skips): q2 is done by bob, untouched by ana.
WORK = {
    "ana": {"q1": "1", "q4": "0000u", "q5": "0", "q6": "s"},
    "bob": {"q1": "01", "q2": "1", "q3": "0000m"},
}
ANA_SEES = {  # ana's list: her queries, her verdicts (q2 is pending for her, done for bob)
    "q1": "#1",
    "q2": "pending",
    "q4": "unanswerable",
    "q5": "in progress",
    "q6": "skipped",
}
HOSTILE_QUERY = '<img src=x onerror="alert(1)"> **bold** [link](https://evil.test) `code`'
HOSTILE_SLICE = "<b>head</b>"


def work(store: Store, plan: dict, keys_by_user: dict) -> None:
    """Assign ``plan`` and type each user's keys (``s`` skips the query)."""
    store.assign_plan(plan)
    for user, keys_by_query in keys_by_user.items():
        for query_id, keys in keys_by_query.items():
            if keys == "s":
                store.mark(query_id, "skip", user)
            else:
                type_keys(store, user, query_id, keys)


@pytest.fixture
def worked_db(tmp_path) -> Path:
    """The team project (tests/helpers/team.py) dealt as ``PLAN`` and worked as ``WORK``."""
    path = team_project(tmp_path / "team.db", with_passwords=False)
    with Store(path) as store:
        work(store, PLAN, WORK)
    return path


@pytest.fixture
def worked_store(worked_db) -> Iterator[Store]:
    with Store(worked_db) as opened:
        yield opened


@pytest.fixture
def app(worked_db, open_in_app) -> Path:
    """The app opens the worked project."""
    return open_in_app(worked_db)


def my_queries(user: str) -> AppTest:
    """The page, signed in as ``user``."""
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state["annotator"] = user
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def listed(at: AppTest) -> dict[str, str]:
    """The table's queries: id -> the verdict shown ({} when the page lists none)."""
    if not at.dataframe:
        return {}
    table = at.dataframe[0].value
    return dict(zip(table["Query ID"], table["Your verdict"], strict=True))


def everything_said(at: AppTest) -> str:
    """All the page's text: tables, widgets' options, Markdown and HTML."""
    parts = [str(frame.value.to_dict()) for frame in at.dataframe]
    parts += [str(box.options) for box in [*at.selectbox, *at.multiselect]]
    for kind in ("markdown", "caption", "info", "title", "html", "text"):
        parts += [str(element.proto) for element in at.get(kind)]
    return "\n".join(parts)


# --- the page -------------------------------------------------------------------------------------


def test_an_annotator_lists_her_queries_with_her_own_verdicts(app):
    at = my_queries("ana")
    assert listed(at) == ANA_SEES
    said = everything_said(at)
    assert "question 3" not in said and "q3" not in listed(at)  # bob's alone
    assert "Queries 1–5 of 5" in said
    table = at.dataframe[0].value
    changed = dict(zip(table["Query ID"], table["Last change"], strict=True))
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", changed["q1"])
    assert changed["q2"] == "—"  # never touched by her


def test_the_other_annotator_sees_his_own_verdicts_on_the_shared_overlap(app):
    assert listed(my_queries("bob")) == {"q1": "#2", "q2": "#1", "q3": "miss"}


@pytest.mark.parametrize(
    ("slices", "verdicts", "expected"),
    [
        (["tail"], [], {"q4", "q5", "q6"}),
        ([], ["pending"], {"q2"}),
        ([], ["relevant", "unanswerable"], {"q1", "q4"}),
        (["head"], ["skipped"], set()),
        (["tail"], ["skipped", "in_progress"], {"q5", "q6"}),
    ],
)
def test_the_list_filters_by_slice_and_verdict(app, slices, verdicts, expected):
    at = my_queries("ana")
    at.multiselect(key="my_queries_slices").set_value(slices)
    at.multiselect(key="my_queries_verdicts").set_value(verdicts).run()
    assert set(listed(at)) == expected
    if not expected:
        assert [info.value for info in at.info] == ["No query of yours matches these filters."]


def test_the_search_finds_her_queries_by_text_and_never_another_queue(app):
    at = my_queries("ana")
    at.text_input(key="my_queries_text").input("QUESTION 4").run()
    assert listed(at) == {"q4": "unanswerable"}
    at.text_input(key="my_queries_text").input("question 3").run()  # bob's: not hers
    assert listed(at) == {}
    assert "question 3" not in everything_said(at)


def test_a_listed_query_opens_in_the_label_page(app):
    at = my_queries("ana")
    at.selectbox(key="my_queries_open").set_value("q4")
    next(button for button in at.button if button.label == "Open in the label page").click()
    at.run()
    assert not at.exception, at.exception
    headings = "\n".join(element.proto.body for element in at.get("html"))
    assert "question 4" in headings and "question 1" not in headings
    assert at.session_state["label_session"].query_id == "q4"


@pytest.mark.parametrize("user", ["rita", "alan"])
def test_every_role_has_the_page(app, user):
    at = my_queries(user)  # no assignment, and the shared queue is empty here
    assert [info.value for info in at.info] == ["No query of yours matches these filters."]


def test_hostile_query_text_and_slice_show_as_text(tmp_path, monkeypatch):
    path = tmp_path / "hostile.db"
    with Store(path) as store:
        store.import_records([{**TASKS[0], "query": HOSTILE_QUERY, "slice": HOSTILE_SLICE}])
    monkeypatch.setenv("GOLDSET_DB", str(path))
    st.cache_resource.clear()
    try:
        at = my_queries(LOCAL_ANNOTATOR)  # no users: the local annotator
    finally:
        st.cache_resource.clear()
    table = at.dataframe[0].value
    assert (table["Query"][0], table["Slice"][0]) == (HOSTILE_QUERY, HOSTILE_SLICE)
    assert at.multiselect(key="my_queries_slices").options == [HOSTILE_SLICE]
    [option] = at.selectbox(key="my_queries_open").options  # plain text, cut to a preview
    assert option.startswith(f"q1 · pending · {HOSTILE_QUERY[:40]}")
    for kind in ("markdown", "caption", "html", "info"):  # neither markup nor raw HTML
        for element in at.get(kind):
            assert "onerror" not in str(element.proto) and "evil.test" not in str(element.proto)


def test_the_page_turns_fifty_queries_at_a_time_and_a_filter_goes_back_to_the_first(
    tmp_path, monkeypatch
):
    path = tmp_path / "many.db"
    with Store(path) as store:
        store.import_records(
            [{**TASKS[0], "query_id": f"m{number:02}", "slice": "s"} for number in range(55)]
        )
    monkeypatch.setenv("GOLDSET_DB", str(path))
    st.cache_resource.clear()
    try:
        at = my_queries(LOCAL_ANNOTATOR)
        assert len(listed(at)) == 50 and "Queries 1–50 of 55" in everything_said(at)
        at.button(key="my_queries_next").click().run()
        assert list(listed(at)) == [f"m{number}" for number in range(50, 55)]
        assert "Queries 51–55 of 55" in everything_said(at)
        assert at.button(key="my_queries_next").disabled
        at.text_input(key="my_queries_text").input("m0").run()  # m00-m09: back to page one
        assert list(listed(at)) == [f"m0{number}" for number in range(10)]
    finally:
        st.cache_resource.clear()


# --- the store's page of queries ------------------------------------------------------------------


def own_ids(store: Store, user: str, **filters) -> list[str]:
    return [row["query_id"] for row in store.own_queries(user, **filters)["queries"]]


def test_an_annotator_in_the_shared_queue_lists_what_she_touched_and_what_is_open(tmp_path):
    path = team_project(tmp_path / "shared.db", with_passwords=False)
    with Store(path) as store:
        for name in ("carl", "dave"):
            store.add_annotator(name)
        # q1, q2 dealt to ana; q3-q6 shared. dave finished q3; carl finished q6 and began q5.
        work(store, {"ana": ["q1", "q2"]}, {"dave": {"q3": "1"}, "carl": {"q6": "1", "q5": "0"}})
        page = store.own_queries("dave")
        assert page["total"] == 3
        assert {row["query_id"]: row["verdict"] for row in page["queries"]} == {
            "q3": "relevant",
            "q4": "pending",
            "q5": "pending",  # carl's work on it is not dave's
        }
        assert own_ids(store, "carl") == ["q4", "q5", "q6"]  # q3, done by dave: not open
        assert own_ids(store, "ana") == ["q1", "q2"]


def test_a_query_waiting_for_a_second_opinion_is_open_to_the_others(tmp_path):
    with Store(tmp_path / "p.db") as store:
        store.import_records(TASKS[:2])
        type_keys(store, "ana", "q1", "1")  # done: no longer open in the shared queue...
        store.trust_judge(JUDGE)
        machine_label(store, "q1", "q1-d1", 0)  # ...until the trusted judge disagrees
        assert store.next_query("bob") == "q1"
        assert own_ids(store, "bob") == ["q1", "q2"]
        assert own_ids(store, "ana") == ["q1", "q2"]  # hers: she worked on it


def test_every_listed_query_is_one_the_user_may_open(worked_store):
    worked_store.add_annotator("dave")
    for user in ("ana", "bob", "dave", "rita", "alan"):
        listed_ids = own_ids(worked_store, user, limit=100)
        assert all(worked_store.in_queue(user, query_id) for query_id in listed_ids)
        assert all(team.may_open(worked_store, user, query_id) for query_id in listed_ids)
        queue = [row["query_id"] for row in TASKS if worked_store.in_queue(user, row["query_id"])]
        assert set(listed_ids) <= set(queue)


def test_the_list_is_paged_in_queue_order_with_its_total(worked_store):
    first = worked_store.own_queries("ana", limit=2)
    second = worked_store.own_queries("ana", limit=2, offset=2)
    past = worked_store.own_queries("ana", limit=2, offset=10)
    assert [row["query_id"] for row in first["queries"]] == ["q1", "q2"]
    assert [row["query_id"] for row in second["queries"]] == ["q4", "q5"]
    assert (first["total"], second["total"], past) == (5, 5, {"total": 0, "queries": []})


def test_the_search_takes_percent_and_underscore_literally(tmp_path):
    with Store(tmp_path / "p.db") as store:
        store.import_records(
            [
                {**TASKS[0], "query_id": "a", "query": "100% match"},
                {**TASKS[1], "query_id": "b", "query": "100 matches"},
                {**TASKS[2], "query_id": "c", "query": "snake_case"},
                {**TASKS[3], "query_id": "d", "query": "snakeXcase"},
            ]
        )
        assert own_ids(store, "local", text="0%") == ["a"]
        assert own_ids(store, "local", text="e_c") == ["c"]


def test_an_unknown_verdict_is_refused(worked_store):
    with pytest.raises(ValueError, match="unknown verdicts"):
        worked_store.own_queries("ana", verdicts=["done", *VERDICTS])
