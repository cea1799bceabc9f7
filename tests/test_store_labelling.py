"""Labelling through the store: first-hit and full modes, unanswerable vs miss, skip, undo, notes.

Each test is a small scenario on the demo set, whose first four queries are the worked example
of the MRR definition: first relevant at rank 1, 3, none (a miss) and 2.
"""

import sqlite3

import pytest

from goldset.labeler.store import Store


def judge_down(store, query_id, grades, annotator="ana", mode="first_hit"):
    """Judge the candidates the store offers next, one grade each; return their doc ids."""
    judged = []
    for grade in grades:
        candidate = store.next_candidate(query_id, annotator, mode=mode)
        store.judge(query_id, candidate["doc_id"], grade, annotator, seconds=2.0, mode=mode)
        judged.append(candidate["doc_id"])
    return judged


def test_first_hit_offers_candidates_from_the_top_until_the_first_relevant(demo_store):
    offered = judge_down(demo_store, "q02", [0, 0, 1])
    assert offered == [c["doc_id"] for c in demo_store.candidates("q02")[:3]]
    assert demo_store.next_candidate("q02", "ana") is None
    state = demo_store.query_state("q02", "ana")
    assert state["status"] == "done" and state["complete"]
    assert state["first_relevant_rank"] == 3 and state["judged_depth"] == 3


def test_candidates_carry_the_annotators_current_grade(demo_store):
    judge_down(demo_store, "q02", [0, 1])
    grades = [c["grade"] for c in demo_store.candidates("q02", "ana")]
    assert grades == [0, 1] + [None] * 8
    assert all(c["grade"] is None for c in demo_store.candidates("q02", "bob"))
    assert demo_store.candidates("q02")[0]["provenance"] == {"import": 1}


def test_all_candidates_non_relevant_needs_a_verdict(demo_store):
    judge_down(demo_store, "q03", [0] * 10)
    state = demo_store.query_state("q03", "ana")
    assert state["needs_verdict"] and not state["complete"]
    assert demo_store.next_candidate("q03", "ana") is None


def test_miss_completes_an_answerable_query(demo_store):
    judge_down(demo_store, "q03", [0] * 10)
    demo_store.mark("q03", "miss", "ana")
    state = demo_store.query_state("q03", "ana")
    assert state["complete"] and state["answerable"] and state["first_relevant_rank"] is None


def test_unanswerable_completes_a_query_that_is_not_answerable(demo_store):
    judge_down(demo_store, "q45", [0] * 10)
    demo_store.mark("q45", "unanswerable", "ana", seconds=3.5)
    state = demo_store.query_state("q45", "ana")
    assert state["complete"] and not state["answerable"]
    assert demo_store.progress()["tail"]["unanswerable"] == 1


def test_attaching_the_missed_answer_completes_the_query_as_a_miss(demo_store):
    judge_down(demo_store, "q03", [0] * 10)
    found = demo_store.search("LegacyAuthClient deprecated")[0]["doc_id"]
    demo_store.attach("q03", found, 1, "ana", seconds=12.0)
    state = demo_store.query_state("q03", "ana")
    assert state["complete"] and state["answerable"] and state["first_relevant_rank"] is None
    assert demo_store.labels("q03", "ana")[found] == 1


def test_attach_refuses_a_candidate_and_an_unknown_document(demo_store):
    candidate = demo_store.candidates("q03")[0]["doc_id"]
    with pytest.raises(ValueError, match="judge it instead"):
        demo_store.attach("q03", candidate, 1, "ana")
    with pytest.raises(ValueError, match="unknown document"):
        demo_store.attach("q03", "no/such.py#doc", 1, "ana")


def test_full_mode_offers_every_candidate_even_after_a_relevant_one(demo_store):
    judge_down(demo_store, "q01", [3, 0, 2], mode="full")
    assert demo_store.query_state("q01", "ana")["status"] == "in_progress"
    judge_down(demo_store, "q01", [0] * 7, mode="full")
    state = demo_store.query_state("q01", "ana")
    assert state["complete"] and state["mode"] == "full" and state["judged_depth"] == 10


def test_judge_refuses_a_grade_outside_the_scale_and_a_doc_that_is_not_a_candidate(demo_store):
    doc_id = demo_store.candidates("q01")[0]["doc_id"]
    with pytest.raises(ValueError, match="0..3"):
        demo_store.judge("q01", doc_id, 4, "ana")
    with pytest.raises(ValueError, match="0..3"):
        demo_store.judge("q01", doc_id, True, "ana")
    with pytest.raises(ValueError, match="not a candidate"):
        demo_store.judge("q01", "cirrus/auth/v1.py#LegacyAuthClient", 1, "ana")
    with pytest.raises(ValueError, match="annotator"):
        demo_store.judge("q01", doc_id, 1, "")
    assert demo_store.status()["events"] == 0


def test_binary_project_refuses_grade_two(demo_store):
    demo_store.configure(max_grade=1)
    with pytest.raises(ValueError, match="0..1"):
        demo_store.judge("q01", demo_store.candidates("q01")[0]["doc_id"], 2, "ana")


