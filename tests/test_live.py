"""Live figures (labeler.live): the store turned into eval inputs, and the dashboard's,
cost planner's and run comparison's figures computed by eval from them.

The app tests import two helpers from here, ``open_page`` and ``table_with``; most run on
the labelled demo (``labelled_demo`` in tests/helpers/projects.py, served by conftest).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from helpers.projects import label
from streamlit.testing.v1 import AppTest
from test_pool_cranfield import label_pool, run_at_depth

from goldset.eval import cost
from goldset.eval.readers import Golden, golden_from_records, read_golden, run_from_frame
from goldset.eval.report import build_report
from goldset.labeler import live
from goldset.labeler.store import Store


def open_page(script: str, user: str | None = None) -> AppTest:
    """A browser session on a page, signed in as ``user`` when the project has users."""
    at = AppTest.from_file(script, default_timeout=60)
    if user:
        at.session_state["annotator"] = user
    return at.run()


def table_with(at: AppTest, column: str) -> pd.DataFrame:
    """The page's dataframe that has ``column``."""
    return next(frame.value for frame in at.dataframe if column in frame.value.columns)


@pytest.fixture
def demo(labelled_demo_db) -> Iterator[Store]:
    """The labelled demo project, open."""
    with Store(labelled_demo_db) as store:
        yield store


@pytest.fixture(scope="module")
def cranfield(tmp_path_factory, cranfield_dir):
    """The Cranfield pool (bm25 and tfidf-title, depth 10) labelled in first-hit mode by a
    simulated annotator answering from the qrels; and the qrels as pytrec_eval takes them."""
    judgments = read_golden(cranfield_dir / "qrels.tsv").judgments
    qrels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, grade in judgments.itertuples(index=False):
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    path = tmp_path_factory.mktemp("cranfield") / "first_hit.db"
    label_pool(path, cranfield_dir, qrels, "first_hit")
    with Store(path) as store:
        yield store, qrels


# --- the store as eval inputs ---------------------------------------------------------------


def test_golden_set_holds_the_labels_of_the_golden_records(tmp_path):
    store = Store(tmp_path / "team.db")
    store.import_records(
        {
            "query_id": f"q{n}",
            "query": f"question {n}",
            "slice": "head" if n < 4 else "tail",
            "candidates": [{"doc_id": f"q{n}-d{rank}", "text": "t"} for rank in (1, 2, 3)],
        }
        for n in range(1, 8)
    )
    store.add_annotator("rita", role="reviewer")
    label(store, "q1", 2)  # ana: relevant at rank 2...
    store.judge("q1", "q1-d1", 1, "ben", mode="full")  # ...ben: rank 1, a disagreement
    store.adjudicate("q1", "rita", {"q1-d1": 0, "q1-d2": 1}, True)  # settled by a reviewer
    store.mark("q2", "unanswerable", "ana")
    store.judge("q3", "q3-d1", 0, "ana")
    store.attach("q3", "q1-d3", 1, "ana")  # the answer the system missed, found by search
    store.mark("q4", "skip", "ana")
    store.judge("q5", "q5-d1", 0, "ben")
    store.undo("ben")  # ben leaves nothing on q5
    store.set_note("q6", "ana", "ambiguous")  # a note only: still pending
    store.judge("q7", "q7-d2", 2, "ana", mode="full")  # in progress

    ours = live.golden_set(store)
    records = golden_from_records(store.golden_records())

    pd.testing.assert_frame_equal(ours.queries, records.queries)
    by_doc = ["query_id", "doc_id"]
    pd.testing.assert_frame_equal(
        ours.judgments.sort_values(by_doc, ignore_index=True),
        records.judgments.sort_values(by_doc, ignore_index=True),
    )
    assert ours.version == records.version
    assert set(ours.queries["status"]) == {"done", "skipped", "pending"}


