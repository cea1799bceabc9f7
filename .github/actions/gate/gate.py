"""The release gate's step in GitHub Actions (action.yml beside this file).

Runs ``goldset compare --gate --format markdown`` on the inputs (environment variables
GOLDSET_GOLDEN, GOLDSET_BASELINE, GOLDSET_CANDIDATE, GOLDSET_ARGS, GOLDSET_INCONCLUSIVE),
appends the Markdown to ``$GITHUB_STEP_SUMMARY``, writes the outputs ``verdict`` and
``exit-code`` to ``$GITHUB_OUTPUT``, annotates the run, and exits 1 on ``fail`` (on
``inconclusive`` too when GOLDSET_INCONCLUSIVE is ``fail``), 2 on bad input, else 0.
Standard library only: it runs whatever goldset the previous step installed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

VERDICTS = {0: "pass", 1: "fail", 3: "inconclusive"}  # goldset compare --gate's exit codes


def main() -> int:
    """Run the gate, report it where GitHub looks, and return the step's exit status."""
    inconclusive = os.environ.get("GOLDSET_INCONCLUSIVE", "pass").strip() or "pass"
    if inconclusive not in ("pass", "fail"):
        annotate("error", f"inconclusive must be pass or fail, got {inconclusive!r}")
        return 2
    command = [
        "goldset",
        "compare",
        "--golden",
        required("GOLDSET_GOLDEN"),
        "--baseline",
        required("GOLDSET_BASELINE"),
        "--candidate",
        required("GOLDSET_CANDIDATE"),
        *shlex.split(os.environ.get("GOLDSET_ARGS", "")),
        "--gate",
        "--format",
        "markdown",
    ]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    verdict = VERDICTS.get(completed.returncode, "error")
    if verdict == "error":
        message = completed.stderr.strip() or completed.stdout.strip() or "goldset failed"
        append("GITHUB_STEP_SUMMARY", f"## Release gate: error\n\n```\n{message}\n```\n")
        annotate("error", message)
    else:
        append("GITHUB_STEP_SUMMARY", completed.stdout)
        if verdict == "fail":
            annotate("error", "the candidate regresses: see the job summary")
        elif verdict == "inconclusive":
            annotate(
                "error" if inconclusive == "fail" else "warning",
                "the CIs cannot decide every rule yet: see the job summary for how many more "
                "queries would",
            )
    append("GITHUB_OUTPUT", f"verdict={verdict}\nexit-code={completed.returncode}\n")
    if verdict == "error":
        return 2
    return 1 if verdict == "fail" or (verdict == "inconclusive" and inconclusive == "fail") else 0


def required(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        annotate("error", f"the input {name.removeprefix('GOLDSET_').lower()} is required")
        raise SystemExit(2)
    return value


def append(variable: str, text: str) -> None:
    """Append to the file GitHub names in ``variable`` (nothing when run elsewhere)."""
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def annotate(level: str, message: str) -> None:
    """A workflow command GitHub shows on the run; the message escaped as GitHub asks."""
    escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::{level} title=Release gate::{escaped}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