def test_settings_that_contradict_each_other_or_the_labels_are_refused(demo_store):
    with pytest.raises(ValueError, match="nothing could be relevant"):
        demo_store.configure(max_grade=1, rel_threshold=2)
    demo_store.judge("q01", demo_store.candidates("q01")[0]["doc_id"], 3, "ana")
    with pytest.raises(ValueError, match="below a grade given: 3"):
        demo_store.configure(max_grade=2)
    assert demo_store.settings()["max_grade"] == 3  # unchanged


def test_skipped_query_comes_back_after_the_pending_ones(demo_store):
    assert demo_store.next_query("ana") == "q01"
    demo_store.mark("q01", "skip", "ana")
    assert demo_store.next_query("ana") == "q02"
    for query_id in [f"q{n:02d}" for n in range(2, 51)]:
        demo_store.mark(query_id, "unanswerable", "ana")
    assert demo_store.next_query("ana") == "q01"
    demo_store.mark("q01", "unanswerable", "ana")
    assert demo_store.next_query("ana") is None


def test_next_query_after_the_current_one_wraps_around(demo_store):
    assert demo_store.next_query("ana", after="q01") == "q02"
    assert demo_store.next_query("ana", after="q50") == "q01"
    judge_down(demo_store, "q01", [1])
    assert demo_store.next_query("ana", after="q50") == "q02"


def test_undo_steps_back_any_number_of_times_across_queries(demo_store):
    first = judge_down(demo_store, "q01", [1])[0]
    judge_down(demo_store, "q02", [0])
    demo_store.mark("q02", "skip", "ana")
    assert demo_store.undo("ana")["action"] == "skip"
    undone = demo_store.undo("ana")
    assert (undone["query_id"], undone["action"], undone["grade"]) == ("q02", "judge", 0)
    assert demo_store.undo("ana")["doc_id"] == first
    assert demo_store.undo("ana") is None
    assert demo_store.query_state("q01", "ana")["status"] == "pending"
    assert demo_store.labels("q01", "ana") == {} and demo_store.labels("q02", "ana") == {}
    log = demo_store.events_frame()
    assert len(log) == 6 and log["undone"].sum() == 3


def test_undo_restores_the_previous_grade_of_a_doc(demo_store):
    doc_id = demo_store.candidates("q01")[0]["doc_id"]
    demo_store.judge("q01", doc_id, 0, "ana")
    demo_store.judge("q01", doc_id, 2, "ana")
    demo_store.undo("ana")
    assert demo_store.labels("q01", "ana") == {doc_id: 0}


def test_undo_is_per_annotator(demo_store):
    judge_down(demo_store, "q01", [1], annotator="ana")
    judge_down(demo_store, "q02", [0], annotator="bob")
    assert demo_store.undo("ana")["query_id"] == "q01"
    assert demo_store.labels("q02", "bob") != {}


def test_the_log_is_append_only(demo_store):
    judge_down(demo_store, "q01", [1])
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        demo_store.conn.execute("UPDATE events SET grade = 0")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        demo_store.conn.execute("DELETE FROM events")


def test_latest_note_counts(demo_store):
    demo_store.set_note("q04", "ana", "ambiguous: upload or download?")
    demo_store.set_note("q04", "ana", "means upload")
    assert demo_store.query_state("q04", "ana")["note"] == "means upload"
    assert demo_store.golden_records()[3]["notes"] == "means upload"


def test_resume_returns_the_unfinished_query_and_previous_goes_back(demo_store):
    judge_down(demo_store, "q01", [1])
    judge_down(demo_store, "q02", [0])
    assert demo_store.resume_query("ana") == "q02"
    assert demo_store.previous_query("ana", before="q02") == "q01"
    assert demo_store.previous_query("ana", before="q01") is None
    judge_down(demo_store, "q02", [0, 1])
    assert demo_store.resume_query("ana") == "q03"


def test_progress_counts_per_slice_for_the_golden_set_and_for_an_annotator(demo_store):
    judge_down(demo_store, "q01", [1])
    demo_store.mark("q02", "skip", "ana")
    judge_down(demo_store, "q04", [0], annotator="bob")
    golden = demo_store.progress()
    assert golden["head"] == {
        "total": 26,
        "done": 1,
        "unanswerable": 0,
        "skipped": 0,
        "in_progress": 1,
        "pending": 24,
    }
    assert golden["tail"]["skipped"] == 1
    mine = demo_store.progress("ana")
    assert mine["head"]["done"] == 1 and mine["head"]["in_progress"] == 0
    assert mine["tail"]["skipped"] == 1


def test_shared_queue_does_not_offer_a_query_someone_else_completed(demo_store):
    judge_down(demo_store, "q01", [1], annotator="ana")
    assert demo_store.next_query("bob") == "q02"


