"""Dashboard speed: the live figures of a project with 100,000 labelled queries x 20 candidates.

    python bench/dashboard_speed.py [--queries 100000] [--candidates 20]
    python bench/dashboard_speed.py --db bench/out/dashboard.db    # build once, then reuse

Builds the project through the store's API: the synthetic tasks of import_speed.py, then a
seeded simulated team of four annotators labels every query in first-hit mode through
``Store.judge`` and ``Store.mark`` (first relevant at a geometric rank, some misses, some
unanswerable, a few skipped). Then it times two things:

- the page after a server restart: in a fresh Python process each time (nothing in
  memory, no warm code), the dashboard page (labeler/views/dashboard.py) rendered by
  Streamlit's AppTest on the project, server side: opening the project (as the app does),
  the first render after the start (the figures an earlier server life kept in the project,
  served at once while the current ones are computed in the background), a render with
  nothing new; then one new label, and new
  sessions render the page every second until it names the new golden set version: the
  render right after the label, and the seconds until the label shows (an incremental
  update: only the labelled query is read and ranked again).
  The process's start-up (imports) and AppTest's own harness cost (an empty script, part of
  every AppTest figure) are shown apart, and so is the integrity check, which runs in the
  background from the open on (writes wait for it). Targets (bench/README.md): first
  render under a second; a new label shown without a full recompute.
- the computation behind it (labeler.live): each part, cold; then, after one more
  judgement (median of ``UPDATES`` in a row), how long the dashboard's refresher takes to
  serve (the previous figures) and to have the new ones ready (computed in the background,
  incrementally: the run's top k, its ranking, the golden set and the work figures are
  kept; only the changed query and the new events are read, only that query is ranked
  again, and the report is built from the spliced ranking).

Prints the timings in seconds and writes bench/out/dashboard_speed.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
from _common import add_project_options, measure
from import_speed import import_synthetic
from streamlit.testing.v1 import AppTest

from goldset.labeler import live
from goldset.labeler.store import Store

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[1]
ANNOTATORS = ("ana", "ben", "chen", "dara")
DASHBOARD_PAGE = REPO / "labeler" / "views" / "dashboard.py"
READY_PREFIX, FIGURE_PREFIX = "READY", "FIGURE "
POLL_SECONDS = 1.0  # between a visitor's renders while waiting for a new label to show
UPDATES = 5  # judgements in a row whose incremental refresh is timed (median)


def build(path: Path, queries: int, candidates: int, seed: int = 0) -> dict[str, float]:
    """Import the synthetic tasks and label every query; return the seconds of each step."""
    with Store(path) as store:
        imported = import_synthetic(store, queries, candidates)
        started = time.perf_counter()
        label_everything(store, queries, candidates, np.random.default_rng(seed))
    return {"import": imported, "labelling": time.perf_counter() - started}


def label_everything(store: Store, queries: int, candidates: int, rng: np.random.Generator) -> None:
    """A simulated team labels each query top-down in first-hit mode, as the app would."""
    outcome = rng.choice(
        ["relevant", "miss", "unanswerable", "skip"], size=queries, p=[0.74, 0.10, 0.12, 0.04]
    )
    first_relevant = np.minimum(rng.geometric(0.45, size=queries), candidates)
    non_relevant_before_verdict = rng.integers(2, 6, size=queries)
    seconds = rng.lognormal(np.log(8.0), 0.6, size=(queries, candidates)).round(2)
    for number in range(queries):
        query_id, annotator = f"q{number}", ANNOTATORS[number % len(ANNOTATORS)]
        kind = outcome[number]
        judged = {
            "relevant": first_relevant[number] - 1,
            "skip": 0,
        }.get(kind, non_relevant_before_verdict[number])
        for rank in range(judged):
            store.judge(query_id, f"d{number}-{rank}", 0, annotator, float(seconds[number, rank]))
        if kind == "relevant":
            doc_id = f"d{number}-{judged}"
            store.judge(query_id, doc_id, 1, annotator, float(seconds[number, judged]))
        else:
            store.mark(query_id, kind, annotator, float(seconds[number, judged]))


def timed(action) -> float:
    """Seconds that ``action()`` took."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def one_more_judgement(store: Store) -> None:
    """A new label on a done query: its annotator changes a grade, so the golden set changes
    (a grade flipped between 0 and 1 by each call, so that a reused project changes too)."""
    events = dict(live.ProjectState.of(store).marks)["events"]
    store.judge("q0", "d0-19", events % 2, ANNOTATORS[0], seconds=5.0)


