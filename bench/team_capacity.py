"""Team capacity: N signed-in annotators, each pressing a key every 1.5 s, on 1 or more processes.

    python bench/team_capacity.py --annotators 16 --processes 1
    python bench/team_capacity.py --annotators 16 --processes 2            # behind Caddy
    python bench/team_capacity.py --annotators 16 --browser                # one of them in Chromium
    python bench/team_capacity.py --setting runner.postScriptGC=true \
        --setting server.fileWatcherType=auto                              # Streamlit's defaults

Builds (or reuses, ``--db``) the project of keypress_speed.py (100,000 queries x 20
candidates), adds ``--annotators`` fresh users, each dealt queries nobody else has (so that the
export tells whose judgements are whose), and serves it as ``goldset app`` does
(``goldset.labeler.launch.streamlit_command``: the shipped settings); with ``--processes`` above 1,
that many processes behind Caddy with the Caddyfile of docs/scaling.md. Each annotator is a
light client speaking the app's own protocol over its websocket
(``tests/helpers/stream_client.py``: signed in with the session cookie, presses sent through
the label page's key listener as the browser sends them), so that one load-generating process
drives the whole team; ``--browser`` makes one of them a Chromium page (what the annotator sees
change, timed as browser_latency.py does).

Annotators start spread evenly over one gap and press first-hit keys (``1``, ``0 1``,
``0 0 1``...) every ``--gap`` seconds for ``--seconds``. Reported:

- server CPU per press: the app processes' user + system CPU from the first press to the
  last acknowledgement, divided by the presses (Caddy's own CPU beside it);
- acknowledgement: press sent -> the server's answer saying it is committed (median, p95, max);
- repaint: press sent -> the end of the run that answered it (the whole panel sent);
- visible (``--browser`` only): keydown -> the page's first change, in Chromium;
- lost or doubled: every annotator's judgements in the export (``goldset export``) against the
  presses acknowledged to them;
- server memory per session: the app processes' RSS with the team connected, minus before,
  per annotator; and its growth over the run;
- the load generator's own lag: how late each press left against its schedule, and its CPU.

Writes bench/out/team_capacity.json (every figure) and prints a table row for the README.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from _common import format_table, write_json
from browser_latency import CHROMIUM, PROBE
from keypress_speed import build, summary
from playwright.async_api import Page, async_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]  # the client, the runners

from e2e_proxy import caddy_proxy  # noqa: E402
from e2e_support import free_port, serving  # noqa: E402
from helpers.stream_client import StreamAnnotator, browser_cookies  # noqa: E402

from goldset.labeler.launch import DB_ENV, streamlit_command  # noqa: E402
from goldset.labeler.store import Store  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
DEFAULT_DB = OUT / "team-100000.db"
KEYS = "1010010001"  # first-hit: a relevant doc at rank 1, 2, 1, 3, 4 ... (grades only)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Server:
    """The app processes and, with several, the proxy in front of them."""

    url: str
    processes: list[subprocess.Popen]
    proxy: subprocess.Popen | None = None


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_rss_mib(pid: int) -> float:
    """Resident memory of process ``pid``, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for process {pid}")


@contextmanager
def app_process(db: Path, extra_flags: list[str]) -> Iterator[tuple[str, subprocess.Popen]]:
    """One app process, started as ``goldset app`` starts it, on a free loopback port."""
    port = free_port()
    command = [*streamlit_command("127.0.0.1", port), *extra_flags]
    with serving(command, port, {DB_ENV: str(db)}, timeout=120) as served:
        yield served


@contextmanager
def serve(db: Path, processes: int, extra_flags: list[str]) -> Iterator[Server]:
    """``processes`` app processes on ``db``; behind Caddy when more than one."""
    with ExitStack() as stack:
        started = [stack.enter_context(app_process(db, extra_flags)) for _ in range(processes)]
        urls, popens = [url for url, _ in started], [popen for _, popen in started]
        if processes == 1:
            yield Server(urls[0], popens)
            return
        upstreams = [url.removeprefix("http://") for url in urls]
        proxy_url, proxy = stack.enter_context(caddy_proxy(upstreams))
        yield Server(proxy_url, popens, proxy)


