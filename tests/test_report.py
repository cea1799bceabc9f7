"""Reports (eval/report.py): what ``goldset eval`` and ``goldset compare`` print, built on small
hand-made golden sets and runs. A report never gives a mean alone."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from goldset.eval.changes import changed_queries
from goldset.eval.compare import compare_runs
from goldset.eval.metrics import rank_run
from goldset.eval.readers import InputError, golden_from_records, read_run, run_from_frame
from goldset.eval.report import NO_SLICE, NOT_MEASURED, build_report


def labels(*queries: dict):
    """A golden set; each query is done and answerable unless its record says otherwise."""
    return golden_from_records(
        [{"status": "done", "answerable": True, "judgments": {}, **query} for query in queries]
    )


def needs_hit(query_id: str, **record) -> dict:
    """A golden query whose one relevant doc is "hit" (see :func:`system`)."""
    return {"query_id": query_id, "judgments": {"hit": 1}, **record}


def system(first_relevant: dict[str, int | None], name: str = "system"):
    """A run listing ten docs per query with falling scores, the doc "hit" at the given rank
    (None: not retrieved at all)."""
    rows = [
        (query_id, "hit" if position == rank else f"other{position}", float(11 - position))
        for query_id, rank in first_relevant.items()
        for position in range(1, 11)
    ]
    return run_from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), name)


def scored(rows: list[tuple[str, str, float]], name: str = "scored"):
    """A run from explicit (query_id, doc_id, score) rows."""
    return run_from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), name)


def means(report: dict) -> dict[str, float]:
    return {spec: entry["mean"] for spec, entry in report["metrics"].items()}


# --- query accounting ----------------------------------------------------------------------------


def test_query_accounting_counts_every_kind_of_query():
    golden = labels(
        needs_hit("found"),
        needs_hit("absent"),
        {"query_id": "no-answer", "answerable": False},
        {"query_id": "hard", "status": "skipped", "judgments": {"hit": 1}},
        {"query_id": "later", "status": "pending"},
    )
    run = system({"found": 1, "no-answer": 2, "hard": 1, "later": 1, "extra1": 1, "extra2": 3})
    assert build_report(golden, run, bootstrap=0)["queries"] == {
        "answerable": 2,
        "unanswerable": 1,
        "skipped": 1,
        "pending": 1,
        "missing_from_run": 1,
        "unlabelled_in_run": 2,
        "ties_at_cutoff": 0,
    }


def test_jsonl_run_listing_a_query_twice_is_rejected_naming_the_second_line(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"query_id": "q1", "results": [{"doc_id": "hit", "score": 1}]}\n'
        '{"query_id": "stray", "results": [{"doc_id": "a", "score": 2}]}\n'
        '{"query_id": "stray", "results": [{"doc_id": "b", "score": 1}]}\n'
    )
    with pytest.raises(InputError, match=r"run.jsonl:3: field 'query_id'"):
        read_run(path)


def tied_run(tied_ranks: tuple[int, int]):
    """Twelve docs for one query, scores falling except at ``tied_ranks``, which share one."""
    scores = [100.0 - rank for rank in range(1, 13)]
    scores[tied_ranks[1] - 1] = scores[tied_ranks[0] - 1]
    return scored([("q1", f"doc{rank:02d}", score) for rank, score in enumerate(scores, 1)])


def test_score_tie_straddling_rank_ten_is_counted():
    report = build_report(labels(needs_hit("q1")), tied_run((10, 11)), bootstrap=0)
    assert report["queries"]["ties_at_cutoff"] == 1


@pytest.mark.parametrize("tied_ranks", [(9, 10), (11, 12)], ids=["inside top 10", "below it"])
def test_score_tie_not_straddling_a_cutoff_is_not_counted(tied_ranks):
    report = build_report(labels(needs_hit("q1")), tied_run(tied_ranks), bootstrap=0)
    assert report["queries"]["ties_at_cutoff"] == 0


# --- which queries are averaged ----------------------------------------------------------------


def test_means_exclude_unanswerable_and_skipped_queries():
    golden = labels(
        needs_hit("first"),
        needs_hit("second"),
        {"query_id": "no-answer", "answerable": False, "judgments": {"hit": 1}},
        {"query_id": "hard", "status": "skipped", "judgments": {"hit": 1}},
    )
    run = system({"first": 1, "second": 2, "no-answer": 5, "hard": None})
    report = build_report(golden, run, bootstrap=0)
    assert list(report["per_query"].index) == ["first", "second"]
    assert means(report)["mrr@10"] == 0.75
    assert means(report)["miss@10"] == 0.0


def test_query_missing_from_the_run_scores_zero_and_is_counted():
    golden = labels(needs_hit("answered"), needs_hit("forgotten"))
    report = build_report(golden, system({"answered": 1}), bootstrap=0)
    assert report["queries"]["missing_from_run"] == 1
    assert report["per_query"].loc["forgotten"].to_dict() == {
        "mrr@10": 0.0,
        "hit@1": 0.0,
        "hit@10": 0.0,
        "miss@10": 1.0,
        "recall@10": 0.0,
        "precision@10": 0.0,
        "ndcg@10": 0.0,
        "judged@10": 0.0,
    }
    assert means(report)["mrr@10"] == 0.5
    assert means(report)["miss@10"] == 0.5


# --- slices ---------------------------------------------------------------------------------


def test_slices_break_the_metrics_down_per_golden_slice():
    golden = labels(
        needs_hit("h1", slice="head"),
        needs_hit("h2", slice="head"),
        needs_hit("t1", slice="tail"),
    )
    report = build_report(golden, system({"h1": 1, "h2": 2, "t1": None}), bootstrap=0)
    assert list(report["slices"]) == ["head", "tail"]
    assert report["slices"]["head"]["queries"] == 2
    assert report["slices"]["head"]["metrics"]["mrr@10"] == {"mean": 0.75, "ci95": None}
    assert report["slices"]["tail"]["queries"] == 1
    assert report["slices"]["tail"]["metrics"]["miss@10"] == {"mean": 1.0, "ci95": None}


def test_query_without_a_slice_among_sliced_ones_is_reported_under_none():
    golden = labels(needs_hit("h1", slice="head"), needs_hit("loose"))
    report = build_report(golden, system({"h1": 1, "loose": 3}), bootstrap=0)
    assert NO_SLICE == "(none)"
    assert sorted(report["slices"]) == ["(none)", "head"]
    assert report["slices"]["(none)"]["queries"] == 1
    assert report["slices"]["(none)"]["metrics"]["mrr@10"]["mean"] == pytest.approx(1 / 3)


def test_no_slices_when_no_query_has_one():
    report = build_report(labels(needs_hit("q1")), system({"q1": 1}), bootstrap=0)
    assert report["slices"] == {}


# --- worst queries --------------------------------------------------------------------------------


def test_worst_queries_list_misses_first_then_lowest_rr_then_query_id():
    first_relevant = {"top": 1, "b-second": 2, "third": 3, "a-second": 2, "m2": None, "m1": None}
    golden = labels(*(needs_hit(query_id) for query_id in first_relevant))
    worst = build_report(golden, system(first_relevant), bootstrap=0)["worst"]
    assert [entry["query_id"] for entry in worst] == [
        "m1",
        "m2",
        "third",
        "a-second",
        "b-second",
        "top",
    ]
    assert [entry["first_relevant_rank"] for entry in worst] == [None, None, 3, 2, 2, 1]
    assert worst[2]["mrr@10"] == pytest.approx(1 / 3)


def test_worst_keeps_only_the_requested_number_of_queries():
    golden = labels(needs_hit("q1"), needs_hit("q2"), needs_hit("q3"))
    report = build_report(golden, system({"q1": 1, "q2": None, "q3": 2}), bootstrap=0, worst=2)
    assert [entry["query_id"] for entry in report["worst"]] == ["q2", "q3"]


# --- abstention ---------------------------------------------------------------------------------


def test_empty_jsonl_result_on_an_unanswerable_query_is_a_correct_abstention(tmp_path):
    golden = labels(
        needs_hit("q1"),
        {"query_id": "silent", "answerable": False},
        {"query_id": "chatty", "answerable": False},
    )
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"query_id": "q1", "results": [{"doc_id": "hit", "score": 3}]}\n'
        '{"query_id": "silent", "results": []}\n'
        '{"query_id": "chatty", "results": [{"doc_id": "guess", "score": 1}]}\n'
    )
    abstention = build_report(golden, read_run(path), bootstrap=0)["abstention"]
    assert abstention["unanswerable_queries"] == 2
    assert abstention["correct_abstentions"] == 1
    assert abstention["correct_abstention_rate"] == 0.5
    assert abstention["wrong_abstentions"] == 0
    assert abstention["wrong_abstention_rate"] == 0.0


def test_abstain_below_makes_low_scoring_answerable_queries_wrong_abstentions_scoring_zero():
    golden = labels(
        needs_hit("confident"),
        needs_hit("unsure"),
        {"query_id": "no-answer", "answerable": False},
    )
    run = scored([("confident", "hit", 0.9), ("unsure", "hit", 0.2), ("no-answer", "x", 0.1)])
    report = build_report(golden, run, bootstrap=0, abstain_below=0.5)
    assert report["abstention"]["abstain_below"] == 0.5
    assert report["abstention"]["wrong_abstentions"] == 1
    assert report["abstention"]["wrong_abstention_rate"] == 0.5
    assert report["abstention"]["correct_abstentions"] == 1
    assert report["per_query"].loc["unsure", "mrr@10"] == 0.0
    assert means(report)["mrr@10"] == 0.5
    without = build_report(golden, run, bootstrap=0)
    assert without["abstention"]["wrong_abstentions"] == 0
    assert means(without)["mrr@10"] == 1.0


# --- notes ----------------------------------------------------------------------------------------


def test_first_hit_note_calls_only_precision_a_lower_bound():
    golden = labels(needs_hit("q1", mode="first_hit"), needs_hit("q2", mode="full"))
    notes = build_report(golden, system({"q1": 1, "q2": 2}), bootstrap=0)["notes"]
    assert len(notes) == 1
    assert notes[0].startswith("1 of the 2 queries were labelled in first-hit mode")
    assert "precision@k is a lower bound" in notes[0]
    assert "recall@k and nDCG@k are not measured on first-hit labels" in notes[0]
    assert "lower bounds" not in notes[0]


def test_full_mode_labels_bring_no_note():
    golden = labels(needs_hit("q1", mode="full"), needs_hit("q2", mode="full"))
    assert build_report(golden, system({"q1": 1, "q2": 2}), bootstrap=0)["notes"] == []


# --- what first-hit labels can and cannot measure -------------------------------------------------


def mixed_modes() -> tuple:
    """Two first-hit queries (one relevant doc known) and two full-mode ones."""
    golden = labels(
        needs_hit("fh1", mode="first_hit", slice="tail"),
        needs_hit("fh2", mode="first_hit", slice="tail"),
        {"query_id": "full1", "mode": "full", "slice": "head", "judgments": {"hit": 1, "x": 1}},
        {"query_id": "full2", "mode": "full", "slice": "head", "judgments": {"hit": 1, "x": 1}},
    )
    return golden, system({"fh1": 1, "fh2": 2, "full1": 1, "full2": 3})


def test_recall_and_ndcg_are_over_full_mode_queries_only_with_their_count():
    golden, run = mixed_modes()
    report = build_report(golden, run, bootstrap=100)
    recall = report["metrics"]["recall@10"]
    assert (recall["mean"], recall["queries"]) == (0.5, 2)  # "x" is never retrieved
    low, high = recall["ci95"]  # two queries at 0.5: the score CI is wide, not [0.5, 0.5]
    assert 0 < low < 0.5 < high < 1
    assert report["metrics"]["ndcg@10"]["queries"] == 2
    assert "queries" not in report["metrics"]["mrr@10"]
    assert report["metrics"]["mrr@10"]["mean"] == pytest.approx((1 + 1 / 2 + 1 + 1 / 3) / 4)


def test_precision_over_first_hit_queries_is_marked_a_lower_bound():
    golden, run = mixed_modes()
    report = build_report(golden, run, bootstrap=0)
    assert report["metrics"]["precision@10"]["bound"] == "lower"
    assert report["slices"]["tail"]["metrics"]["precision@10"]["bound"] == "lower"
    assert "bound" not in report["slices"]["head"]["metrics"]["precision@10"]
    assert "bound" not in report["metrics"]["mrr@10"]


def test_a_slice_of_first_hit_queries_only_has_recall_and_ndcg_not_measured():
    golden, run = mixed_modes()
    tail = build_report(golden, run, bootstrap=100)["slices"]["tail"]["metrics"]
    not_measured = {"mean": None, "ci95": None, "queries": 0, "reason": NOT_MEASURED}
    assert tail["recall@10"] == tail["ndcg@10"] == not_measured
    assert tail["mrr@10"]["mean"] == 0.75


def test_first_hit_per_query_values_of_recall_and_ndcg_are_missing():
    golden, run = mixed_modes()
    per_query = build_report(golden, run, bootstrap=0)["per_query"]
    assert per_query.loc[["fh1", "fh2"], ["recall@10", "ndcg@10"]].isna().all(axis=None)
    assert per_query.loc[["full1", "full2"], "recall@10"].tolist() == [0.5, 0.5]


def test_qrels_without_labelling_modes_are_scored_as_before():
    golden = labels(needs_hit("q1"), {"query_id": "q2", "judgments": {"hit": 1, "other1": 0}})
    report = build_report(golden, system({"q1": 1, "q2": None}), bootstrap=50)
    for spec, entry in report["metrics"].items():
        assert set(entry) == {"mean", "ci95"}, spec
    assert report["metrics"]["recall@10"]["mean"] == 0.5


def test_judged_against_relevant_only_labels_says_what_it_means():
    golden = labels(needs_hit("q1"), needs_hit("q2"))  # like a BEIR qrels.tsv: relevant only
    report = build_report(golden, system({"q1": 1, "q2": 2}), bootstrap=0)
    judged = report["metrics"]["judged@10"]
    assert judged["judged_relevant_only"] is True
    assert judged["mean"] == pytest.approx(0.1)
    assert any("lists only relevant documents" in note for note in report["notes"])


def test_judged_with_non_relevant_judgements_is_plain_coverage():
    golden = labels({"query_id": "q1", "judgments": {"hit": 1, "other2": 0}})
    report = build_report(golden, system({"q1": 1}), bootstrap=0)
    assert "judged_relevant_only" not in report["metrics"]["judged@10"]
    assert report["notes"] == []


def test_exponential_gain_is_labelled_in_the_notes():
    golden = labels(needs_hit("q1"))
    report = build_report(golden, system({"q1": 2}), bootstrap=0, gain="exp")
    assert any("2^grade" in note for note in report["notes"])


# --- bootstrap confidence intervals ------------------------------------------------------------

VARIED = {f"q{i:02d}": (i % 5) + 1 if i % 7 else None for i in range(30)}


def varied_report(**options) -> dict:
    golden = labels(*(needs_hit(query_id) for query_id in VARIED))
    report = build_report(golden, system(VARIED), **options)
    report.pop("per_query")
    return report


def test_bootstrap_with_the_same_seed_gives_identical_reports():
    assert json.dumps(varied_report(seed=7)) == json.dumps(varied_report(seed=7))


def test_score_intervals_do_not_depend_on_the_seed():
    seven, eight = varied_report(seed=7), varied_report(seed=8)
    assert means(seven) == means(eight)
    assert seven["metrics"]["mrr@10"]["ci95"] == eight["metrics"]["mrr@10"]["ci95"]


def test_bootstrap_zero_gives_no_intervals():
    report = varied_report(bootstrap=0)
    assert all(entry["ci95"] is None for entry in report["metrics"].values())


def test_bootstrap_interval_contains_the_mean():
    for spec, entry in varied_report(bootstrap=500)["metrics"].items():
        low, high = entry["ci95"]
        assert low <= entry["mean"] <= high, spec


# --- comparing two runs ---------------------------------------------------------------------------

HEAD = [f"h{i:02d}" for i in range(50)]
TAIL = [f"t{i:02d}" for i in range(50)]
SLICED = labels(
    *(needs_hit(q, slice="head") for q in HEAD), *(needs_hit(q, slice="tail") for q in TAIL)
)
# Baseline: half the queries find "hit" at rank 1, half at rank 2; MRR@10 0.75, no misses.
BASELINE = {query_id: 1 + position % 2 for position, query_id in enumerate(HEAD + TAIL)}


def compared(candidate_ranks: dict[str, int | None], **options) -> dict:
    baseline = system(BASELINE, name="baseline")
    candidate = system({**BASELINE, **candidate_ranks}, name="candidate")
    return compare_runs(SLICED, baseline, candidate, bootstrap=200, seed=3, **options)


def test_compare_deltas_are_candidate_minus_baseline_means():
    result = compared({query_id: 1 for query_id in HEAD[:20]})
    baseline = means(build_report(SLICED, system(BASELINE), bootstrap=0))
    for spec, entry in result["metrics"].items():
        assert entry["baseline"] == pytest.approx(baseline[spec]), spec
        assert entry["delta"] == pytest.approx(entry["candidate"] - entry["baseline"]), spec
    assert result["metrics"]["mrr@10"]["delta"] == pytest.approx(0.05)


def test_compare_gives_deltas_per_slice():
    result = compared({query_id: 1 for query_id in HEAD[:20]})
    assert sorted(result["slices"]) == ["head", "tail"]
    assert result["slices"]["head"]["queries"] == 50
    assert result["slices"]["head"]["metrics"]["mrr@10"]["delta"] == pytest.approx(0.1)
    assert result["slices"]["tail"]["metrics"]["mrr@10"]["delta"] == 0.0


def test_gate_on_means_fails_when_the_candidate_misses_more_than_one_point_more():
    candidate = system({**BASELINE, "h00": None, "t00": None}, name="candidate")
    result = compare_runs(
        SLICED, system(BASELINE), candidate, bootstrap=0, thresholds={"max_mrr_drop": 1.0}
    )
    assert result["metrics"]["miss@10"]["delta"] == pytest.approx(0.02)
    assert result["gate"]["verdict"] == "fail" and result["gate"]["passed"] is False
    assert result["gate"]["reasons"] == [
        "miss@10 rose by 2.00 points (0.00% → 2.00%), more than the allowed 1.00: "
        "2 new misses (head 1, tail 1)"
    ]


def test_gate_cannot_tell_two_new_misses_in_a_hundred_from_noise_and_names_them():
    result = compared({"h00": None, "t00": None}, thresholds={"max_mrr_drop": 1.0})
    assert result["gate"]["verdict"] == "inconclusive"
    miss = next(rule for rule in result["gate"]["rules"] if rule["name"] == "miss@10")
    assert miss["status"] == "undecided" and miss["ci"][0] <= 1.0 < miss["ci"][1]
    assert miss["more_queries"] > 0
    assert miss["reason"].startswith("miss@10 rose by 2.00 points (0.00% → 2.00%, ")
    assert miss["reason"].endswith("would decide it: 2 new misses (head 1, tail 1)")


def test_gate_fails_when_one_slice_drops_by_more_than_five_hundredths():
    # Head gets better and tail worse by the same amount: the overall MRR@10 does not move.
    result = compared({**{q: 1 for q in HEAD}, **{q: 2 for q in TAIL}})
    assert result["metrics"]["mrr@10"]["delta"] == pytest.approx(0.0)
    assert result["gate"]["verdict"] == "fail"
    violated = [rule for rule in result["gate"]["rules"] if rule["status"] == "violated"]
    assert [rule["name"] for rule in violated] == ["slice tail: mrr@10"]
    assert violated[0]["reason"].startswith("slice 'tail': MRR@10 fell by 0.2500")


def test_gate_passes_an_identical_run_with_p_values_of_one():
    result = compared({})
    gate = result["gate"]
    assert (gate["verdict"], gate["passed"], gate["reasons"], gate["warnings"]) == (
        "pass",
        True,
        [],
        [],
    )
    assert {rule["status"] for rule in gate["rules"]} == {"kept"}
    for spec, entry in result["metrics"].items():
        assert entry["delta"] == 0.0, spec
        low, high = entry["ci95"]  # no query moved: a change this small could hide
        assert low == -high < 0, spec
        assert entry["p_value"] == 1.0, spec
        assert entry["p_randomization"] == 1.0, spec


def test_gate_warns_when_mrr_rises_while_misses_rise():
    everyone_first = {query_id: 1 for query_id in BASELINE}
    result = compared({**everyone_first, "h00": None, "t00": None})
    assert result["metrics"]["mrr@10"]["delta"] > 0
    assert result["gate"]["passed"] is False
    assert len(result["gate"]["warnings"]) == 1
    assert result["gate"]["warnings"][0].startswith("MRR@10 went up")


def test_compare_gives_no_delta_for_a_figure_not_measured_and_the_gate_ignores_it():
    golden, run = mixed_modes()
    worse = system({"fh1": 1, "fh2": 2, "full1": None, "full2": None}, name="worse")
    result = compare_runs(golden, run, worse, bootstrap=50, thresholds={"max_miss_rise": 100.0})
    tail_recall = result["slices"]["tail"]["metrics"]["recall@10"]
    assert tail_recall["delta"] is None and tail_recall["reason"] == NOT_MEASURED
    assert result["metrics"]["recall@10"]["queries"] == 2
    assert result["metrics"]["recall@10"]["delta"] == -0.5
    assert result["metrics"]["precision@10"]["bound"] == "lower"
    assert not any("recall" in reason for reason in result["gate"]["reasons"])


# --- which queries changed ------------------------------------------------------------------------


def test_changed_queries_sort_each_list_by_the_largest_change_first():
    ranks_before = {"a": 1, "b": 5, "c": 2, "d": None, "e": None, "f": 2, "g": 9, "h": 1, "i": 4}
    ranks_after = {"a": None, "b": None, "c": None, "d": 3, "e": 1, "f": 3, "g": 10, "h": 1, "i": 1}
    golden = labels(*(needs_hit(q) for q in ranks_before))
    changed = changed_queries(
        golden,
        rank_run(golden, system(ranks_before), ["mrr@10"]),
        rank_run(golden, system(ranks_after), ["mrr@10"]),
    )
    as_ranks = {
        name: [(i["query_id"], i["baseline_rank"], i["candidate_rank"]) for i in items]
        for name, items in changed.items()
    }
    assert as_ranks == {
        "new_misses": [("a", 1, None), ("c", 2, None), ("b", 5, None)],
        "new_hits": [("e", None, 1), ("d", None, 3)],
        "worse": [("f", 2, 3), ("g", 9, 10)],
        "better": [("i", 4, 1)],
    }


def test_changed_queries_break_ties_by_query_id_with_numbers_compared_as_numbers():
    ids = ["q10", "q9", "q100", "q1"]
    golden = labels(*(needs_hit(q) for q in ids))
    changed = changed_queries(
        golden,
        rank_run(golden, system(dict.fromkeys(ids, 1)), ["mrr@10"]),
        rank_run(golden, system(dict.fromkeys(ids)), ["mrr@10"]),
    )
    assert [item["query_id"] for item in changed["new_misses"]] == ["q1", "q9", "q10", "q100"]


def test_the_seeds_incident_mrr_rises_while_the_tail_newly_misses():
    """MRR rose after retraining, yet escalations went up: the tail fell out of the top 10."""
    head = [f"head{i}" for i in range(80)]
    tail = [f"tail{i}" for i in range(20)]
    golden = labels(
        *(needs_hit(q, slice="head") for q in head), *(needs_hit(q, slice="tail") for q in tail)
    )
    baseline = system({**dict.fromkeys(head, 3), **dict.fromkeys(tail, 2)}, name="old")
    lost = {"tail3", "tail7", "tail11", "tail12", "tail19"}
    retrained = {**dict.fromkeys(head, 1), **{q: None if q in lost else 1 for q in tail}}
    result = compare_runs(golden, baseline, system(retrained, name="new"), bootstrap=0)

    assert result["metrics"]["mrr@10"]["delta"] > 0
    assert result["metrics"]["miss@10"]["delta"] == pytest.approx(0.05)
    new_misses = result["changed_queries"]["new_misses"]
    assert {item["query_id"] for item in new_misses} == lost
    assert {
        (item["slice"], item["baseline_rank"], item["candidate_rank"]) for item in new_misses
    } == {("tail", 2, None)}
    assert [item["query_id"] for item in new_misses] == sorted(lost, key=lambda q: int(q[4:]))
    assert result["gate"]["passed"] is False
    assert result["gate"]["reasons"] == [
        "miss@10 rose by 5.00 points (0.00% → 5.00%), more than the allowed 1.00: "
        "5 new misses (tail 5)"
    ]
    assert result["gate"]["warnings"][0].startswith("MRR@10 went up")
