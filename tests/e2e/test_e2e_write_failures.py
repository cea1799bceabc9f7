"""Presses the database cannot store, in a real browser against ``streamlit run``: the page
names what was not saved and stays on the query, keeps the presses, and they are applied
exactly once when writes succeed again.

The server's writes fail for real: its file size limit (``RLIMIT_FSIZE``, set from outside
with ``prlimit``) is lowered to the project's present size, so every write SQLite makes to
its write-ahead log fails in the kernel (``EFBIG``; Python ignores ``SIGXFSZ``), as writes to
a failing disk do; raising the limit again is the disk coming back.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from e2e_support import current_rank, open_app, query_heading, wait_idle
from playwright.sync_api import Page, expect

from goldset.labeler.store import Store

TASKS = [
    {
        "query_id": f"q{number}",
        "query": f"question {number}",
        "candidates": [{"doc_id": f"q{number}-d{rank}", "text": "text"} for rank in (1, 2, 3)],
    }
    for number in (1, 2, 3)
]


def server_pid(url: str) -> int:
    """The process of the ``streamlit run`` serving ``url`` (found by its port)."""
    port = url.rsplit(":", 1)[1]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:  # a process that ended meanwhile
            continue
        if b"streamlit" in b" ".join(words) and port.encode() in words:
            return int(cmdline.parent.name)
    raise AssertionError(f"no streamlit process serves {url}")


@pytest.fixture
def failing_disk(serve_app, tmp_path):
    """The app on a three-query project, and ``writes(ok)`` to let the server's writes
    succeed or fail."""
    db = tmp_path / "project.db"
    with Store(db) as store:
        store.import_records(TASKS)
    url = serve_app(db)
    pid = server_pid(url)
    _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)

    def writes(ok: bool) -> None:
        limit = hard if ok else 0  # 0: no byte may be written to any file
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, hard))

    yield url, db, writes
    writes(True)


def unsaved_count(page: Page) -> str:
    return page.evaluate("document.documentElement.dataset.goldsetUnsaved || ''")


def test_presses_the_disk_refuses_are_named_kept_and_applied_once_when_it_recovers(
    page: Page, failing_disk
):
    url, db, writes = failing_disk
    open_app(page, url)
    expect(query_heading(page)).to_have_text("question 1")

    writes(False)
    page.keyboard.press("0")  # not relevant: q1-d1
    alert = page.locator(".gs-alert")
    expect(alert).to_contain_text("Not saved: grade 0 on card q1-d1 (query q1)")
    expect(alert).to_contain_text("disk I/O error")
    page.keyboard.press("0")  # typed while the disk fails: kept, held
    page.keyboard.press("1")  # would complete q1
    page.wait_for_function("document.documentElement.dataset.goldsetUnsaved === '3'")
    expect(page.locator(".goldset-keys")).to_have_text("not saved, kept: 0 0 1")
    expect(query_heading(page)).to_have_text("question 1")  # the page stays on q1
    expect(page.locator(".gs-cards:not(.gs-hidden)")).to_have_attribute("data-query", "q1")
    with Store(db) as store:
        assert store.events_frame("q1").empty
        assert store.conn.execute("SELECT count(*) FROM key_presses").fetchone()[0] == 0

    writes(True)  # the page sends its presses again within seconds
    page.wait_for_function("!document.documentElement.dataset.goldsetUnsaved")
    wait_idle(page)
    expect(alert).to_have_count(0)
    expect(query_heading(page)).to_have_text("question 2")
    expect(current_rank(page)).to_have_text("#1")
    with Store(db) as store:
        events = store.events_frame("q1")
        assert list(zip(events["doc_id"], events["grade"], strict=True)) == [
            ("q1-d1", 0),
            ("q1-d2", 0),
            ("q1-d3", 1),
        ]  # each press once, in order
        assert store.query_state("q1")["status"] == "done"
