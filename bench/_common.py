"""Helpers shared by the benchmark scripts in bench/: measuring a child process, printing tables."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measurement:
    """Wall time, peak memory and timestamped output of one child process."""

    wall_seconds: float
    cpu_seconds: float  # user + system time of the whole process
    peak_rss_mib: float
    stdout_lines: list[tuple[float, str]]  # (seconds since the child was started, line)

    def seconds_until(self, prefix: str) -> float:
        """Seconds from the child's start until it printed the first line starting with `prefix`."""
        for seconds, line in self.stdout_lines:
            if line.startswith(prefix):
                return seconds
        raise ValueError(f"the child never printed a line starting with {prefix!r}")

    def stdout(self) -> str:
        """The child's whole standard output."""
        return "".join(line for _, line in self.stdout_lines)


def measure(command: Sequence[str], *, env: dict[str, str] | None = None) -> Measurement:
    """Run `command` to completion; return its wall time, peak RSS and timestamped stdout.

    Peak RSS comes from `os.wait4`, which returns the resource usage of that one child
    (and of any children it waited for). `resource.getrusage(RUSAGE_CHILDREN).ru_maxrss` would
    instead give the largest child seen so far, so a small child measured after a big one would
    inherit the big one's figure. On Linux `ru_maxrss` is in KiB.
    Raises RuntimeError, with the end of the child's stderr, when the child fails.
    """
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        lines = [(time.perf_counter() - started, line) for line in child.stdout]
        _, status, usage = os.wait4(child.pid, 0)
        wall_seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it was reaped
        child.stdout.close()
        if child.returncode != 0:
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace")[-3000:]
            raise RuntimeError(f"{' '.join(command)} exited with {child.returncode}:\n{tail}")
    return Measurement(wall_seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, lines)


def add_project_options(parser: argparse.ArgumentParser) -> None:
    """``--queries``, ``--candidates`` and ``--db``: the options of scripts that build a project."""
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--db", type=Path, help="Keep the project here; reuse it if it exists.")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Render rows as a plain-text table with left-aligned first column, right-aligned others."""
    cells = [list(map(str, headers))] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[column]) for row in cells) for column in range(len(headers))]

    def render(row: list[str]) -> str:
        first, *rest = zip(row, widths, strict=True)
        return "  ".join([first[0].ljust(first[1])] + [cell.rjust(width) for cell, width in rest])

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([render(cells[0]), rule] + [render(row) for row in cells[1:]])


def write_json(path: Path, payload: object) -> None:
    """Write `payload` as indented JSON, creating the parent directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n")