def test_assigned_annotator_gets_only_their_queries_blind_to_others(demo_store):
    assert demo_store.assign("bob", ["q10", "q01", "q10"]) == 2
    judge_down(demo_store, "q01", [1], annotator="ana")
    assert demo_store.assignments("bob") == ["q10", "q01"]
    assert demo_store.next_query("bob") == "q10"
    judge_down(demo_store, "q10", [1], annotator="bob")
    assert demo_store.next_query("bob") == "q01"
    assert demo_store.progress("bob")["head"]["total"] == 2


def test_projections_equal_a_rebuild_from_the_log(demo_store):
    judge_down(demo_store, "q01", [0, 1])
    judge_down(demo_store, "q03", [0] * 10)
    demo_store.mark("q03", "miss", "ana")
    demo_store.mark("q05", "skip", "bob")
    judge_down(demo_store, "q05", [2], annotator="cleo", mode="full")
    demo_store.undo("ana")
    demo_store.set_note("q07", "bob", "check")
    before = (demo_store.golden_records(), demo_store.progress(), demo_store.progress("ana"))
    demo_store.rebuild_projections()
    assert (
        demo_store.golden_records(),
        demo_store.progress(),
        demo_store.progress("ana"),
    ) == before


def test_reads_in_a_snapshot_do_not_see_writes_committed_meanwhile(demo_store):
    with Store(demo_store.path) as other_session:
        with demo_store.snapshot():
            before = demo_store.labels("q02", "ana")
            judge_down(other_session, "q02", [0], annotator="ana")
            assert demo_store.labels("q02", "ana") == before == {}
        assert len(demo_store.labels("q02", "ana")) == 1


def test_unanswerable_at_the_first_candidate_grades_the_unjudged_ones_0(demo_store):
    demo_store.mark("q46", "unanswerable", "ana", seconds=1.5)
    state = demo_store.query_state("q46", "ana")
    assert state["complete"] and not state["answerable"]
    assert set(demo_store.labels("q46", "ana").values()) == {0}
    assert len(demo_store.labels("q46", "ana")) == 10
    assert state["judged_depth"] == 0  # nothing judged one by one: no judging cost


def test_miss_after_two_judgements_keeps_them_and_grades_the_rest_0(demo_store):
    judged = judge_down(demo_store, "q03", [0, 0])
    demo_store.mark("q03", "miss", "ana")
    labels = demo_store.labels("q03", "ana")
    assert len(labels) == 10 and set(labels.values()) == {0}
    assert demo_store.query_state("q03", "ana")["judged_depth"] == len(judged)


def test_one_undo_takes_back_a_verdict_and_its_assertion(demo_store):
    judge_down(demo_store, "q46", [0])
    demo_store.mark("q46", "unanswerable", "ana")
    assert demo_store.undo("ana")["action"] == "unanswerable"
    assert len(demo_store.labels("q46", "ana")) == 1
    assert demo_store.query_state("q46", "ana")["status"] == "in_progress"


def test_judging_what_a_page_showed_is_refused_once_it_changed(demo_store):
    from goldset.labeler.store import StaleTarget

    first = demo_store.candidates("q02")[0]["doc_id"]
    demo_store.judge("q02", first, 0, "ana", expected_grade=None)
    with pytest.raises(StaleTarget, match="judged 0 meanwhile"):
        demo_store.judge("q02", first, 1, "ana", expected_grade=None)
    assert demo_store.labels("q02", "ana") == {first: 0}
    demo_store.judge("q02", first, 1, "ana", expected_grade=0)  # changed in place, knowingly
    assert demo_store.labels("q02", "ana") == {first: 1}


def test_undo_scoped_to_a_query_leaves_later_work_elsewhere(demo_store):
    judge_down(demo_store, "q01", [0])
    judge_down(demo_store, "q02", [1])
    undone = demo_store.undo("ana", query_id="q01")
    assert (undone["query_id"], undone["grade"]) == ("q01", 0)
    assert demo_store.labels("q01", "ana") == {} and len(demo_store.labels("q02", "ana")) == 1
    assert demo_store.undo("ana", query_id="q01") is None


def test_recent_queries_are_the_ones_acted_on_newest_first(demo_store):
    for query_id in ("q01", "q02", "q03"):
        judge_down(demo_store, query_id, [0])
    judge_down(demo_store, "q01", [0])
    assert demo_store.recent_queries("ana", limit=2) == ["q01", "q03"]


def test_a_protocol_change_is_logged_with_who_and_what(demo_store):
    demo_store.configure(mode="full", depth=5, max_grade=4, rel_threshold=2, by="rita")
    demo_store.configure(mode="full", by="rita")  # no change: nothing logged
    log = demo_store.protocol_log()
    assert len(log) == 1 and log[0]["changed_by"] == "rita" and log[0]["changed_at"]
    assert log[0]["changes"] == {"mode": "full", "max_grade": 4, "rel_threshold": 2, "depth": 5}
    assert log[0]["settings"] == demo_store.settings()


def test_depth_cuts_the_candidates_a_query_needs(demo_store):
    demo_store.configure(mode="full", depth=3)
    judge_down(demo_store, "q01", [0, 0, 0], mode="full")
    assert demo_store.next_candidate("q01", "ana", mode="full") is None
    assert demo_store.query_state("q01", "ana")["needs_verdict"]