def test_project_run_gives_the_report_of_the_whole_candidate_lists(tmp_path):
    store = Store(tmp_path / "deep.db")
    store.import_records(
        {
            "query_id": f"q{n}",
            "query": f"question {n}",
            "candidates": [{"doc_id": f"q{n}-d{rank}", "text": "t"} for rank in range(1, 16)],
        }
        for n in range(1, 5)
    )
    for query_id, rank in (("q1", 2), ("q2", 11), ("q3", 13)):  # two below the cutoff
        label(store, query_id, rank)
    golden = live.golden_set(store)
    top, whole = live.project_run(store), run_from_frame(store.candidate_run_frame(), "candidates")
    ours, theirs = (build_report(golden, run, bootstrap=200) for run in (top, whole))
    pd.testing.assert_frame_equal(ours.pop("per_query"), theirs.pop("per_query"))
    assert ours == theirs
    assert (len(top.results), len(whole.results)) == (4 * 11, 4 * 15)


def test_dashboard_mrr_of_a_pooled_run_equals_pytrec_evals_on_the_cranfield_pool(
    cranfield, cranfield_dir
):
    store, qrels = cranfield
    snap = live.snapshot(live.golden_set(store), live.project_run(store, "bm25"))
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "success.1,10"})
    expected = oracle.evaluate(run_at_depth(cranfield_dir / "runs" / "bm25.trec"))
    overall = snap.table[snap.table["slice"] == live.ALL].set_index("metric")["value"]
    assert overall["mrr@10"] == pytest.approx(
        np.mean([v["recip_rank"] for v in expected.values()]), abs=1e-12
    )
    assert overall["hit@1"] == pytest.approx(np.mean([v["success_1"] for v in expected.values()]))
    assert overall["hit@10"] == pytest.approx(np.mean([v["success_10"] for v in expected.values()]))
    assert snap.report["queries"]["answerable"] == len(expected) == 225


def test_queries_needed_predicts_the_ci_half_width_reached_with_that_many_queries(cranfield):
    store, _ = cranfield
    golden, run = live.golden_set(store), live.project_run(store, "bm25")
    target = 0.07
    needed = live.snapshot(golden, run, target=target).needed
    assert needed.half_width < target and needed.more == 0  # 225 queries are more than enough

    query_ids = golden.queries["query_id"].to_numpy()
    rng = np.random.default_rng(7)
    realised = [
        half_width(live.snapshot(sample(golden, rng.choice(query_ids, needed.needed, False)), run))
        for _ in range(10)
    ]
    assert 50 < needed.needed < 150
    assert np.mean(realised) == pytest.approx(target, rel=0.1)


def sample(golden: Golden, query_ids) -> Golden:
    """The golden set restricted to some queries."""
    keep = set(query_ids)
    return Golden(
        golden.queries[golden.queries["query_id"].isin(keep)].reset_index(drop=True),
        golden.judgments[golden.judgments["query_id"].isin(keep)].reset_index(drop=True),
    )


def half_width(snap: live.Snapshot) -> float:
    low, high = snap.report["metrics"]["mrr@10"]["ci95"]
    return (high - low) / 2


# --- the dashboard's figures ----------------------------------------------------------------


def test_dashboard_table_gives_the_worked_example_with_cis_and_the_unanswerable_share(demo):
    snap = live.snapshot(live.golden_set(demo), live.project_run(demo))
    overall = snap.table[snap.table["slice"] == live.ALL].set_index("metric")
    assert list(overall.index) == ["mrr@10", "hit@1", "hit@10", "miss@10", "unanswerable"]
    assert overall.loc["mrr@10", "value"] == pytest.approx(0.458, abs=5e-4)
    assert overall.loc["hit@1", "value"] == overall.loc["miss@10", "value"] == 0.25
    assert overall.loc["unanswerable", "value"] == pytest.approx(2 / 6)
    assert overall.loc["unanswerable", "queries"] == 6  # done queries, answerable or not
    assert (overall["ci_low"] <= overall["value"]).all()
    assert (overall["value"] <= overall["ci_high"]).all()
    assert set(snap.table["slice"]) == {"all", "head", "tail"}