def shown_version(page: AppTest) -> str:
    """The golden set version that the rendered dashboard names in its header line."""
    for element in page.get("html"):
        found = re.search(r"golden set ([0-9a-f]+)", element.proto.body)
        if found:
            return found.group(1)
    raise RuntimeError("the dashboard shows no golden set version")


def rendered(page: AppTest) -> AppTest:
    """``page``, run once; raises if the page failed."""
    page.run()
    if page.exception:
        raise RuntimeError(f"the dashboard page failed: {page.exception}")
    return page


def opened(db: Path) -> Store:
    """Open the project as the app's first session does: its integrity check (once per
    process) starts in the background."""
    return Store.open_project(db, write=True, background_check=True)


def keep_figures(db: Path) -> None:
    """Compute the dashboard's figures once, as a server would, so that they are kept in the
    project for the next start (the page's default view: the candidate lists)."""
    with Store(db) as store:
        state = live.ProjectState.of(store)
    live.dashboard_refresher(str(db), None).get(state)


def server_life(db: Path, label_timeout: float) -> None:
    """One server life, in this fresh process (run by :func:`time_page`): the first render
    after the start, a render with nothing new, then one new label and the renders a visitor
    would see until the page shows figures that include it (None if not within
    `label_timeout` seconds). Prints each figure as soon as it is measured."""
    os.environ["GOLDSET_DB"] = str(db)

    def page() -> AppTest:  # each is a new session on this one server
        return AppTest.from_file(str(DASHBOARD_PAGE), default_timeout=3600)

    def report(name: str, seconds: float | None) -> None:
        print(FIGURE_PREFIX + json.dumps([name, seconds]), flush=True)

    # Opening a project checks its integrity once per process (Store.open_project's
    # quick_check reads the whole file): in the background, while the first page renders.
    started = time.perf_counter()
    first_session = opened(db)
    report("opening the project (as the app)", time.perf_counter() - started)
    report("first render after a restart", timed(lambda: rendered(page())))
    first_session.wait_for_integrity_check()
    report("integrity check done (background)", time.perf_counter() - started)
    first_session.close()
    started = time.perf_counter()
    before = shown_version(rendered(page()))
    report("render with nothing new", time.perf_counter() - started)
    with Store(db) as store:
        one_more_judgement(store)
    labelled = time.perf_counter()
    latest = rendered(page())
    report("render right after a new label", time.perf_counter() - labelled)
    while shown_version(latest) == before and time.perf_counter() - labelled < label_timeout:
        time.sleep(POLL_SECONDS)
        latest = rendered(page())
    shown = shown_version(latest) != before
    report("new label shown after", time.perf_counter() - labelled if shown else None)
    report("AppTest harness (empty script)", timed(AppTest.from_string("").run))


def time_page(db: Path, label_timeout: float) -> dict[str, float | None]:
    """A server restart: :func:`server_life` in a fresh Python process, so that nothing
    (Streamlit's caches, the dashboard's refresher, warm code) survives from an earlier run;
    with the process's start-up (imports) timed apart."""
    command = [sys.executable, __file__, "--server-life", str(db), "--label-timeout"]
    measurement = measure([*command, str(label_timeout)])
    timings = {"server start (imports)": measurement.seconds_until(READY_PREFIX)}
    for _, line in measurement.stdout_lines:
        if line.startswith(FIGURE_PREFIX):
            name, seconds = json.loads(line[len(FIGURE_PREFIX) :])
            timings[name] = seconds
    return timings


