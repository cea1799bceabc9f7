"""Adjudication: the queue of disagreements ordered by their effect on MRR@10, a reviewer's
decision becoming the golden label, and an export that keeps every label beside it."""

import json
import sqlite3

import pytest
from click.testing import CliRunner
from helpers.team import PLANTED_QUEUE

from goldset.labeler.cli import cli
from goldset.labeler.team import adjudication_queue, adopt


def record(store, query_id):
    return next(r for r in store.golden_records() if r["query_id"] == query_id)


def test_queue_holds_the_planted_disagreements_most_consequential_first(planted_store):
    queue = adjudication_queue(planted_store)
    assert [item["query_id"] for item in queue] == PLANTED_QUEUE
    assert [item["rr_gap"] for item in queue] == [0.75, 0.5, 0.0]
    assert [item["kinds"] for item in queue] == [
        ["first_relevant_rank", "grades"],
        ["first_relevant_rank", "grades"],
        ["answerable"],
    ]
    # Six answerable done queries are scored (bob's miss on q3 came last): the mean can
    # move by gap / 6.
    assert queue[0]["mrr_effect"] == pytest.approx(0.75 / 6)


def test_queue_entries_show_each_annotators_label(planted_store):
    q5 = adjudication_queue(planted_store)[0]
    assert q5["labels"]["ana"]["first_relevant_rank"] == 4
    assert q5["labels"]["bob"]["judgments"] == {"q5-d1": 1}
    q3 = adjudication_queue(planted_store)[2]
    assert (q3["labels"]["ana"]["answerable"], q3["labels"]["bob"]["answerable"]) == (False, True)


def test_a_decision_becomes_the_golden_label_and_leaves_the_queue(planted_store):
    # Until someone decides, each doc's latest label wins: bob's d1 = 1, so rank 1.
    assert record(planted_store, "q5")["first_relevant_rank"] == 1
    adopt(planted_store, "q5", "rita", "ana", note="d1 is about something else")
    after = record(planted_store, "q5")
    ana = {"q5-d1": 0, "q5-d2": 0, "q5-d3": 0, "q5-d4": 1}
    assert (after["judgments"], after["first_relevant_rank"], after["judged_depth"]) == (ana, 4, 4)
    assert planted_store.labels("q5") == ana
    assert planted_store.query_state("q5")["first_relevant_rank"] == 4
    assert [item["query_id"] for item in adjudication_queue(planted_store)] == ["q2", "q3"]
    decided = adjudication_queue(planted_store, include_decided=True)[0]
    assert decided["decision"].reviewer == "rita" and decided["decision"].adopted == "ana"


def test_the_export_keeps_every_label_and_the_decision_beside_the_final_one(planted_store):
    adopt(planted_store, "q3", "rita", "bob")
    exported = record(planted_store, "q3")
    assert exported["answerable"] is True and exported["status"] == "done"
    assert exported["labels"]["ana"]["answerable"] is False
    assert exported["labels"]["bob"]["answerable"] is True
    assert exported["labels"]["ana"]["judgments"] == {f"q3-d{r}": 0 for r in range(1, 5)}
    adjudication = exported["adjudication"]
    assert (adjudication["reviewer"], adjudication["adopted"], adjudication["answerable"]) == (
        "rita",
        "bob",
        True,
    )
    assert adjudication["decided_at"].endswith("Z")


def test_undecided_disagreements_keep_both_labels_and_agreements_stay_plain(planted_store):
    records = {r["query_id"]: r for r in planted_store.golden_records()}
    assert set(records["q2"]["labels"]) == {"ana", "bob"} and "adjudication" not in records["q2"]
    assert "labels" not in records["q1"]  # both gave the same label: it is the final one
    assert records["q1"]["annotators"] == ["ana", "bob"]


