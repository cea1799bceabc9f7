"""The GitHub composite action of the release gate (.github/actions/gate): its definition, and
its script run here as GitHub runs it, with GitHub's environment and files of our own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_gate_ci import NOISE, REGRESSION, golden_file, run_file

ACTION = Path(__file__).resolve().parents[1] / ".github" / "actions" / "gate"


def test_the_action_is_composite_and_passes_inputs_through_the_environment():
    action = yaml.safe_load((ACTION / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"  # no container
    assert {"golden", "baseline", "candidate", "args", "inconclusive"} <= set(action["inputs"])
    assert action["inputs"]["inconclusive"]["default"] == "pass"
    scripts = [step["run"] for step in action["runs"]["steps"] if "run" in step]
    assert not any("${{" in script for script in scripts)  # no input spliced into a shell
    assert scripts[-1] == 'python "$GITHUB_ACTION_PATH/gate.py"'
    assert set(action["outputs"]) == {"verdict", "exit-code"}


def run_action(
    tmp_path: Path, ranks: dict, **inputs: str
) -> tuple[subprocess.CompletedProcess, Path, dict]:
    """The action's script in a fake workspace: the job summary and outputs as files."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    golden_file(workspace / "golden.jsonl")
    run_file(workspace / "prod.trec", {})
    run_file(workspace / "pr.trec", ranks)
    summary, outputs = tmp_path / "summary.md", tmp_path / "output.txt"
    summary.write_text("earlier step\n")
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(ACTION),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
        "RUNNER_TEMP": str(tmp_path),
        "GOLDSET_GOLDEN": "golden.jsonl",
        "GOLDSET_BASELINE": "prod.trec",
        "GOLDSET_CANDIDATE": "pr.trec",
        **{f"GOLDSET_{name.upper()}": value for name, value in inputs.items()},
    }
    completed = subprocess.run(
        [sys.executable, str(ACTION / "gate.py")],
        cwd=workspace,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    return completed, summary, written


@pytest.mark.parametrize(
    ("ranks", "inputs", "status", "verdict", "annotation"),
    [
        ({}, {}, 0, "pass", None),
        (REGRESSION, {}, 1, "fail", "::error title=Release gate::"),
        (NOISE, {}, 0, "inconclusive", "::warning title=Release gate::"),
        (NOISE, {"inconclusive": "fail"}, 1, "inconclusive", "::error title=Release gate::"),
    ],
)
def test_the_action_writes_the_summary_and_fails_the_job_on_fail(
    tmp_path, ranks, inputs, status, verdict, annotation
):
    completed, summary, outputs = run_action(tmp_path, ranks, **inputs)
    assert completed.returncode == status, completed.stdout + completed.stderr
    assert outputs["verdict"] == verdict
    text = summary.read_text()
    assert text.startswith("earlier step\n## Release gate: ")  # appended, not replaced
    assert f"## Release gate: {verdict}" in text.replace("✅ ", "").replace("❌ ", "").replace(
        "⚠️ ", ""
    )
    assert "| rule | change | CI | status | why |" in text
    if annotation:
        assert completed.stdout.startswith(annotation)
    else:
        assert "::" not in completed.stdout


def test_the_action_passes_extra_options_to_goldset(tmp_path):
    completed, _, outputs = run_action(tmp_path, NOISE, args="--max-mrr-drop 0.5")
    assert (completed.returncode, outputs["verdict"]) == (0, "pass")


def test_the_action_reports_bad_input_as_an_error_not_a_verdict(tmp_path):
    completed, summary, outputs = run_action(tmp_path, {}, candidate="missing.trec")
    assert completed.returncode == 2
    assert outputs == {"verdict": "error", "exit-code": "2"}
    assert "missing.trec" in summary.read_text()
    assert completed.stdout.startswith("::error title=Release gate::")