def test_first_relevant_ranks_count_each_rank_and_none_per_slice(demo):
    snap = live.snapshot(live.golden_set(demo), live.project_run(demo))
    ranks = snap.first_relevant.set_index(["slice", "rank"])["queries"]
    assert [ranks["all", rank] for rank in ("1", "2", "3", "4", "none")] == [1, 1, 1, 0, 1]
    assert ranks["tail", "3"] == ranks["tail", "none"] == 1  # q02 and q03 are tail queries
    assert ranks.groupby(level="slice").sum().to_dict() == {"all": 4, "head": 2, "tail": 2}


def test_worst_queries_come_misses_first_with_a_link_to_the_label_page(demo):
    snap = live.snapshot(live.golden_set(demo), live.project_run(demo))
    assert list(snap.worst["query_id"]) == ["q03", "q02", "q04", "q01"]
    assert snap.worst["first_relevant_rank"].iloc[0] == "none"
    assert snap.worst["link"].iloc[0] == "./?query=q03"
    assert live.label_link("a b&c/<x>") == "./?query=a%20b%26c%2F%3Cx%3E"


def test_miss_rate_above_15_percent_alerts_a_first_stage_recall_problem(demo):
    snap = live.snapshot(live.golden_set(demo), live.project_run(demo))
    rules = {alert.rule: alert.message for alert in snap.alerts}
    assert "first-stage recall problem" in rules["miss_rate"]
    assert "25.0%" in rules["miss_rate"]
    assert "outside 10%–20%" in rules["unanswerable_share"]  # 2 of 6 is 33 %


def test_figures_within_the_operating_rules_raise_no_alert(demo):
    label(demo, "q03", None, annotator="ben")  # nothing changes q03: still a miss...
    for query_id in ("q08", "q09", "q10", "q11", "q12", "q13", "q14", "q15"):
        label(demo, query_id, 1)  # ...but eight hits bring misses to 1 in 12 (8 %)
    snap = live.snapshot(live.golden_set(demo), live.project_run(demo))
    assert snap.report["metrics"]["miss@10"]["mean"] == pytest.approx(1 / 12)
    assert [alert.rule for alert in snap.alerts] == []  # unanswerable: 2 of 14 = 14 %


def test_mrr_and_hit1_moving_apart_between_recorded_runs_alerts(demo):
    golden = live.golden_set(demo)
    report = build_report(golden, live.project_run(demo), bootstrap=0)
    live.record_report(demo, report, "sha-1", {"model": "a"})
    moved = {**report, "metrics": {**report["metrics"]}}
    moved["metrics"]["mrr@10"] = {"mean": report["metrics"]["mrr@10"]["mean"] + 0.03}
    moved["metrics"]["hit@1"] = {"mean": report["metrics"]["hit@1"]["mean"] - 0.05}
    live.record_report(demo, moved, "sha-2", {"model": "b"})
    snap = live.snapshot(golden, live.project_run(demo), history=demo.eval_history())
    apart = [alert.message for alert in snap.alerts if alert.rule == "moving_apart"]
    assert apart and "+0.030" in apart[0] and "-0.050" in apart[0]


def test_coverage_counts_done_pending_and_skipped_per_slice(demo):
    frame = live.coverage(demo).set_index("slice")
    assert frame.loc["all", ["queries", "done", "answerable", "unanswerable"]].tolist() == [
        50,
        6,
        4,
        2,
    ]
    assert frame.loc["all", "skipped"] == 1
    assert frame.loc["all", "pending"] == 50 - 6 - 1
    assert frame.loc["head", "queries"] + frame.loc["tail", "queries"] == 50


def test_throughput_counts_judgements_made_only_in_the_hours_that_have_some(demo):
    now = datetime.now(UTC)
    frame = live.throughput(demo, hours=3, now=now + timedelta(hours=1))
    per_hour = frame.groupby("hour")["judgements"].sum()
    judgements = len(demo.judgement_seconds())
    assert list(per_hour.index) == [pd.Timestamp(now).floor("h")]  # the idle hour is left out
    assert per_hour.sum() == judgements
    assert set(frame["annotator"]) == {"ana", "ben"}
    assert live.throughput(demo, hours=3, now=now + timedelta(hours=5)).empty