def test_a_reviewer_can_set_grades_and_the_latest_decision_counts(planted_store):
    planted_store.adjudicate("q2", "rita", {"q2-d1": 0, "q2-d2": 1}, True, note="d1 is off topic")
    planted_store.adjudicate("q2", "alan", {"q2-d1": 1}, True)
    assert record(planted_store, "q2")["judgments"] == {"q2-d1": 1}
    assert record(planted_store, "q2")["adjudication"]["reviewer"] == "alan"
    assert planted_store.decision("q2").adopted is None


def test_an_unanswerable_decision_takes_the_query_out_of_the_scored_set(planted_store):
    before = planted_store.progress()["head"]["unanswerable"]
    planted_store.adjudicate("q2", "rita", {}, False)
    assert record(planted_store, "q2")["answerable"] is False
    assert planted_store.progress()["head"]["unanswerable"] == before + 1


def test_decisions_are_an_append_only_log(planted_store):
    adopt(planted_store, "q5", "rita", "bob")
    adopt(planted_store, "q5", "rita", "ana")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        planted_store.conn.execute("UPDATE adjudications SET reviewer = 'ana'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        planted_store.conn.execute("DELETE FROM adjudications")
    assert planted_store.decision("q5").adopted == "ana"


def test_rebuilt_projections_keep_the_decision(planted_store):
    adopt(planted_store, "q5", "rita", "bob")
    exported = planted_store.golden_records()
    planted_store.rebuild_projections()
    assert planted_store.golden_records() == exported


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: adopt(s, "q5", "ana", "bob"), "not a reviewer or admin"),
        (lambda s: adopt(s, "q5", "rita", "cy"), "has not completed"),
        (lambda s: s.adjudicate("q5", "rita", {"q5-d1": 7}, True), "grade must be"),
        (lambda s: s.adjudicate("q5", "rita", {"nope": 1}, True), "unknown document"),
        (lambda s: s.adjudicate("q5", "rita", {}, "yes"), "answerable must be"),
        (lambda s: s.adjudicate("q9", "rita", {}, True), "unknown query"),
    ],
)
def test_invalid_decisions_are_refused_and_change_nothing(planted_store, call, message):
    with pytest.raises(ValueError, match=message):
        call(planted_store)
    assert planted_store.decisions() == {}


def test_the_decision_is_what_eval_scores(planted_store):
    golden_before = CliRunner().invoke(
        cli, ["eval", "--db", str(planted_store.path), "--json", "--bootstrap", "0", "-m", "mrr@10"]
    )
    adopt(planted_store, "q5", "rita", "ana")
    golden_after = CliRunner().invoke(
        cli, ["eval", "--db", str(planted_store.path), "--json", "--bootstrap", "0", "-m", "mrr@10"]
    )
    before = json.loads(golden_before.output)["metrics"]["mrr@10"]["mean"]
    after = json.loads(golden_after.output)["metrics"]["mrr@10"]["mean"]
    assert after - before == pytest.approx(-0.75 / 6)  # the effect the queue announced


def test_cli_adjudicate_lists_the_queue_and_records_a_decision(planted_store):
    db = str(planted_store.path)
    listing = CliRunner().invoke(cli, ["adjudicate", "--db", db])
    assert listing.exit_code == 0, listing.output
    assert [line.split()[0] for line in listing.output.splitlines()[1:]] == PLANTED_QUEUE
    assert "(ana 4, bob 1)" in listing.output and "(ana U, bob none)" in listing.output
    decided = CliRunner().invoke(
        cli, ["adjudicate", "q5", "--accept", "bob", "--reviewer", "rita", "--db", db]
    )
    assert decided.exit_code == 0 and "rita decided for bob's label" in decided.output
    queue = json.loads(CliRunner().invoke(cli, ["adjudicate", "--db", db, "--json"]).output)
    assert [item["query_id"] for item in queue] == ["q2", "q3"]
    refused = CliRunner().invoke(
        cli, ["adjudicate", "q2", "--accept", "bob", "--reviewer", "ana", "--db", db]
    )
    assert refused.exit_code == 2 and "not a reviewer" in refused.output
    incomplete = CliRunner().invoke(cli, ["adjudicate", "q2", "--db", db])
    assert incomplete.exit_code == 2 and "--accept" in incomplete.output
