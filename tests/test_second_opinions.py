"""The queue rule of issue 17: a query where the machine judge the project trusts and the first
human disagree goes to a second annotator first, until a second human has judged it.

Four queries q0..q3 with three candidates each, in first-hit mode. "ana" judges q1 (d1 relevant,
the first candidate); the trusted judge labels some pairs.
"""

import pytest

from goldset.labeler import judges
from goldset.labeler.store import Store

JUDGE = "machine:rule"
TASKS = [
    {
        "query_id": f"q{q}",
        "query": f"question {q}",
        "candidates": [{"doc_id": f"q{q}-d{d}", "text": f"text {d}"} for d in (1, 2, 3)],
    }
    for q in range(4)
]


def machine_label(
    store: Store, query_id: str, doc_id: str, grade: int, model: str = "rule", prompt="0" * 64
) -> None:
    """The machine judge ``JUDGE`` (``model``, prompt hash ``prompt``) grades one pair."""
    pair = judges.Pair(query_id, doc_id, "", "", "")
    call = judges.Call("ok", 0.2, 30, 6, grade=grade, reason="rule")
    context = {"judge": JUDGE, "model": model, "prompt_sha256": prompt}
    store.record_judge_calls(judges.call_rows(pair, [call], context))


@pytest.fixture
def trusted_store(make_store) -> Store:
    """The four queries; ana judged q1 (d1 relevant); the judge ``JUDGE`` is trusted."""
    store = make_store(TASKS)
    store.judge("q1", "q1-d1", 1, "ana")
    store.trust_judge(JUDGE)
    return store


def test_a_disagreement_with_the_first_human_goes_to_the_other_annotator_first(trusted_store):
    assert trusted_store.next_query("bob") == "q0"
    # the machine calls ana's relevant doc irrelevant
    machine_label(trusted_store, "q1", "q1-d1", 0)
    assert trusted_store.next_query("bob") == "q1"
    assert trusted_store.next_query("bob", after="q0") == "q1"
    assert trusted_store.second_opinions() == [
        {"query_id": "q1", "first_annotator": "ana", "pairs": 1}
    ]


def test_an_agreeing_machine_label_changes_no_ones_queue(trusted_store):
    machine_label(trusted_store, "q1", "q1-d1", 3)  # relevant too, at another grade
    assert trusted_store.second_opinions() == []
    assert trusted_store.next_query("bob") == "q0"


def test_the_first_human_never_gets_their_own_disagreement_first(trusted_store):
    machine_label(trusted_store, "q1", "q1-d1", 0)
    assert trusted_store.next_query("ana") == "q0"
    assert trusted_store.next_query("ana", after="q0") == "q2"


def test_once_a_second_human_judged_it_the_queue_order_is_back(trusted_store):
    machine_label(trusted_store, "q1", "q1-d1", 0)
    trusted_store.judge("q1", "q1-d1", 0, "bob")
    trusted_store.judge("q1", "q1-d2", 1, "bob")
    assert trusted_store.second_opinions() == []
    assert trusted_store.next_query("cy") == "q0"
    assert trusted_store.next_query("bob", after="q1") == "q2"


def test_the_second_annotator_sees_none_of_the_first_ones_labels(trusted_store):
    machine_label(trusted_store, "q1", "q1-d1", 0)
    assert trusted_store.next_query("bob") == "q1"
    assert [c["grade"] for c in trusted_store.candidates("q1", "bob")] == [None, None, None]
    assert trusted_store.next_candidate("q1", "bob")["doc_id"] == "q1-d1"


def test_a_second_annotator_who_skips_it_leaves_it_to_a_third(trusted_store):
    machine_label(trusted_store, "q1", "q1-d1", 0)
    trusted_store.mark("q1", "skip", "bob")
    assert trusted_store.next_query("bob") == "q0"
    assert trusted_store.next_query("cy") == "q1"


def test_a_query_the_first_human_has_not_finished_waits_for_them(trusted_store):
    trusted_store.judge("q2", "q2-d1", 0, "ana")  # in progress: ana judged one of three
    machine_label(trusted_store, "q2", "q2-d1", 1)
    assert trusted_store.second_opinions() == []
    trusted_store.judge("q2", "q2-d2", 1, "ana")  # finishing it makes the disagreement count
    assert [row["query_id"] for row in trusted_store.second_opinions()] == ["q2"]
    trusted_store.undo("ana")
    assert trusted_store.second_opinions() == []


def test_with_assignments_it_comes_first_among_the_assigned_queries_only(trusted_store):
    machine_label(trusted_store, "q1", "q1-d1", 0)
    trusted_store.assign("bob", ["q2", "q3"])
    assert trusted_store.next_query("bob") == "q2"
    trusted_store.assign("bob", ["q1"])
    assert trusted_store.next_query("bob") == "q1"


def test_a_reviewers_decision_ends_the_wait(trusted_store):
    machine_label(trusted_store, "q1", "q1-d1", 0)
    trusted_store.adjudicate("q1", "rita", {"q1-d1": 1}, True)
    assert trusted_store.second_opinions() == []


def test_a_new_relevance_threshold_is_applied_to_the_disagreements(trusted_store):
    trusted_store.judge("q2", "q2-d1", 2, "ana")
    machine_label(trusted_store, "q2", "q2-d1", 1)
    assert trusted_store.second_opinions() == []
    trusted_store.configure(rel_threshold=2)  # the machine's grade 1 is not relevant any more
    assert [row["query_id"] for row in trusted_store.second_opinions()] == ["q2"]
    # ana's grade 1 no longer finishes q1 (first-hit): it waits for her, not for a second.
    assert trusted_store.query_state("q1", "ana")["status"] == "in_progress"


def test_rebuilding_the_projections_gives_the_same_second_opinions(trusted_store):
    machine_label(trusted_store, "q1", "q1-d1", 0)
    trusted_store.judge("q3", "q3-d1", 0, "ana")
    trusted_store.judge("q3", "q3-d2", 0, "ana")
    trusted_store.judge("q3", "q3-d3", 0, "ana")
    trusted_store.mark("q3", "miss", "ana")
    machine_label(trusted_store, "q3", "q3-d2", 1)
    before = trusted_store.second_opinions()
    trusted_store.rebuild_projections()
    assert trusted_store.second_opinions() == before
    assert [row["query_id"] for row in before] == ["q1", "q3"]


def test_a_judge_nobody_trusts_changes_no_ones_queue(trusted_store):
    trusted_store.trust_judge(None)
    machine_label(trusted_store, "q1", "q1-d1", 0)
    assert trusted_store.second_opinions() == [] and trusted_store.trusted_judge() is None
    assert trusted_store.next_query("bob") == "q0"


def test_trusting_a_judge_later_brings_the_disagreements_it_already_labelled(trusted_store):
    trusted_store.trust_judge("machine:other")
    machine_label(trusted_store, "q1", "q1-d1", 0)
    assert trusted_store.second_opinions() == []
    trusted_store.trust_judge(JUDGE)
    assert trusted_store.trusted_judge() == JUDGE
    assert trusted_store.next_query("bob") == "q1"


def test_a_judge_is_trusted_by_its_machine_name_only(trusted_store):
    with pytest.raises(ValueError, match="machine:<name>"):
        trusted_store.trust_judge("ana")
    assert trusted_store.trusted_judge() == JUDGE
