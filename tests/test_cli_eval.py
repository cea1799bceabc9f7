"""``goldset eval`` and ``goldset compare``: the command-line contract of issue 2, which other
tools and CI scripts call."""

from __future__ import annotations

import json
import subprocess
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from goldset.eval.metrics import DEFAULT_METRICS
from goldset.labeler.cli import cli


def golden_file(path: Path, *queries: dict) -> Path:
    """Golden-set JSONL; each query is done and answerable unless its record says otherwise."""
    lines = [json.dumps({"status": "done", "answerable": True, **query}) for query in queries]
    path.write_text("\n".join(lines) + "\n")
    return path


def trec_run(path: Path, ranked: dict[str, list[str]], tag: str = "bm25") -> Path:
    """A TREC run: each query's docs in rank order, with falling scores."""
    lines = [
        f"{query_id} Q0 {doc_id} {rank} {100 - rank} {tag}"
        for query_id, doc_ids in ranked.items()
        for rank, doc_id in enumerate(doc_ids, start=1)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def goldset(*args: str | Path):
    """Run ``goldset ARGS`` in-process; the result has exit_code, output and stderr."""
    return CliRunner().invoke(cli, [str(arg) for arg in args])


def goldset_json(*args: str | Path) -> dict:
    result = goldset(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def worked_example(tmp_path: Path) -> tuple[Path, Path]:
    """docs/metrics.md's worked example: first relevant doc at ranks 1, 3, none and 2."""
    golden = golden_file(
        tmp_path / "golden.jsonl",
        {"query_id": "parse", "slice": "code", "judgments": {"p1": 1, "p2": 0}},
        {"query_id": "retry", "slice": "code", "judgments": {"r1": 0, "r2": 0, "r3": 2}},
        {"query_id": "deprecated", "slice": "docs", "judgments": {"d1": 0}},
        {"query_id": "upload", "slice": "docs", "judgments": {"u1": 0, "u2": 1}},
        {"query_id": "weather", "answerable": False},
    )
    run = trec_run(
        tmp_path / "bm25.trec",
        {
            "parse": ["p1", "p2", "p3"],
            "retry": ["r1", "r2", "r3", "r4"],
            "deprecated": [f"d{rank}" for rank in range(1, 12)],
            "upload": ["u1", "u2"],
            "weather": ["w1"],
        },
    )
    return golden, run


# --- goldset eval -------------------------------------------------------------------------------


def test_eval_worked_example_of_the_mrr_definition(worked_example):
    golden, run = worked_example
    metrics = goldset_json("eval", "--golden", golden, "--run", run)["metrics"]
    assert round(metrics["mrr@10"]["mean"], 4) == 0.4583
    assert metrics["hit@1"]["mean"] == 0.25
    assert metrics["miss@10"]["mean"] == 0.25


def test_eval_json_prints_the_issue_contract(worked_example):
    golden, run = worked_example
    result = goldset("eval", "--golden", golden, "--run", run, "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)  # one JSON object, nothing else on stdout
    assert {"queries", "metrics", "slices", "worst", "abstention"} <= set(report)
    assert {
        name: report["queries"][name]
        for name in (
            "answerable",
            "unanswerable",
            "skipped",
            "missing_from_run",
            "unlabelled_in_run",
            "ties_at_cutoff",
        )
    } == {
        "answerable": 4,
        "unanswerable": 1,
        "skipped": 0,
        "missing_from_run": 0,
        "unlabelled_in_run": 0,
        "ties_at_cutoff": 0,
    }
    assert list(report["metrics"]) == list(DEFAULT_METRICS)
    for spec, entry in report["metrics"].items():
        assert set(entry) == {"mean", "ci95"}, spec
        low, high = entry["ci95"]
        assert isinstance(entry["mean"], float) and low <= entry["mean"] <= high, spec
    assert sorted(report["slices"]) == ["code", "docs"]
    assert report["slices"]["code"]["queries"] == 2
    assert list(report["slices"]["code"]["metrics"]) == list(DEFAULT_METRICS)
    assert set(report["slices"]["code"]["metrics"]["mrr@10"]) == {"mean", "ci95"}
    assert [entry["query_id"] for entry in report["worst"]] == [
        "deprecated",
        "retry",
        "upload",
        "parse",
    ]
    assert report["abstention"]["unanswerable_queries"] == 1


def test_eval_metric_option_selects_the_metrics(worked_example):
    golden, run = worked_example
    report = goldset_json("eval", "--golden", golden, "--run", run, "-m", "mrr@3", "-m", "hit@2")
    assert list(report["metrics"]) == ["mrr@3", "hit@2"]
    assert report["metrics"]["mrr@3"]["mean"] == pytest.approx((1 + 1 / 3 + 0 + 1 / 2) / 4)
    assert report["metrics"]["hit@2"]["mean"] == 0.5


def test_eval_rejects_an_unknown_metric(worked_example):
    golden, run = worked_example
    result = goldset("eval", "--golden", golden, "--run", run, "-m", "map@10")
    assert result.exit_code == 2
    assert "unknown metric 'map@10'" in result.output


def test_eval_per_query_writes_one_object_per_answerable_query(worked_example, tmp_path):
    golden, run = worked_example
    out = tmp_path / "per_query.jsonl"
    goldset_json("eval", "--golden", golden, "--run", run, "--per-query", out)
    rows = {row["query_id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert sorted(rows) == ["deprecated", "parse", "retry", "upload"]
    assert list(rows["retry"]) == ["query_id", *DEFAULT_METRICS]
    assert rows["retry"]["mrr@10"] == 1 / 3
    assert rows["deprecated"]["miss@10"] == 1.0


def test_eval_rel_threshold_raises_the_bar_for_relevance(worked_example):
    golden, run = worked_example
    metric = ("-m", "mrr@10", "-m", "ndcg@10")
    default = goldset_json("eval", "--golden", golden, "--run", run, *metric)["metrics"]
    strict = goldset_json(
        "eval", "--golden", golden, "--run", run, *metric, "--rel-threshold", "2"
    )["metrics"]
    # Only "retry" has a grade-2 doc (at rank 3); nDCG uses grades as they are.
    assert strict["mrr@10"]["mean"] == pytest.approx((1 / 3) / 4)
    assert default["mrr@10"]["mean"] == pytest.approx(0.4583, abs=1e-4)
    assert strict["ndcg@10"]["mean"] == default["ndcg@10"]["mean"]


def test_eval_depth_keeps_only_the_top_of_each_list(worked_example):
    golden, run = worked_example
    shallow = goldset_json("eval", "--golden", golden, "--run", run, "--depth", "2")
    assert shallow["metrics"]["hit@10"]["mean"] == 0.5  # "retry" finds r3 only below depth 2
    assert shallow["queries"]["ties_at_cutoff"] == 0


def test_eval_bootstrap_zero_gives_no_confidence_intervals(worked_example):
    golden, run = worked_example
    report = goldset_json("eval", "--golden", golden, "--run", run, "--bootstrap", "0")
    assert all(entry["ci95"] is None for entry in report["metrics"].values())


def test_eval_same_seed_prints_the_same_report(worked_example):
    golden, run = worked_example
    seeded = ("eval", "--golden", golden, "--run", run, "--json", "--seed")
    assert goldset(*seeded, "5").stdout == goldset(*seeded, "5").stdout
    assert goldset(*seeded, "5").stdout == goldset(*seeded, "6").stdout  # score CIs: no resampling


def test_eval_table_reports_mrr_hit_at_1_and_misses_together(worked_example):
    golden, run = worked_example
    result = goldset("eval", "--golden", golden, "--run", run)
    assert result.exit_code == 0
    assert "mrr@10" in result.output.lower()
    assert "hit@1" in result.output
    assert "miss@10" in result.output
    assert "0.4583" in result.output
    assert "worst queries" in result.output


def test_eval_table_lists_worst_queries_with_whole_ranks_and_none_for_a_miss(worked_example):
    golden, run = worked_example
    lines = goldset("eval", "--golden", golden, "--run", run).output.splitlines()
    worst = lines[lines.index("worst queries (misses first):") + 1 :]
    queries = ("parse", "retry", "deprecated", "upload")
    rows = [line.split() for line in worst if line.split()[:1] and line.split()[0] in queries]
    # query_id, slice, first_relevant_rank: misses first, then the lowest reciprocal rank.
    assert [row[:3] for row in rows] == [
        ["deprecated", "docs", "none"],
        ["retry", "code", "3"],
        ["upload", "docs", "2"],
        ["parse", "code", "1"],
    ]


def test_eval_bad_run_file_names_file_and_line_without_a_traceback(worked_example, tmp_path):
    golden, _ = worked_example
    bad = tmp_path / "bad.trec"
    bad.write_text("parse Q0 p1 1 2.0 bm25\nparse Q0 p2 2 high bm25\n")
    result = goldset("eval", "--golden", golden, "--run", bad)
    assert result.exit_code == 2  # input errors exit 2 (the README's contract)
    assert f"{bad}:2: field 'score'" in result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


def test_eval_reads_trec_qrels_and_beir_qrels_as_the_golden_set(tmp_path):
    run = trec_run(tmp_path / "run.trec", {"q1": ["d1", "d2"], "q2": ["d3", "d4"]})
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d2 1\nq2 0 d3 1\n")
    beir = tmp_path / "qrels.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td3\t1\n")
    for golden in (qrels, beir):
        metrics = goldset_json("eval", "--golden", golden, "--run", run, "-m", "mrr@10")
        assert metrics["metrics"]["mrr@10"]["mean"] == 0.75, golden.name


def cranfield_bm25(cranfield_dir: Path, *options: str) -> dict:
    """``goldset eval --json`` of Cranfield's bm25 run on its qrels.tsv, without CIs."""
    return goldset_json(
        "eval",
        "--golden",
        cranfield_dir / "qrels.tsv",
        "--run",
        cranfield_dir / "runs" / "bm25.trec",
        "--bootstrap",
        "0",
        *options,
    )


def test_eval_on_cranfield_bm25_gives_the_reference_values(cranfield_dir):
    report = cranfield_bm25(
        cranfield_dir,
        *("-m", "mrr", "-m", "hit@1", "-m", "hit@10", "-m", "precision@10"),
        *("-m", "recall@10", "-m", "ndcg@10"),
    )
    assert report["queries"]["answerable"] == 225
    assert {spec: round(entry["mean"], 4) for spec, entry in report["metrics"].items()} == {
        "mrr": 0.7965,
        "hit@1": 0.72,
        "hit@10": 0.9289,
        "precision@10": 0.3027,
        "recall@10": 0.4390,
        "ndcg@10": 0.5105,
    }


def test_goldset_console_script_runs_eval(worked_example):
    golden, run = worked_example
    script = Path(sysconfig.get_path("scripts")) / "goldset"  # where pip installed it
    completed = subprocess.run(
        [script, "eval", "--golden", golden, "--run", run, "--json", "--bootstrap", "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert round(json.loads(completed.stdout)["metrics"]["mrr@10"]["mean"], 4) == 0.4583


# --- goldset compare ------------------------------------------------------------------------------

QUERY_IDS = [f"q{i:03d}" for i in range(100)]


@pytest.fixture
def hundred_queries(tmp_path: Path) -> Path:
    """100 answerable queries, each with one relevant doc "hit"; half head, half tail."""
    return golden_file(
        tmp_path / "golden.jsonl",
        *(
            {"query_id": query_id, "slice": "head" if i < 50 else "tail", "judgments": {"hit": 1}}
            for i, query_id in enumerate(QUERY_IDS)
        ),
    )


def run_finding_hit(path: Path, misses: set[str] = frozenset()) -> Path:
    """Every query finds "hit" at rank 1, except the ``misses``, which never find it."""
    return trec_run(
        path,
        {
            query_id: ["other1", "other2"] if query_id in misses else ["hit", "other1"]
            for query_id in QUERY_IDS
        },
    )


def compare(golden: Path, baseline: Path, candidate: Path, *options: str):
    """``goldset compare`` of two run files on one golden set."""
    return goldset(
        "compare", "--golden", golden, "--baseline", baseline, "--candidate", candidate, *options
    )


def test_compare_gate_fails_with_its_reason_when_misses_rise(hundred_queries, tmp_path):
    baseline = run_finding_hit(tmp_path / "old.trec")
    lost = {f"q{i:03d}" for i in range(0, 100, 8)}  # 13 queries, both slices
    candidate = run_finding_hit(tmp_path / "new.trec", misses=lost)
    result = compare(hundred_queries, baseline, candidate, "--gate", "--max-mrr-drop", "1")
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)  # a verdict, not a crash (also exit 1)
    assert "gate: FAILED" in result.output
    reason = next(line for line in result.output.splitlines() if "miss@10 rose" in line)
    assert reason.startswith("  - miss@10 rose by 13.00 points (0.00% → 13.00%, ")
    assert "more than the allowed 1.00: 13 new misses (head 7, tail 6)" in reason


def test_compare_gate_on_means_fails_on_two_new_misses_in_a_hundred(hundred_queries, tmp_path):
    baseline = run_finding_hit(tmp_path / "old.trec")
    candidate = run_finding_hit(tmp_path / "new.trec", misses={"q000", "q099"})
    result = compare(
        hundred_queries, baseline, candidate, "--gate", "--max-mrr-drop", "1", "--bootstrap", "0"
    )
    assert result.exit_code == 1
    assert "miss@10 rose by 2.00 points (0.00% → 2.00%), more than the allowed 1.00" in (
        result.output
    )


def test_compare_gate_passes_with_exit_status_zero(hundred_queries, tmp_path):
    baseline = run_finding_hit(tmp_path / "old.trec", misses={"q000"})
    candidate = run_finding_hit(tmp_path / "new.trec")
    result = compare(hundred_queries, baseline, candidate, "--gate")
    assert result.exit_code == 0, result.output
    assert "gate: PASSED" in result.output


def test_compare_without_bootstrap_prints_the_table_without_intervals(hundred_queries, tmp_path):
    baseline = run_finding_hit(tmp_path / "old.trec", misses={"q000"})
    candidate = run_finding_hit(tmp_path / "new.trec")
    result = compare(hundred_queries, baseline, candidate, "--bootstrap", "0")
    assert result.exit_code == 0, result.output
    assert "mrr@10" in result.output
    assert "[" not in result.output.split("\n", 2)[2]  # no CI brackets in the table


def test_compare_json_gives_paired_figures_per_metric_and_the_gate(hundred_queries, tmp_path):
    baseline = run_finding_hit(tmp_path / "old.trec")
    candidate = run_finding_hit(tmp_path / "new.trec", misses={"q000", "q099"})
    result = compare(hundred_queries, baseline, candidate, "--json", "--gate", "--bootstrap", "200")
    assert result.exit_code == 3  # two misses in a hundred: the CI cannot tell
    report = json.loads(result.stdout)
    assert list(report["metrics"]) == list(DEFAULT_METRICS)
    miss = report["metrics"]["miss@10"]
    assert {"baseline", "candidate", "delta", "ci95", "p_value"} <= set(miss)
    assert (miss["baseline"], miss["candidate"]) == (0.0, 0.02)
    assert miss["delta"] == pytest.approx(0.02)
    assert miss["ci95"][0] <= miss["delta"] <= miss["ci95"][1]
    assert 0 < miss["p_value"] <= 1
    assert sorted(report["slices"]) == ["head", "tail"]
    assert report["slices"]["tail"]["metrics"]["miss@10"]["delta"] == pytest.approx(0.02)
    assert report["gate"]["verdict"] == "inconclusive" and report["gate"]["passed"] is False
    assert report["gate"]["reasons"][0].startswith("miss@10 rose by 2.00 points")


def test_compare_bad_run_file_is_not_mistaken_for_a_failed_gate(hundred_queries, tmp_path):
    baseline = run_finding_hit(tmp_path / "old.trec")
    broken = tmp_path / "new.trec"
    broken.write_text("q000 Q0 hit 1 high bm25\n")
    result = compare(hundred_queries, baseline, broken, "--gate")
    assert f"{broken}:1: field 'score'" in result.output
    assert result.exit_code == 2  # a failed gate is 1


def test_eval_on_a_missing_project_database_creates_nothing(worked_example, tmp_path):
    _, run = worked_example
    typo = tmp_path / "projcet.db"
    result = goldset("eval", "--db", typo, "--run", run)
    assert result.exit_code == 2 and "no goldset project at" in result.output
    assert not typo.exists()


def test_compare_json_lists_the_changed_queries(hundred_queries, tmp_path):
    baseline = run_finding_hit(tmp_path / "old.trec", misses={"q010"})
    candidate = run_finding_hit(tmp_path / "new.trec", misses={"q099", "q060", "q001"})
    report = json.loads(compare(hundred_queries, baseline, candidate, "--json").stdout)
    changed = report["changed_queries"]
    assert changed["new_misses"] == [
        {"query_id": query_id, "slice": slice_name, "baseline_rank": 1, "candidate_rank": None}
        for query_id, slice_name in (("q001", "head"), ("q060", "tail"), ("q099", "tail"))
    ]
    assert changed["new_hits"] == [
        {"query_id": "q010", "slice": "head", "baseline_rank": None, "candidate_rank": 1}
    ]
    assert changed["worse"] == changed["better"] == []


def test_compare_text_lists_new_misses_capped_with_a_count(hundred_queries, tmp_path):
    lost = {f"q{i:03d}" for i in range(50, 62)}
    baseline = run_finding_hit(tmp_path / "old.trec")
    candidate = run_finding_hit(tmp_path / "new.trec", misses=lost)
    result = compare(hundred_queries, baseline, candidate, "--gate", "--bootstrap", "0")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("new misses"))
    assert lines[start].endswith(": 12")
    assert lines[start + 1 : start + 12] == [
        *(f"  q{i:03d} (tail): rank 1 → none" for i in range(50, 60)),
        "  … and 2 more (--json lists them all)",
    ]
    assert "more than the allowed 1.00: 12 new misses (tail 12)" in result.output


def test_eval_per_query_writes_null_where_a_figure_is_not_measured(tmp_path):
    golden = golden_file(
        tmp_path / "golden.jsonl",
        {"query_id": "fast", "mode": "first_hit", "judgments": {"a": 0, "b": 1}},
        {"query_id": "deep", "mode": "full", "judgments": {"a": 0, "b": 1}},
    )
    run = trec_run(tmp_path / "run.trec", {"fast": ["a", "b"], "deep": ["a", "b"]})
    out = tmp_path / "per_query.jsonl"
    result = goldset("eval", "--golden", golden, "--run", run, "--per-query", out)
    assert result.exit_code == 0, result.output
    rows = {row["query_id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert rows["fast"]["recall@10"] is None and rows["fast"]["ndcg@10"] is None
    assert rows["fast"]["mrr@10"] == rows["deep"]["mrr@10"] == 0.5
    assert rows["deep"]["recall@10"] == 1.0


def test_eval_judged_against_beir_qrels_says_it_counts_relevant_docs_only(cranfield_dir):
    report = cranfield_bm25(cranfield_dir)
    judged = report["metrics"]["judged@10"]
    assert judged["judged_relevant_only"] is True
    assert judged["mean"] == report["metrics"]["precision@10"]["mean"]  # nothing else is judged
    assert any("lists only relevant documents" in note for note in report["notes"])
