"""The app server's memory stays flat over a long labelling session.

Streamlit's own full cycle collection after every run is off (``.streamlit/config.toml``:
it cost 100-160 ms of CPU per key press), so cycles are freed by Python's collector alone.
This test serves the app as ``goldset app`` does (the shipped settings), signs one annotator
in, types 2,000 key presses through the label page's key listener over the app's websocket
(the light client of ``tests/helpers/stream_client.py``) and reads the server's resident
memory: after the first presses (the pages' imports, caches and the session's state are in
place) it may not grow by more than a bound over the rest. A server that kept something per
press, or never freed cycles, grows by tens of MiB here.
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers.stream_client import StreamAnnotator, browser_cookies

from goldset.labeler.launch import DB_ENV, streamlit_command
from goldset.labeler.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent / "e2e"))  # the app runner's helpers

from e2e_support import free_port, serving  # noqa: E402

PRESSES = 2_000
SETTLED_AFTER = 300  # presses before the first reading: caches and the session are built
KEYS = "1010010001"  # first-hit: relevant at rank 1, 2, 1, 3, 4...
GROWTH_BOUND_MIB = 12.0


def rss_mib(pid: int) -> float:
    """Resident memory of process ``pid``, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


@pytest.fixture
def many_queries_db(make_project) -> Path:
    """900 queries of 5 candidates (2,000 first-hit presses take about 800), one annotator."""
    return make_project(
        (
            {
                "query_id": f"q{number}",
                "query": f"question {number}",
                "candidates": [
                    {"doc_id": f"q{number}-d{rank}", "text": "text"} for rank in range(5)
                ],
            }
            for number in range(900)
        ),
        users=["ana"],
    )


@pytest.fixture
def server(many_queries_db):
    """The app on ``many_queries_db``, started with the command and settings of ``goldset app``."""
    port = free_port()
    command = streamlit_command("127.0.0.1", port)
    with serving(command, port, {DB_ENV: str(many_queries_db)}, timeout=60) as served:
        yield served


async def type_presses(annotator: StreamAnnotator, count: int) -> None:
    """Type ``count`` keys, each once the one before is committed."""
    for _ in range(count):
        seq = await annotator.press(KEYS[annotator.last_press % len(KEYS)])
        await annotator.wait_acknowledged(seq)


async def session_memory(url: str, project: Path, pid: int) -> tuple[float, float, int]:
    """The server's RSS after ``SETTLED_AFTER`` presses and after ``PRESSES``, and the
    presses the server acknowledged."""
    annotator = StreamAnnotator(url, browser_cookies(url, project, "ana"))
    await annotator.open()
    await type_presses(annotator, SETTLED_AFTER)
    settled = rss_mib(pid)
    await type_presses(annotator, PRESSES - SETTLED_AFTER)
    await asyncio.sleep(1)  # a collection the last runs started has ended
    final = rss_mib(pid)
    await annotator.close()
    return settled, final, annotator.listener.applied


def test_server_memory_stays_flat_over_two_thousand_presses_of_one_session(server, many_queries_db):
    url, process = server
    # On a thread of its own: after the browser tests, Playwright's sync API keeps an event
    # loop running on this one, and asyncio.run refuses to start another there.
    with ThreadPoolExecutor(max_workers=1) as thread:
        measuring = thread.submit(asyncio.run, session_memory(url, many_queries_db, process.pid))
        settled, final, applied = measuring.result()
    assert applied == PRESSES
    with Store(many_queries_db) as store:
        assert len(store.events_frame()) == PRESSES  # every press judged a doc, once
    assert final - settled < GROWTH_BOUND_MIB, (
        f"RSS grew from {settled:.1f} to {final:.1f} MiB over {PRESSES - SETTLED_AFTER} presses"
    )
