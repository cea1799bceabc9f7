"""Helpers shared by the benchmark scripts in bench/: measuring a child process, printing tables."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
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


# The program of the small process that starts each measured child (see measure): it runs
# the command, prints each of its lines behind the seconds since its start, then the child's
# resource usage.
LAUNCHER = """
import json, os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)
for line in child.stdout:
    ending = "" if line.endswith("\\n") else "\\n"
    sys.stdout.write(f"{time.perf_counter() - started:.6f} {line}{ending}")
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - started
code = os.waitstatus_to_exitcode(status)
cpu = usage.ru_utime + usage.ru_stime
sys.stdout.write("\\n" + json.dumps([code, wall, cpu, usage.ru_maxrss]) + "\\n")
"""


def measure(command: Sequence[str], *, env: dict[str, str] | None = None) -> Measurement:
    """Run `command` to completion; return its wall time, peak RSS and timestamped stdout.

    The child is started by a small Python process (``python -S``, about 10 MiB), not by this
    one: on Linux a child inherits, across ``exec``, the peak RSS of the process it was forked
    from, so every child of a benchmark that holds 100 MiB would report at least 100 MiB.
    That process takes the child's own usage from ``os.wait4`` (``ru_maxrss``, in KiB).
    Raises RuntimeError, with the end of the child's stderr, when the child fails.
    """
    with tempfile.TemporaryFile() as stderr:
        launcher = [sys.executable, "-S", "-c", LAUNCHER, *command]
        done = subprocess.run(launcher, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        # The launcher fails only when the command cannot start (then it prints no usage).
        code = done.returncode
        if code == 0:
            *output, usage = done.stdout.split("\n")[:-1]
            code, wall_seconds, cpu_seconds, max_rss_kib = json.loads(usage)
        if code != 0:
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace")[-3000:]
            raise RuntimeError(f"{' '.join(command)} exited with {code}:\n{tail}")
    lines = []
    for line in output[:-1]:  # the last one is the blank line before the usage
        seconds, _, text = line.partition(" ")
        lines.append((float(seconds), text + "\n"))
    return Measurement(wall_seconds, cpu_seconds, max_rss_kib / 1024, lines)


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
