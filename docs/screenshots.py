"""Screenshots of every page of the app, for the README: ``python docs/screenshots.py``.

Builds a demo project in a temporary folder (the bundled demo set, labelled by two annotators
who disagree on a few queries, two run files and a short run history), serves it with
``goldset app`` on a free loopback port, and photographs each page in Debian's Chromium at
1280×800 and 1920×1080 into ``docs/screenshots/`` (``PAGE-WIDTHxHEIGHT.png``).

    python docs/screenshots.py                      # every page, both sizes
    python docs/screenshots.py --page dashboard --size 1280x800 --out /tmp/shots
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]  # the tests' helpers
from e2e_support import free_port, wait_healthy, wait_idle  # noqa: E402
from test_live import label  # noqa: E402 - judges top-down to a first relevant rank

from goldset.labeler import live  # noqa: E402
from goldset.labeler.store import DEMO_TASKS, Store  # noqa: E402

PAGES = {  # name: URL path of the page
    "label": "",
    "dashboard": "dashboard",
    "compare": "compare",
    "planner": "planner",
    "review": "review",
    "admin": "admin",
}
SIZES = ("1280x800", "1920x1080")
FOCUS = {  # the part of a page worth the screenshot, when it is not the top
    "compare": "Paired comparison",
    "review": "Disagreement to decide",
}
OUT = REPO / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]

# First relevant rank per query (None: a miss) for each annotator; ana and bob overlap on the
# first four and disagree on two of them, so the review page has a queue.
LABELS = {
    "ana": {"q01": 1, "q02": 3, "q03": None, "q04": 2, "q08": 1, "q09": 2, "q10": 1, "q11": 4},
    "bob": {"q01": 1, "q02": 1, "q03": None, "q04": 5, "q12": 1, "q13": None, "q14": 2},
}
UNANSWERABLE = ("q05", "q06")


def build_project(path: Path, folder: Path) -> list[Path]:
    """The demo project with labels, two run files (returned) and a run history."""
    with Store(path) as store:
        store.import_tasks(DEMO_TASKS)
        for annotator, ranks in LABELS.items():
            for query_id, rank in ranks.items():
                label(store, query_id, rank, annotator)
        for query_id in UNANSWERABLE:
            store.mark(query_id, "unanswerable", "ana", seconds=6.0)
        store.mark("q07", "skip", "ana", seconds=2.0)
        frame = store.candidate_run_frame()
    runs = []
    rank = frame.sort_values("score", ascending=False, kind="stable").groupby("query_id").cumcount()
    rank = rank.reindex(frame.index) + 1
    # dense swaps ranks 1 and 2 and returns nothing at ranks 3 to 5: it moves some queries up,
    # some down, and misses the answers that were there
    for name, new_rank in (("bm25", rank), ("dense", rank.replace({1: 2, 2: 1}))):
        kept = (new_rank < 3) | (new_rank > 5) if name == "dense" else new_rank > 0
        ranked = frame[kept].assign(score=1 / new_rank[kept])
        lines = [f"{r.query_id} Q0 {r.doc_id} 0 {r.score} {name}" for r in ranked.itertuples()]
        file = folder / f"{name}.trec"
        file.write_text("\n".join(lines) + "\n")
        runs.append(file)
    with Store(path) as store:
        golden = live.golden_set(store)
        for version, file in enumerate(runs):
            run = live.read_uploaded_run(file.name, file.read_bytes())
            live.record_run(store, golden, run, f"{version:064x}", {"model": run.name})
    return runs


def photograph(page: Page, url: str, name: str, runs: list[Path], out: Path, size: str) -> Path:
    """Open one page, bring it to the state worth showing, and save the screenshot."""
    page.goto(f"{url}/{PAGES[name]}")
    page.get_by_test_id("stApp").wait_for()
    wait_idle(page, timeout=60_000)
    if name == "compare":
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(runs)
        page.get_by_text("Release gate:").first.wait_for(timeout=60_000)
    wait_idle(page, timeout=60_000)
    if name in FOCUS:
        focus = page.get_by_text(FOCUS[name], exact=True).first
        focus.evaluate("element => element.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(800)  # charts draw after the script finished
    path = out / f"{name}-{size}.png"
    page.screenshot(path=path)
    return path


def main(argv: list[str] | None = None) -> None:
    """Take the screenshots (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", action="append", choices=list(PAGES), help="repeatable")
    parser.add_argument("--size", action="append", choices=SIZES, help="repeatable")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "demo.db"
        runs = build_project(db, Path(folder))
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-c", "from labeler.cli import cli; cli()", "app"]
            + ["--db", str(db), "--port", str(port), "--no-open"],
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, server, timeout=60)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for size in args.size or SIZES:
                    width, height = map(int, size.split("x"))
                    context = browser.new_context(viewport={"width": width, "height": height})
                    page = context.new_page()
                    for name in args.page or PAGES:
                        print(photograph(page, url, name, runs, args.out, size))
                    context.close()
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=15)


if __name__ == "__main__":
    main()