def time_computation(store: Store) -> dict[str, float]:
    """Each part of the dashboard's figures, cold; then what its refresher computes (in the
    background) after one more judgement, the run's top k being kept."""
    timings = {"golden set": timed(lambda: live.golden_set(store))}
    timings["run's top 11"] = timed(lambda: live.project_run(store))
    golden, run = live.golden_set(store), live.project_run(store)
    timings["cost summary"] = timed(lambda: live.cost_summary(store))
    measured = live.cost_summary(store)
    timings["snapshot (eval report, CIs)"] = timed(lambda: live.snapshot(golden, run, measured))
    timings["coverage and throughput"] = timed(
        lambda: (live.coverage(store), live.throughput(store), store.status())
    )
    refresher = live.dashboard_refresher(str(store.path), None, pace=0)
    refresher.get(live.ProjectState.of(store))  # the kept figures, at once
    while refresher.computing():  # the start's warm-up: the run and golden set read once
        time.sleep(0.1)
    served, refreshed = [], []
    for _ in range(UPDATES):
        one_more_judgement(store)
        state = live.ProjectState.of(store)
        started = time.perf_counter()
        served.append(timed(partial(refresher.get, state)))
        while not refresher.current(state):
            time.sleep(0.1)  # rarely: the main thread would slow the background one down
            refresher.get(state)
        refreshed.append(time.perf_counter() - started)
    timings["served after a judgement"] = statistics.median(served)
    timings["refresh after a judgement (incremental)"] = statistics.median(refreshed)
    return timings


def median_or_none(values: list[float | None]) -> float | None:
    """The median, rounded to ms; None if any run gave none (a label not shown in time)."""
    return None if None in values else round(statistics.median(values), 3)


def main() -> None:
    """Build (or reuse) the project, time the dashboard, print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_project_options(parser)
    parser.add_argument("--repeat", type=int, default=3, help="Timings per figure (median).")
    parser.add_argument(
        "--label-timeout",
        type=float,
        default=900.0,
        help="Seconds to wait for a new label to show (900); longer is reported as null.",
    )
    parser.add_argument("--server-life", type=Path, help=argparse.SUPPRESS)  # time_page's child
    options = parser.parse_args()
    if options.server_life:
        importlib.import_module("goldset.labeler.app")  # what `streamlit run` imports at its start
        print(READY_PREFIX, flush=True)
        server_life(options.server_life, options.label_timeout)
        return

    with tempfile.TemporaryDirectory() as scratch:
        db = options.db or Path(scratch) / "dashboard.db"
        build_seconds = None
        if not db.exists():
            build_seconds = build(db, options.queries, options.candidates)
            print(
                f"built {options.queries:,} queries x {options.candidates}: import "
                f"{build_seconds['import']:.0f} s, labelling {build_seconds['labelling']:.0f} s"
            )
        keep_figures(db)  # an earlier server life, whose figures the next start serves
        load = os.getloadavg()[0]
        page_runs = [time_page(db, options.label_timeout) for _ in range(options.repeat)]
        with Store(db) as store:
            computation_runs = [time_computation(store) for _ in range(options.repeat)]
            status = store.status()

    done = sum(counts["done"] for counts in status["slices"].values())
    print(
        f"project: {status['queries']:,} queries ({done:,} done), "
        f"{status['judgements']:,} judgements, {status['events']:,} events; "
        f"median of {options.repeat} runs; load average {load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end, {os.cpu_count()} CPUs"
    )
    figures = {}
    for title, runs in (("page", page_runs), ("computation", computation_runs)):
        print(title)
        figures[title] = {name: median_or_none([r[name] for r in runs]) for name in runs[0]}
        for name, seconds in figures[title].items():
            shown = "not within --label-timeout" if seconds is None else f"{seconds:7.3f} s"
            print(f"  {name:<40} {shown}")
    OUT.mkdir(exist_ok=True)
    result = {
        "queries": status["queries"],
        "done": done,
        "judgements": status["judgements"],
        "build_seconds": build_seconds,
        "seconds": figures,
        "runs": {"page": page_runs, "computation": computation_runs},
        "load_average_1m_at_start": load,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    (OUT / "dashboard_speed.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