# --- keeping the figures fresh -----------------------------------------------------------


def state(events: int) -> live.ProjectState:
    return live.ProjectState("project.db", (("events", events),))


class SlowFigures:
    """A computation that takes ``seconds`` on a fake clock (or raises ``error``)."""

    def __init__(self, seconds: float):
        self.now, self.seconds, self.calls, self.error = 0.0, seconds, [], None

    def clock(self) -> float:
        return self.now

    def __call__(self, project: live.ProjectState) -> str:
        self.calls.append(project)
        self.now += self.seconds
        if self.error:
            raise self.error
        return f"figures at {dict(project.marks)['events']}"


def eventually(check, seconds: float = 10.0) -> bool:
    """Whether ``check()`` becomes true within ``seconds`` (a background thread is at work)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def test_refresher_computes_again_only_when_the_project_changed():
    figures = SlowFigures(seconds=0.1)
    refresher = live.Refresher(figures, clock=figures.clock)
    assert refresher.get(state(1)) == refresher.get(state(1)) == "figures at 1"
    assert len(figures.calls) == 1
    figures.now += 1  # past the pace (4 x 0.1 s)
    assert refresher.get(state(2)) == "figures at 2"  # quick: computed at once


def test_refresher_serves_slow_figures_while_it_computes_new_ones_at_a_pace():
    figures = SlowFigures(seconds=2.0)
    refresher = live.Refresher(figures, pace=4, clock=figures.clock)
    assert refresher.get(state(1)) == "figures at 1"  # nothing to serve yet: computed
    figures.now += 7  # a 2 s computation, a 4 x 2 s pace: not due for one more second
    assert refresher.get(state(2)) == "figures at 1" and len(figures.calls) == 1
    figures.now += 1
    assert refresher.get(state(2)) == "figures at 1"  # served while the new ones are made
    assert eventually(lambda: refresher.get(state(2)) == "figures at 2")
    assert len(figures.calls) == 2


def test_refresher_reports_a_failed_background_computation_once():
    figures = SlowFigures(seconds=2.0)
    refresher = live.Refresher(figures, pace=0, clock=figures.clock)
    refresher.get(state(1))
    figures.error = ValueError("the database is gone")
    assert refresher.get(state(2)) == "figures at 1"  # the computation fails in the background

    def raised() -> bool:
        try:
            refresher.get(state(2))
        except ValueError as error:
            return "gone" in str(error)
        return False

    assert eventually(raised)


# --- cost ----------------------------------------------------------------------------------


def test_cost_summary_prices_the_remaining_queries_at_the_measured_pace(demo):
    summary = live.cost_summary(demo, rate=60)
    events = demo.events_frame()
    assert summary.cost.spent.seconds == events["seconds"].sum() == 91.0  # the skip's 1 s too
    # Done passes: q01 6 s, q02 4+4+6, q03 10×4 + the miss's 2, q04 4+6, and q05, q06 ben's
    # undone 6 s + the verdict's 3 s; the docs read: 1, 3, 10, 2 and the 10 each verdict read.
    assert summary.cost.seconds_per_query == np.mean([6, 14, 42, 10, 9, 9]) == 15.0
    assert summary.cost.median_seconds_per_query == 9.5
    assert summary.cost.judgements_per_query == np.mean([1, 3, 10, 2, 10, 10]) == 6.0
    assert summary.cost.seconds_per_judgement == 90 / 36
    assert summary.queries_remaining == 50 - 6
    # 44 queries × 15 s, less the skipped query's 1 s already spent
    assert summary.cost.remaining == cost.Cost.of_seconds(44 * 15 - 1, 60)
    ben = summary.per_annotator.set_index("annotator").loc["ben"]
    assert (ben["judgements"], ben["queries_done"]) == (2, 2)  # the undone judgements count
    assert set(summary.as_dict()) >= {"spent", "remaining", "total", "seconds_per_query"}


def test_pool_sizes_come_from_the_runs_real_overlap():
    def run(*docs):
        return pd.DataFrame(
            {"query_id": "q", "doc_id": list(docs), "score": [3.0, 2.0, 1.0][: len(docs)]}
        )

    sizes = live.pool_sizes({"a": run("x", "y", "z"), "b": run("x", "w", "z")}, [1, 2, 3])
    assert sizes["depth_x_systems"].tolist() == [2, 4, 6]
    assert sizes["pooled_per_query"].tolist() == [1, 3, 4]  # x is shared, then z


def test_plans_compare_first_hit_full_depth_and_the_pool():
    table = live.plans(400, 10, [1, 3, np.nan, 2], 20, 60, pool_depth=14.5).set_index("plan")
    assert table["docs_per_query"].tolist() == [4.0, 10.0, 14.5]
    assert table["dollars"].iloc[0] == pytest.approx(533.33, abs=0.01)  # the field's example


# --- comparing runs and the run history ---------------------------------------------------


def test_evaluated_runs_carry_judged_at_10_beside_every_figure(demo):
    golden = live.golden_set(demo)
    table, reports = live.evaluate_runs(golden, [live.project_run(demo)], bootstrap=100)
    assert set(table["metric"]) == {"mrr@10", "hit@1", "hit@10", "miss@10", "recall@10",
                                    "precision@10", "ndcg@10"}  # fmt: skip
    judged = reports["candidates"]["metrics"]["judged@10"]["mean"]
    assert (table.loc[table["slice"] == "all", "judged@10"] == judged).all()


def history_record(record_id, version, mrr, hit, miss, tail_mrr):
    """A run-history record as Store.eval_history gives it."""
    metrics = {"mrr@10": mrr, "hit@1": hit, "miss@10": miss}
    return {
        "id": record_id,
        "recorded_at": f"2026-11-{record_id:02d}",
        "run": "dense",
        "golden_version": version,
        "tags": {"model": f"m{record_id}"},
        "metrics": metrics,
        "slices": {"tail": {**metrics, "mrr@10": tail_mrr}},
    }


def test_history_flags_a_miss_rise_over_two_points_and_a_slice_drop_over_005():
    records = [
        history_record(1, "v1", 0.60, 0.50, 0.100, 0.50),
        history_record(2, "v1", 0.61, 0.51, 0.125, 0.50),  # misses +2.5 points
        history_record(3, "v1", 0.62, 0.52, 0.125, 0.44),  # tail MRR -0.06
        history_record(4, "v1", 0.62, 0.52, 0.140, 0.44),  # misses +1.5 points: fine
    ]
    flags = live.history_flags(records)
    regressions = [(f.record, f.previous) for f in flags if f.kind == "regression"]
    assert regressions == [(2, 1), (3, 2)]
    assert "miss@10 rose by 2.50 points" in flags[0].message
    assert any("slice 'tail'" in f.message and f.record == 3 for f in flags)


def test_history_never_compares_records_of_different_golden_versions():
    records = [
        history_record(1, "v1", 0.60, 0.50, 0.10, 0.50),
        history_record(2, "v2", 0.40, 0.30, 0.30, 0.20),  # worse, but on other labels
    ]
    flags = live.history_flags(records)
    assert [(f.kind, f.record, f.previous) for f in flags] == [("golden_changed", 2, 1)]
    assert "v2" in flags[0].message and "v1" in flags[0].message
    table = live.history_table(records)
    assert set(table["golden_version"]) == {"v1", "v2"}


def test_moving_apart_needs_opposite_moves_or_a_changing_gap():
    before = {"mrr@10": 0.60, "hit@1": 0.50}
    assert live.moving_apart(before, {"mrr@10": 0.62, "hit@1": 0.52}) is None
    assert live.moving_apart(before, {"mrr@10": 0.62, "hit@1": 0.48}) is not None
    assert live.moving_apart(before, {"mrr@10": 0.61, "hit@1": 0.44}) is not None  # gap +0.07


def test_parse_tags_names_the_part_that_is_not_key_value():
    assert live.parse_tags("model=e5, chunking=512") == {"model": "e5", "chunking": "512"}
    with pytest.raises(ValueError, match="'chunking'"):
        live.parse_tags("model=e5, chunking")


# --- downloads ----------------------------------------------------------------------------


def test_downloads_equal_the_exports_and_the_report(demo, tmp_path):
    demo.write_jsonl(tmp_path / "golden.jsonl")
    demo.write_qrels(tmp_path / "qrels.txt")
    assert live.golden_jsonl(demo) == (tmp_path / "golden.jsonl").read_bytes()
    assert live.golden_qrels(demo) == (tmp_path / "qrels.txt").read_bytes()
    report = build_report(live.golden_set(demo), live.project_run(demo), bootstrap=50)
    assert "per_query" not in json.loads(live.report_json(report))
    csv = pd.read_csv(pd.io.common.StringIO(live.report_csv(report)))
    assert csv.loc[(csv["slice"] == "all") & (csv["metric"] == "mrr@10"), "value"].item() == (
        pytest.approx(report["metrics"]["mrr@10"]["mean"])
    )


# --- how figures are written ----------------------------------------------------------------


def test_a_figure_cell_holds_the_mean_and_its_ci_rates_in_percent():
    assert live.figure_text({"mean": 0.615, "ci95": [0.511, 0.72]}, "mrr@10") == (
        "0.615 [0.511, 0.720]"
    )
    assert live.figure_text({"mean": 0.455, "ci95": [0.182, 0.727]}, "hit@1") == (
        "45.5% [18.2, 72.7]"
    )
    assert live.figure_text({"mean": 0.34, "ci95": [0.2, 0.5]}, "judged@10", ci=False) == "34.0%"
    assert live.figure_text({"mean": None, "ci95": [None, None]}, "mrr@10") == "–"


def test_first_hit_figures_say_not_measured_or_lower_bound():
    not_measured = {"mean": None, "ci95": None, "queries": 0}
    assert live.figure_text(not_measured, "ndcg@10") == "not measured (first-hit labels)"
    given = {**not_measured, "reason": "not measured (no full-mode query)"}
    assert live.figure_text(given, "recall@10") == "not measured (no full-mode query)"
    lower = {"mean": 0.412, "ci95": [0.3, 0.5], "bound": "lower"}
    assert live.figure_text(lower, "precision@10") == "≥ 0.412 [0.300, 0.500]"


def test_durations_read_in_minutes_below_an_hour():
    assert [live.duration_text(h) for h in (0.2, 0.004, 3.44, 42.4, math.nan)] == [
        "≈ 12 min", "≈ 1 min", "≈ 3.4 h", "≈ 42 h", "–",
    ]  # fmt: skip


def test_paired_figures_say_not_measured_and_mark_lower_bounds():
    measured = {"baseline": 0.5, "candidate": 0.6, "delta": 0.1, "ci95": [0.0, 0.2]}
    comparison = {
        "queries": {"baseline": {"answerable": 4}},
        "metrics": {
            "mrr@10": {**measured, "p_value": 0.25},
            "ndcg@10": {"baseline": None, "candidate": None, "delta": None, "ci95": None,
                        "p_value": None, "reason": "not measured (first-hit labels)"},
            "precision@10": {**measured, "p_value": 0.5, "bound": "lower"},
        },
        "slices": {},
    }  # fmt: skip
    table = live.paired_wide(comparison, "old", "new").set_index("Metric")
    assert table.loc["MRR@10", ["old", "new", "Change [95% CI]", "p-value"]].tolist() == [
        "0.500", "0.600", "+0.100 [+0.000, +0.200]", "0.2500",
    ]  # fmt: skip
    assert table.loc["nDCG@10", "Change [95% CI]"] == "not measured (first-hit labels)"
    assert table.loc["precision@10", ["old", "new"]].tolist() == ["≥ 0.500", "≥ 0.600"]
