"""Key press to page update in Chromium, on the label page of a 100,000 queries x 20 project.

    python bench/browser_latency.py [--queries 100000] [--candidates 20] [--presses 120]
    python bench/browser_latency.py --db bench/out/keypress.db   # build once, then reuse

Builds the project as keypress_speed.py does, serves the app (``streamlit run`` on loopback),
opens the label page in Debian's Chromium (Playwright, /usr/bin/chromium) and types an
annotator's first-hit presses (keypress_speed.PATTERN: grades, now and then a skip or an
undo) ``--gap-ms`` apart. A listener in the page, registered before the app's own, takes the
time each keydown reached the browser (``event.timeStamp``) and of:

- visible: the first animation frame after the first change of the page that follows the
  keydown (what the annotator sees change: the cursor moves, a card is marked, or the panel
  greys while the server works out a completed query);
- saved: the moment the press is acknowledged, i.e. committed by the server (the key
  badge stops saying "saving…"); a press typed while the one before is still unacknowledged
  is acknowledged with it and counted once.

Prints median, 95th percentile and maximum of both, in milliseconds, and writes
bench/out/browser_latency.json. Target (bench/README.md): visible p95 under 50 ms.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from _common import add_project_options
from keypress_speed import PATTERN, build, summary
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))  # the browser tests' app runner and waits

from e2e_support import open_app, streamlit_app, wait_idle  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
CHROMIUM = "/usr/bin/chromium"

# Registered on window in the capture phase, so it runs before the key listener on document.
PROBE = """() => {
    const lat = (window.__latency = { visible: [], saved: [] });
    let typedAt = null, seen = true, saving = false;
    window.addEventListener("keydown", (event) => {
        // When the browser received the key, not when a busy page got round to it.
        typedAt = event.timeStamp; seen = false; saving = true;
    }, true);
    new MutationObserver((records) => {
        if (typedAt === null) return;
        const at = typedAt;
        // The root's "saving" flag is no visible change; the cards, panel and text are.
        const visible = records.some((r) => r.target !== document.documentElement);
        if (!seen && visible) {
            seen = true;
            requestAnimationFrame(() => lat.visible.push(performance.now() - at));
        }
        if (saving && document.documentElement.dataset.goldsetSaving !== "1") {
            saving = false;
            lat.saved.push(performance.now() - at);
        }
    }).observe(document.documentElement, { subtree: true, childList: true, attributes: true,
                                           characterData: true });
}"""


def type_presses(url: str, presses: int, gap_ms: int) -> dict[str, list[float]]:
    """Open the label page, type ``presses`` keys ``gap_ms`` apart; return the latencies."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(120_000)  # the first page of a fresh server on a big project
        open_app(page, url)
        page.evaluate(PROBE)
        for number in range(presses):
            page.keyboard.press(PATTERN[number % len(PATTERN)])
            page.wait_for_timeout(gap_ms)
        wait_idle(page)  # every press acknowledged
        latency = page.evaluate("() => window.__latency")
        browser.close()
    return latency


def main() -> None:
    """Build or reuse the project, serve it, type, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_project_options(parser)
    parser.add_argument("--presses", type=int, default=120)
    parser.add_argument("--gap-ms", type=int, default=250, help="Time between presses.")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = options.db or Path(scratch) / "latency.db"
        if not db.exists():
            seconds = build(db, options.queries, options.candidates)
            print(f"imported {options.queries:,} queries x {options.candidates} in {seconds:.1f} s")
        started = time.perf_counter()
        with streamlit_app(REPO / "labeler" / "app.py", {"GOLDSET_DB": str(db)}) as url:
            latency = type_presses(url, options.presses, options.gap_ms)
        print(f"typed {options.presses} presses in {time.perf_counter() - started:.0f} s")
    figures = {part: {"presses": len(v), **summary(v)} for part, v in latency.items()}
    print(f"{'ms':<8} {'presses':>8} {'median':>8} {'p95':>8} {'max':>8}")
    for part, figure in figures.items():
        print(
            f"{part:<8} {figure['presses']:>8} {figure['median']:>8.1f} {figure['p95']:>8.1f} "
            f"{figure['max']:>8.1f}"
        )
    OUT.mkdir(exist_ok=True)
    result = {**{k: v for k, v in vars(options).items() if k != "db"}, "ms": figures}
    (OUT / "browser_latency.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
