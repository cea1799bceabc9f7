"""A query the system returned nothing for (``"candidates": []``, or a CSV row with no
candidate) is imported, and labelled like any other: unanswerable, a miss, or a miss whose
answer is attached from the corpus search."""

from __future__ import annotations

from pathlib import Path

import pytest

from goldset.labeler.judging import LabelSession
from goldset.labeler.store import Store

ACCEPTED = Path(__file__).parent / "accepted"


@pytest.fixture
def ana_store(make_store) -> Store:
    """An empty project with one annotator, ana."""
    return make_store(users=["ana"])


def record(store: Store, query_id: str) -> dict:
    return next(r for r in store.golden_records() if r["query_id"] == query_id)


def session_on(store: Store, query_id: str) -> LabelSession:
    session = LabelSession(store, "ana")
    session.reopen(query_id)
    assert session.query_id == query_id, session.message
    return session


def test_a_tasks_file_with_an_empty_candidate_list_is_imported(ana_store):
    ana_store.import_tasks(ACCEPTED / "empty_candidates.jsonl")
    assert ana_store.candidates("q2") == []
    assert ana_store.query("q2")["query"] == "parse ISO-8601 duration"
    assert len(ana_store.candidates("q1")) == 2


def test_a_csv_row_without_a_candidate_names_a_query_with_none(ana_store, tmp_path):
    path = tmp_path / "tasks.csv"
    path.write_text("query_id,query,doc_id,title\nq1,first,d1,one\nq2,nothing found,,\n")
    ana_store.import_tasks(path)
    assert ana_store.candidates("q2") == []
    assert [c["doc_id"] for c in ana_store.candidates("q1")] == ["d1"]


def test_a_query_without_candidates_asks_for_a_verdict_and_u_makes_it_unanswerable(ana_store):
    ana_store.import_tasks(ACCEPTED / "empty_candidates.jsonl")
    session = session_on(ana_store, "q2")
    assert session.page().view.verdict_due
    session.press("u")
    assert record(ana_store, "q2")["status"] == "done"
    assert record(ana_store, "q2")["answerable"] is False
    assert record(ana_store, "q2")["judgments"] == {}


def test_a_query_without_candidates_can_be_a_miss(ana_store):
    ana_store.import_tasks(ACCEPTED / "empty_candidates.jsonl")
    session_on(ana_store, "q2").press("m")
    assert record(ana_store, "q2")["status"] == "done"
    assert record(ana_store, "q2")["answerable"] is True
    assert record(ana_store, "q2")["first_relevant_rank"] is None


def test_a_query_without_candidates_takes_an_answer_attached_from_search(ana_store):
    ana_store.import_tasks(ACCEPTED / "empty_candidates.jsonl")
    session = session_on(ana_store, "q2")
    session.open_search("backoff jitter")
    assert [doc["doc_id"] for doc in session.search.results] == ["sdk/retry.py#backoff"]
    session.press("enter")
    assert record(ana_store, "q2")["judgments"] == {"sdk/retry.py#backoff": 1}
    assert record(ana_store, "q2")["status"] == "done"
