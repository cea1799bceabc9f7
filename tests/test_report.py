"""Reports (eval/report.py): what ``goldset eval`` and ``goldset compare`` print, built on small
hand-made golden sets and runs. A report never gives a mean alone."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from eval.readers import InputError, golden_from_records, read_run, run_from_frame
from eval.report import FIRST_HIT_NOTE, NO_SLICE, build_report, compare_runs


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


def test_first_hit_labels_bring_a_note_that_recall_precision_ndcg_are_lower_bounds():
    first_hit = labels(needs_hit("q1", mode="first_hit"), needs_hit("q2", mode="full"))
    full = labels(needs_hit("q1", mode="full"), needs_hit("q2", mode="full"))
    run = system({"q1": 1, "q2": 2})
    assert FIRST_HIT_NOTE in build_report(first_hit, run, bootstrap=0)["notes"]
    assert "lower bounds" in FIRST_HIT_NOTE
    assert build_report(full, run, bootstrap=0)["notes"] == []


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


def test_bootstrap_with_another_seed_may_give_other_intervals():
    seven, eight = varied_report(seed=7), varied_report(seed=8)
    assert means(seven) == means(eight)
    assert seven["metrics"]["mrr@10"]["ci95"] != eight["metrics"]["mrr@10"]["ci95"]


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


def test_gate_fails_when_the_candidate_misses_more_than_one_point_more():
    result = compared({"h00": None, "t00": None}, thresholds={"max_mrr_drop": 1.0})
    assert result["metrics"]["miss@10"]["delta"] == pytest.approx(0.02)
    assert result["gate"]["passed"] is False
    assert result["gate"]["reasons"] == [
        "miss@10 rose by 2.00 points (0.00% → 2.00%), more than the allowed 1.00"
    ]


def test_gate_fails_when_one_slice_drops_by_more_than_five_hundredths():
    # Head gets better and tail worse by the same amount: the overall MRR@10 does not move.
    result = compared({**{q: 1 for q in HEAD}, **{q: 2 for q in TAIL}})
    assert result["metrics"]["mrr@10"]["delta"] == pytest.approx(0.0)
    assert result["gate"]["passed"] is False
    assert len(result["gate"]["reasons"]) == 1
    assert result["gate"]["reasons"][0].startswith("slice 'tail': MRR@10 fell by 0.2500")


def test_gate_passes_an_identical_run_with_p_values_of_one():
    result = compared({})
    assert result["gate"] == {"passed": True, "reasons": [], "warnings": []}
    for spec, entry in result["metrics"].items():
        assert entry["delta"] == 0.0, spec
        assert entry["ci95"] == [0.0, 0.0], spec
        assert entry["p_value"] == 1.0, spec
        assert entry["p_randomization"] == 1.0, spec


def test_gate_warns_when_mrr_rises_while_misses_rise():
    everyone_first = {query_id: 1 for query_id in BASELINE}
    result = compared({**everyone_first, "h00": None, "t00": None})
    assert result["metrics"]["mrr@10"]["delta"] > 0
    assert result["gate"]["passed"] is False
    assert len(result["gate"]["warnings"]) == 1
    assert result["gate"]["warnings"][0].startswith("MRR@10 went up")
