"""Server time per key press in the label page, on a project of 100,000 queries x 20 candidates.

    python bench/keypress_speed.py [--queries 100000] [--candidates 20] [--presses 600]
    python bench/keypress_speed.py --db bench/out/keypress.db   # build once, then reuse

Builds the project through the store's import (the synthetic tasks of import_speed.py), labels
some queries to warm it up, then replays an annotator's key presses through the same code the
page runs for each press (labeler.judging.LabelSession):

- press: the action itself — the store write (one committed event) and, when the query is done,
  finding the next query;
- page: the rerun's one read (LabelSession.page) — the open query, the one fetched ahead, the
  one Z returns to, what Z undoes, progress and the history strip.

Presses follow a first-hit pattern ("1", "01", "001", "0001", ... and now and then a skip or an
undo). Prints median, 95th percentile and maximum per part and in total, in milliseconds, and
writes bench/out/keypress_speed.json. Target: total under 50 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import add_project_options
from import_speed import import_synthetic

from goldset.labeler.judging import LabelSession
from goldset.labeler.store import Store

OUT = Path(__file__).resolve().parent / "out"
PATTERN = ["1", "0", "1", "0", "0", "1", "s", "0", "0", "0", "1", "z", "0", "1"]


def build(path: Path, queries: int, candidates: int) -> float:
    """Import the synthetic project; return the seconds it took."""
    with Store(path) as store:
        return import_synthetic(store, queries, candidates)


def replay(session: LabelSession, presses: int, first_seq: int = 1) -> dict[str, list[float]]:
    """Apply ``presses`` keys as the app does (each press recorded with its browser page and
    number); return the milliseconds of each part of each press."""
    timings: dict[str, list[float]] = {"press": [], "page": [], "total": []}
    for number in range(presses):
        key = PATTERN[number % len(PATTERN)]
        started = time.perf_counter()
        session.press_typed(key, page="bench", seq=first_seq + number)
        pressed = time.perf_counter()
        if session.message.startswith("Not done"):
            raise RuntimeError(f"a press was refused, not measured: {session.message}")
        session.page()
        finished = time.perf_counter()
        for part, seconds in (
            ("press", pressed - started),
            ("page", finished - pressed),
            ("total", finished - started),
        ):
            timings[part].append(seconds * 1000)
    return timings


def summary(values: list[float]) -> dict[str, float]:
    """Median, 95th percentile and maximum, rounded to 0.01 ms."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": round(statistics.median(ordered), 2),
        "p95": round(p95, 2),
        "max": round(ordered[-1], 2),
    }


def main() -> None:
    """Build the project, replay the presses, print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_project_options(parser)
    parser.add_argument("--presses", type=int, default=600)
    parser.add_argument("--warm-up", type=int, default=2_000, help="Presses before measuring.")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        db = options.db or Path(scratch) / "keypress.db"
        import_seconds = None
        if not db.exists():
            import_seconds = build(db, options.queries, options.candidates)
            size = f"{options.queries:,} queries x {options.candidates}"
            print(f"imported {size} in {import_seconds:.1f} s")
        with Store(db) as store:
            # A new annotator each run, so that a reused project measures a fresh queue.
            annotator = f"bench-{time.time_ns()}"
            store.add_annotator(annotator)
            session = LabelSession(store, annotator)
            replay(session, options.warm_up)
            timings = replay(session, options.presses, first_seq=options.warm_up + 1)
            status = store.status()
    print(f"project: {status['queries']:,} queries, {status['events']:,} events stored")
    figures = {part: summary(values) for part, values in timings.items()}
    print(f"{options.presses} presses measured after {options.warm_up} warm-up presses")
    print(f"{'ms per press':<12} {'median':>8} {'p95':>8} {'max':>8}")
    for part, figure in figures.items():
        print(f"{part:<12} {figure['median']:>8.2f} {figure['p95']:>8.2f} {figure['max']:>8.2f}")
    OUT.mkdir(exist_ok=True)
    result = {
        **{name: value for name, value in vars(options).items() if name != "db"},
        "import_seconds": import_seconds and round(import_seconds, 1),
        "ms": figures,
    }
    (OUT / "keypress_speed.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