def add_team(db: Path, count: int, queries_each: int) -> list[str]:
    """``count`` new annotators (fresh names each run), each dealt ``queries_each`` queries
    that nobody has labelled or been dealt: every query of the run has one annotator, so the
    export tells whose judgements are whose."""
    stamp = f"{time.time_ns() // 1_000_000 % 10**8:08d}"
    names = [f"team{stamp}-{number:02d}" for number in range(1, count + 1)]
    with Store(db) as store:
        taken = store.assignees()
        total = store.status()["queries"]  # the synthetic queries are q0, q1, ...
        ids = (f"q{number}" for number in range(random.randrange(total // 2), total))
        fresh = (i for i in ids if i not in taken and not store.labels(i))
        plan = {name: [next(fresh) for _ in range(queries_each)] for name in names}
        for name in names:
            store.add_annotator(name, role="annotator")
        store.assign_plan(plan)
    return names


async def warm_up(server: Server, db: Path, name: str) -> None:
    """Load the label page and apply one press on every process, then disconnect, so that
    the measurement starts with every process past its first page view."""
    for process in server.processes:
        url = server.url if server.proxy is None else _direct_url(process)
        annotator = StreamAnnotator(url, browser_cookies(url, db, name))
        await annotator.open()
        await annotator.wait_acknowledged(await annotator.press("1"))
        await annotator.close()


def _direct_url(process: subprocess.Popen) -> str:
    """The address of an app process, from its command line's ``--server.port``."""
    arguments = process.args
    return f"http://127.0.0.1:{arguments[arguments.index('--server.port') + 1]}"


async def annotate(annotator: StreamAnnotator, start: float, presses: int, gap: float) -> list:
    """Press ``presses`` keys ``gap`` seconds apart from ``start`` (monotonic); return how
    late each left, in seconds."""
    lags = []
    for number in range(presses):
        due = start + number * gap
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        lags.append(time.monotonic() - due)
        await annotator.press(KEYS[number % len(KEYS)])
    await annotator.wait_acknowledged(annotator.last_press, timeout=120)
    return lags


# The page has applied and the server committed every press typed (see e2e_support.wait_idle).
SETTLED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app && app.dataset.testScriptState === "notRunning"
        && document.documentElement.dataset.goldsetSaving !== "1";
}"""


@asynccontextmanager
async def chromium_page(url: str, cookies: dict[str, str]) -> AsyncIterator[Page]:
    """The label page in Chromium, signed in with ``cookies``, its key listener mounted and
    browser_latency.py's probe installed."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = await browser.new_context(viewport={"width": 1280, "height": 720})
        await context.add_cookies([{"name": k, "value": v, "url": url} for k, v in cookies.items()])
        page = await context.new_page()
        page.set_default_timeout(120_000)
        await page.goto(url)
        await page.locator(".goldset-keys[data-ready='1']").wait_for(state="attached")
        await page.wait_for_function(SETTLED)
        await page.evaluate(PROBE)
        try:
            yield page
        finally:
            await browser.close()


async def type_in_browser(page: Page, start: float, presses: int, gap: float) -> dict:
    """Type ``presses`` keys in ``page``, ``gap`` seconds apart from ``start``; return the
    probe's latencies (visible, saved: milliseconds) once every press is committed."""
    for number in range(presses):
        await asyncio.sleep(max(0.0, start + number * gap - time.monotonic()))
        await page.keyboard.press(KEYS[number % len(KEYS)])
    await page.wait_for_function(SETTLED)
    return await page.evaluate("() => window.__latency")


async def run_team(server: Server, db: Path, names: list[str], options) -> dict:
    """Warm the server up as ``names[0]``, open the others' pages, let them press, and
    measure the server meanwhile."""
    pids = [process.pid for process in server.processes]
    await warm_up(server, db, names[0])
    names, browser_name = (names[1:-1], names[-1]) if options.browser else (names[1:], None)
    rss_before = sum(map(process_rss_mib, pids))
    annotators = [StreamAnnotator(server.url, browser_cookies(server.url, db, n)) for n in names]
    for annotator in annotators:
        await annotator.open()
    async with AsyncExitStack() as stack:
        page = None
        if browser_name:
            cookies = browser_cookies(server.url, db, browser_name)
            page = await stack.enter_async_context(chromium_page(server.url, cookies))
        rss_open = sum(map(process_rss_mib, pids))
        presses = int(options.seconds / options.gap)
        cpu_before = [process_cpu_seconds(pid) for pid in pids]
        proxy_before = process_cpu_seconds(server.proxy.pid) if server.proxy else 0.0
        generator_before, started = time.process_time(), time.monotonic() + 0.5
        offset = options.gap / (len(annotators) + bool(page))
        typing = [
            annotate(annotator, started + number * offset, presses, options.gap)
            for number, annotator in enumerate(annotators)
        ]
        if page:
            typing.append(
                type_in_browser(page, started + len(typing) * offset, presses, options.gap)
            )
        results = await asyncio.gather(*typing)
        window = time.monotonic() - started
        cpu = [process_cpu_seconds(p) - before for p, before in zip(pids, cpu_before, strict=True)]
        proxy_cpu = process_cpu_seconds(server.proxy.pid) - proxy_before if server.proxy else 0.0
        generator_cpu = time.process_time() - generator_before
        rss_after = sum(map(process_rss_mib, pids))
    for annotator in annotators:
        await annotator.close()
    return {
        "names": names,
        "annotators": annotators,
        "browser": page and {"name": browser_name, "presses": presses, **results[-1]},
        "window_seconds": window,
        "server_cpu_seconds": cpu,
        "proxy_cpu_seconds": proxy_cpu,
        "generator_cpu_seconds": generator_cpu,
        "generator_lag_seconds": [lag for lags in results[: len(annotators)] for lag in lags],
        "rss_mib": {"before": rss_before, "team_open": rss_open, "after": rss_after},
    }


def judged_in_export(db: Path, names: list[str]) -> dict[str, int]:
    """How many judgements each of ``names`` has in the golden set export (JSONL)."""
    counts = dict.fromkeys(names, 0)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "golden.jsonl"
        command = ["goldset", "export", "--db", str(db), "--format", "jsonl", "--out", str(out)]
        subprocess.run(command, check=True, capture_output=True)
        with out.open(encoding="utf-8") as lines:
            for line in lines:
                for name, judged in _judged_by_annotator(json.loads(line)).items():
                    if name in counts:
                        counts[name] += judged
    return counts


def _judged_by_annotator(record: dict) -> dict[str, int]:
    """Judgements per annotator in one exported query: its ``labels`` when several judged
    it, else its own judgements, by its one annotator."""
    if "labels" in record:
        return {name: len(label["judgments"]) for name, label in record["labels"].items()}
    annotators = record.get("annotators") or []
    return {annotators[0]: len(record["judgments"])} if len(annotators) == 1 else {}


def milliseconds(values: list[float]) -> dict[str, float]:
    """Median, p95 and max of ``values`` (seconds), in milliseconds."""
    return summary([value * 1000 for value in values]) if values else {}


def figures(run: dict, judged: dict[str, int], options) -> dict:
    """Everything the run measured, as reported."""
    annotators: list[StreamAnnotator] = run["annotators"]
    browser = run["browser"]
    expected = {name: len(a.acked_at) for name, a in zip(run["names"], annotators, strict=True)}
    if browser:
        expected[browser["name"]] = browser["presses"]  # every one saved before the end
    sent = sum(len(a.sent_at) for a in annotators) + (browser["presses"] if browser else 0)
    ack = [a.acked_at[s] - a.sent_at[s] for a in annotators for s in a.acked_at]
    repaint = [a.finished_at[s] - a.sent_at[s] for a in annotators for s in a.finished_at]
    rss = run["rss_mib"]
    return {
        "annotators": options.annotators,
        "processes": options.processes,
        "settings": options.setting,
        "presses_sent": sent,
        "presses_acknowledged": sum(expected.values()),
        "lost": sum(max(0, expected[name] - judged[name]) for name in expected),
        "doubled": sum(max(0, judged[name] - expected[name]) for name in expected),
        "server_cpu_ms_per_press": round(sum(run["server_cpu_seconds"]) * 1000 / sent, 1),
        "server_cpu_share_per_process": [
            round(seconds / run["window_seconds"], 2) for seconds in run["server_cpu_seconds"]
        ],
        "proxy_cpu_ms_per_press": round(run["proxy_cpu_seconds"] * 1000 / sent, 1),
        "acknowledged_ms": milliseconds(ack),
        "repaint_ms": milliseconds(repaint),
        **(
            {f"browser_{part}_ms": summary(browser[part]) for part in ("visible", "saved")}
            if browser
            else {}
        ),
        "memory_mib_per_session": round((rss["team_open"] - rss["before"]) / len(expected), 1),
        "memory_growth_mib_during_run": round(rss["after"] - rss["team_open"], 1),
        "rss_mib": {name: round(value, 1) for name, value in rss.items()},
        "generator_lag_ms": milliseconds(run["generator_lag_seconds"]),
        "generator_cpu_share": round(run["generator_cpu_seconds"] / run["window_seconds"], 2),
        "window_seconds": round(run["window_seconds"], 1),
    }


def setting_flags(settings: list[str]) -> list[str]:
    """Server flags for ``--setting NAME=VALUE`` overrides of the shipped settings."""
    pairs = [setting.partition("=") for setting in settings]
    return [part for name, _, value in pairs for part in (f"--{name}", value)]


def report(result: dict) -> None:
    """Print the run's figures as a table row and the details under it."""
    ack, repaint = result["acknowledged_ms"], result["repaint_ms"]
    visible = result.get("browser_visible_ms")
    headers = ["annotators", "processes", "CPU ms/press", "ack median / p95", "repaint p95",
               "visible median / p95", "lost", "doubled", "MiB/session", "load"]  # fmt: skip
    row = [
        result["annotators"],
        result["processes"],
        result["server_cpu_ms_per_press"],
        f"{ack['median']:.0f} / {ack['p95']:.0f}",
        f"{repaint['p95']:.0f}",
        f"{visible['median']:.0f} / {visible['p95']:.0f}" if visible else "-",
        result["lost"],
        result["doubled"],
        result["memory_mib_per_session"],
        " → ".join(f"{load:.1f}" for load in result["load_average"]),
    ]
    print(format_table(headers, [row]))
    print(json.dumps(result, indent=1))


def main() -> None:
    """Build or reuse the project, serve it, run the team, check the export, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help="Reused if it exists.")
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--annotators", type=int, default=16)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--gap", type=float, default=1.5, help="Seconds between presses.")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Override a shipped server setting, e.g. runner.postScriptGC=true (repeatable).",
    )
    parser.add_argument("--browser", action="store_true", help="One annotator in Chromium.")
    options = parser.parse_args()
    if not options.db.exists():
        seconds = build(options.db, options.queries, options.candidates)
        print(f"imported {options.queries:,} queries x {options.candidates} in {seconds:.0f} s")
    # Each press judges one doc; a query takes 1-4 of KEYS' presses. The first annotator
    # warms the server up.
    queries_each = int(options.seconds / options.gap) + 1
    names = add_team(options.db, options.annotators + 1, queries_each)
    load_before = os.getloadavg()[0]
    with serve(options.db, options.processes, setting_flags(options.setting)) as server:
        run = asyncio.run(run_team(server, options.db, names, options))
    result = figures(run, judged_in_export(options.db, names[1:]), options)
    result["load_average"] = [load_before, os.getloadavg()[0]]
    result["command"] = " ".join(["python", "bench/team_capacity.py", *sys.argv[1:]])
    report(result)
    write_json(OUT / "team_capacity.json", result)


if __name__ == "__main__":
    main()
