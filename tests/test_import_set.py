"""What the ``goldset`` command loads: a CI gate on a small golden set must not pay for the app.

Each test runs the real command in a fresh interpreter and reads ``sys.modules`` as it exits,
so an import added anywhere on the path (the CLI, eval/, a helper) shows up here.
pandas is pinned out too: on a small golden set it would be a third of the start-up.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MODULES_PREFIX = "MODULES "
# Runs the console script's entry point, then prints every loaded module once click exits.
WRAPPER = f"""
import atexit, json, sys
atexit.register(lambda: print({MODULES_PREFIX!r} + json.dumps(sorted(sys.modules))))
sys.argv = ["goldset", *sys.argv[1:]]
from goldset.labeler.cli import cli
cli()
"""
APP_ONLY = ("streamlit", "sqlite_utils", "sqlite3", "goldset.labeler.store", "goldset.labeler.live")
# What a CI gate on a small golden set never loads: the app, and pandas.
NOT_ON_EVAL_PATH = (*APP_ONLY, "pandas")


def goldset_modules(*args: str | Path) -> tuple[str, set[str]]:
    """Run ``goldset ARGS`` in a new interpreter; its output and the modules it had loaded."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    output, _, modules = done.stdout.rpartition(MODULES_PREFIX)
    return output, set(json.loads(modules))


def loaded(modules: set[str], name: str) -> bool:
    """Whether the package `name` (or any of its submodules) was imported."""
    return any(module == name or module.startswith(name + ".") for module in modules)


@pytest.fixture
def small_set(tmp_path: Path) -> dict[str, Path]:
    """A three-query golden set (as golden JSONL and as TREC qrels) and two TREC runs."""
    golden = tmp_path / "golden.jsonl"
    judgments = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d5": 0, "d6": 1}}
    golden.write_text(
        "".join(
            json.dumps({"query_id": q, "status": "done", "answerable": True, "judgments": j}) + "\n"
            for q, j in judgments.items()
        )
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "".join(f"{q} 0 {doc} {grade}\n" for q, j in judgments.items() for doc, grade in j.items())
    )
    baseline = tmp_path / "baseline.trec"
    baseline.write_text("q1 Q0 d2 1 3 b\nq1 Q0 d1 2 2 b\nq2 Q0 d4 1 5 b\nq3 Q0 d6 1 1 b\n")
    candidate = tmp_path / "candidate.trec"
    candidate.write_text("q1 Q0 d1 1 3 c\nq2 Q0 d3 1 5 c\nq3 Q0 d5 1 2 c\nq3 Q0 d6 2 1 c\n")
    jsonl = tmp_path / "candidate.jsonl"
    jsonl.write_text(
        '{"query_id": "q1", "results": [{"doc_id": "d1", "score": 3}]}\n'
        '{"query_id": "q2", "results": []}\n'
        '{"query_id": "q3", "results": [{"doc_id": "d6", "score": 1}]}\n'
    )
    return {
        "golden": golden,
        "qrels": qrels,
        "baseline": baseline,
        "candidate": candidate,
        "jsonl": jsonl,
    }


@pytest.mark.parametrize("labels", ["golden", "qrels"])
def test_eval_json_loads_neither_streamlit_nor_sqlite(small_set: dict[str, Path], labels: str):
    output, modules = goldset_modules(
        "eval", "--golden", small_set[labels], "--run", small_set["baseline"], "--json"
    )
    assert json.loads(output)["metrics"]["mrr@10"]["mean"] == pytest.approx((1 / 2 + 0 + 1) / 3)
    assert [name for name in NOT_ON_EVAL_PATH if loaded(modules, name)] == []


def test_eval_text_report_loads_neither_streamlit_nor_sqlite(small_set: dict[str, Path]):
    output, modules = goldset_modules(
        "eval", "--golden", small_set["golden"], "--run", small_set["baseline"]
    )
    assert "mrr@10" in output
    assert [name for name in NOT_ON_EVAL_PATH if loaded(modules, name)] == []


