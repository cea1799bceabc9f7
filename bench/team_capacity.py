"""Team capacity: N signed-in annotators, each pressing a key every 1.5 s, on 1 or more processes.

    python bench/team_capacity.py --annotators 16 --processes 1
    python bench/team_capacity.py --annotators 16 --processes 2            # behind Caddy
    python bench/team_capacity.py --annotators 16 --post-script-gc on      # Streamlit's default
    python bench/team_capacity.py --annotators 16 --browser                # one of them in Chromium

Builds (or reuses, ``--db``) the project of keypress_speed.py (100,000 queries x 20
candidates), adds ``--annotators`` fresh users (a shared queue, as a team without
assignments has) and serves it as ``goldset app`` does (``labeler.launch.streamlit_command``:
the shipped settings); with ``--processes`` above 1, that many processes behind Caddy with the
Caddyfile of docs/scaling.md. Each annotator is a light client speaking the app's own
protocol over its websocket (``tests/helpers/stream_client.py``: signed in with the session
cookie, presses sent through the label page's key listener as the browser sends them), so
that one load-generating process drives the whole team; ``--browser`` makes one of them a
Chromium page (what the annotator sees change, timed as browser_latency.py does).

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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from _common import format_table, write_json
from keypress_speed import build, summary

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]  # the client, the runners

from e2e_proxy import caddy_proxy  # noqa: E402
from e2e_support import free_port, wait_healthy  # noqa: E402
from helpers.stream_client import StreamAnnotator, browser_cookies  # noqa: E402

from labeler.launch import DB_ENV, streamlit_command  # noqa: E402
from labeler.store import Store  # noqa: E402

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
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            command, env={**os.environ, DB_ENV: str(db)}, stdout=log, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process, timeout=120)
            yield url, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


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


async def run_team(server: Server, db: Path, names: list[str], options) -> dict:
    """Warm the server up as ``names[0]``, open the others' pages, let them press, and
    measure the server meanwhile."""
    pids = [process.pid for process in server.processes]
    await warm_up(server, db, names[0])
    names = names[1:]
    rss_before = sum(map(process_rss_mib, pids))
    annotators = [StreamAnnotator(server.url, browser_cookies(server.url, db, n)) for n in names]
    for annotator in annotators:
        await annotator.open()
    rss_open = sum(map(process_rss_mib, pids))
    presses = int(options.seconds / options.gap)
    cpu_before = [process_cpu_seconds(pid) for pid in pids]
    proxy_before = process_cpu_seconds(server.proxy.pid) if server.proxy else 0.0
    generator_before, started = time.process_time(), time.monotonic() + 0.5
    offset = options.gap / len(annotators)
    lags = await asyncio.gather(
        *(
            annotate(annotator, started + number * offset, presses, options.gap)
            for number, annotator in enumerate(annotators)
        )
    )
    window = time.monotonic() - started
    cpu = [process_cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before, strict=True)]
    proxy_cpu = process_cpu_seconds(server.proxy.pid) - proxy_before if server.proxy else 0.0
    generator_cpu = time.process_time() - generator_before
    rss_after = sum(map(process_rss_mib, pids))
    for annotator in annotators:
        await annotator.close()
    return {
        "names": names,
        "annotators": annotators,
        "window_seconds": window,
        "server_cpu_seconds": cpu,
        "proxy_cpu_seconds": proxy_cpu,
        "generator_cpu_seconds": generator_cpu,
        "generator_lag_seconds": [lag for lags_of_one in lags for lag in lags_of_one],
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
    sent = sum(len(a.sent_at) for a in annotators)
    acked_counts = [len(a.acked_at) for a in annotators]
    expected = dict(zip(run["names"], acked_counts, strict=True))
    ack = [a.acked_at[s] - a.sent_at[s] for a in annotators for s in a.acked_at]
    repaint = [a.finished_at[s] - a.sent_at[s] for a in annotators for s in a.finished_at]
    server_cpu = sum(run["server_cpu_seconds"])
    rss = run["rss_mib"]
    return {
        "annotators": options.annotators,
        "processes": options.processes,
        "post_script_gc": options.post_script_gc,
        "presses_sent": sent,
        "presses_acknowledged": sum(acked_counts),
        "lost": sum(max(0, expected[n] - judged[n]) for n in judged),
        "doubled": sum(max(0, judged[n] - expected[n]) for n in judged),
        "server_cpu_ms_per_press": round(server_cpu * 1000 / max(sent, 1), 1),
        "server_cpu_share_per_process": [
            round(seconds / run["window_seconds"], 2) for seconds in run["server_cpu_seconds"]
        ],
        "proxy_cpu_ms_per_press": round(run["proxy_cpu_seconds"] * 1000 / max(sent, 1), 1),
        "acknowledged_ms": milliseconds(ack),
        "repaint_ms": milliseconds(repaint),
        "memory_mib_per_session": round((rss["team_open"] - rss["before"]) / len(annotators), 1),
        "memory_growth_mib_during_run": round(rss["after"] - rss["team_open"], 1),
        "rss_mib": {name: round(value, 1) for name, value in rss.items()},
        "generator_lag_ms": milliseconds(run["generator_lag_seconds"]),
        "generator_cpu_share": round(run["generator_cpu_seconds"] / run["window_seconds"], 2),
        "window_seconds": round(run["window_seconds"], 1),
    }


def gc_flags(setting: str) -> list[str]:
    """The server flags for ``--post-script-gc`` (``shipped``: none, the shipped config)."""
    return [] if setting == "shipped" else ["--runner.postScriptGC", str(setting == "on").lower()]


def report(result: dict) -> None:
    """Print the run's figures as a table row and the details under it."""
    ack, repaint, lag = result["acknowledged_ms"], result["repaint_ms"], result["generator_lag_ms"]
    headers = ["annotators", "processes", "CPU ms/press", "ack median/p95", "repaint p95",
               "lost", "doubled", "MiB/session", "load"]  # fmt: skip
    row = [
        result["annotators"],
        result["processes"],
        result["server_cpu_ms_per_press"],
        f"{ack['median']:.0f} / {ack['p95']:.0f}",
        f"{repaint['p95']:.0f}",
        result["lost"],
        result["doubled"],
        result["memory_mib_per_session"],
        " → ".join(f"{load:.1f}" for load in result["load_average"]),
    ]
    print(format_table(headers, [row]))
    if "visible_ms" in result:
        print(f"visible (Chromium): {result['visible_ms']}")
    print(f"generator lag ms: {lag}, generator CPU share {result['generator_cpu_share']}")
    print(json.dumps({k: v for k, v in result.items() if k != "command"}, indent=1))


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
    parser.add_argument("--post-script-gc", choices=["shipped", "on", "off"], default="shipped")
    options = parser.parse_args()
    if not options.db.exists():
        seconds = build(options.db, options.queries, options.candidates)
        print(f"imported {options.queries:,} queries x {options.candidates} in {seconds:.0f} s")
    # Each press judges one doc; a query takes 1-4 of KEYS' presses. The first annotator
    # warms the server up.
    queries_each = int(options.seconds / options.gap) + 1
    names = add_team(options.db, options.annotators + 1, queries_each)
    load_before = os.getloadavg()[0]
    with serve(options.db, options.processes, gc_flags(options.post_script_gc)) as server:
        run = asyncio.run(run_team(server, options.db, names, options))
    result = figures(run, judged_in_export(options.db, names[1:]), options)
    result["load_average"] = [load_before, os.getloadavg()[0]]
    result["command"] = " ".join(["python", "bench/team_capacity.py", *sys.argv[1:]])
    report(result)
    write_json(OUT / "team_capacity.json", result)


if __name__ == "__main__":
    main()