def test_compare_gate_loads_neither_streamlit_nor_sqlite(small_set: dict[str, Path]):
    output, modules = goldset_modules(
        "compare",
        "--golden",
        small_set["golden"],
        "--baseline",
        small_set["baseline"],
        "--candidate",
        small_set["candidate"],
        "--bootstrap",
        "0",
        "--gate",
        "--json",
    )
    result = json.loads(output)
    candidate_mrr, baseline_mrr = (1 + 1 + 1 / 2) / 3, (1 / 2 + 0 + 1) / 3
    assert result["metrics"]["mrr@10"]["delta"] == pytest.approx(candidate_mrr - baseline_mrr)
    assert result["gate"]["passed"]
    assert [name for name in NOT_ON_EVAL_PATH if loaded(modules, name)] == []


def test_eval_of_a_jsonl_run_with_per_query_file_loads_no_pandas(
    small_set: dict[str, Path], tmp_path: Path
):
    per_query = tmp_path / "per_query.jsonl"
    golden, run = small_set["golden"], small_set["jsonl"]
    output, modules = goldset_modules(
        "eval", "--golden", golden, "--run", run, "--per-query", per_query, "-m", "recall@10"
    )
    rows = [json.loads(line) for line in per_query.read_text().splitlines()]
    assert rows == [
        {"query_id": "q1", "recall@10": 1.0},
        {"query_id": "q2", "recall@10": 0.0},
        {"query_id": "q3", "recall@10": 1.0},
    ]
    assert "recall@10" in output
    assert [name for name in NOT_ON_EVAL_PATH if loaded(modules, name)] == []


def test_eval_of_a_large_messy_run_read_by_arrows_general_parser_loads_no_pandas(
    small_set: dict[str, Path], tmp_path: Path
):
    run = tmp_path / "messy.trec"
    # Past the plain parser's 4 KB, with runs of tabs and spaces: Arrow's general parser.
    lines = [f"  q{1 + n % 3}\t Q0  doc{n}   {n}\t{1000 - n} run \r\n" for n in range(300)]
    run.write_text("".join(lines) + "q1 Q0 d1 301 2000 run\n")
    output, modules = goldset_modules(
        "eval", "--golden", small_set["qrels"], "--run", run, "--json", "--bootstrap", "0"
    )
    assert json.loads(output)["metrics"]["hit@1"]["mean"] == pytest.approx(1 / 3)
    assert [name for name in NOT_ON_EVAL_PATH if loaded(modules, name)] == []


def test_compare_text_report_loads_no_pandas(small_set: dict[str, Path]):
    runs = ("--baseline", small_set["baseline"], "--candidate", small_set["jsonl"])
    output, modules = goldset_modules("compare", "--golden", small_set["qrels"], *runs)
    assert output.startswith("candidate vs baseline on golden set ")
    assert [name for name in NOT_ON_EVAL_PATH if loaded(modules, name)] == []


def test_help_loads_click_and_nothing_of_eval():
    output, modules = goldset_modules("--help")
    assert "eval" in output and "compare" in output
    heavy = ("eval", "pandas", "numpy", "pyarrow", *APP_ONLY)
    assert [name for name in heavy if loaded(modules, name)] == []


def test_cost_estimate_loads_neither_streamlit_nor_sqlite():
    output, modules = goldset_modules(
        "cost", "--queries", "400", "--docs-per-query", "4", "--seconds", "20", "--rate", "60"
    )
    assert "$533.33" in output
    assert [name for name in NOT_ON_EVAL_PATH if loaded(modules, name)] == []


def test_importtime_of_python_m_labeler_cli_help_lists_no_pandas():
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "goldset.labeler.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()}
    assert "click" in imported
    assert {"pandas", "numpy", "pyarrow"} & imported == set()
