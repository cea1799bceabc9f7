"""The annotator's keyboard flow in a real browser: Chromium against ``streamlit run`` on loopback.

Keys only (no clicks), as an annotator who never touches the mouse.
"""

from __future__ import annotations

import json

from click.testing import CliRunner
from e2e_support import (
    current_rank,
    open_app,
    progress_text,
    query_heading,
    wait_idle,
    wait_keys_ready,
)
from playwright.sync_api import Browser, Page, expect

from goldset.labeler.auth import hash_password
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

SDK_QUERIES = [
    "parse ISO-8601 duration",
    "retry with jitter helper",
    "deprecated v1 auth client",
    "stream upload large file",
]


def goldset(*args: str) -> str:
    """Run a goldset command; return its output (fail the test if the command fails)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def judged_sequence(db_path, annotator="local") -> list[tuple[str, int, int]]:
    """(query_id, display position, grade) of every judge event, in the order stored."""
    with Store(db_path) as store:
        events = store.events_frame()
        positions = {
            (query_id, candidate["doc_id"]): candidate["position"]
            for query_id in events["query_id"].unique()
            for candidate in store.candidates(query_id)
        }
    judged = events[(events["action"] == "judge") & (events["annotator"] == annotator)]
    return [
        (row.query_id, positions[(row.query_id, row.doc_id)], int(row.grade))
        for row in judged.itertuples()
    ]


def test_sdk_worked_example_by_keyboard_gives_mrr_0458(page: Page, serve_app, demo_db, tmp_path):
    open_app(page, serve_app(demo_db))
    expect(query_heading(page)).to_have_text(SDK_QUERIES[0])
    page.keyboard.type("1", delay=50)  # first relevant at rank 1
    expect(query_heading(page)).to_have_text(SDK_QUERIES[1])
    page.keyboard.type("001", delay=50)  # rank 3
    expect(query_heading(page)).to_have_text(SDK_QUERIES[2])
    page.keyboard.type("0" * 10, delay=50)  # none of the ten is relevant...
    expect(page.get_by_text("No candidate is relevant")).to_be_visible()
    page.keyboard.type("m")  # ...and an answer should exist: a miss
    expect(query_heading(page)).to_have_text(SDK_QUERIES[3])
    page.keyboard.type("01", delay=50)  # rank 2
    expect(progress_text(page)).to_contain_text("4 of 50 queries done")
    wait_idle(page)

    golden = tmp_path / "golden.jsonl"
    goldset("export", "--db", str(demo_db), "--format", "jsonl", "--out", str(golden))
    records = {r["query"]: r for r in map(json.loads, golden.read_text().splitlines())}
    assert [records[q]["first_relevant_rank"] for q in SDK_QUERIES] == [1, 3, None, 2]
    assert all(records[q]["status"] == "done" and records[q]["answerable"] for q in SDK_QUERIES)
    report = json.loads(goldset("eval", "--db", str(demo_db), "--json", "--bootstrap", "0"))
    assert round(report["metrics"]["mrr@10"]["mean"], 3) == 0.458
    assert report["metrics"]["hit@1"]["mean"] == 0.25
    assert report["metrics"]["miss@10"]["mean"] == 0.25


def test_reload_in_the_middle_of_a_query_resumes_at_the_same_candidate(
    page: Page, serve_app, demo_db
):
    url = serve_app(demo_db)
    open_app(page, url)
    page.keyboard.type("1")
    expect(query_heading(page)).to_have_text(SDK_QUERIES[1])
    page.keyboard.type("00", delay=50)
    expect(current_rank(page)).to_have_text("#3")
    wait_idle(page)

    page.reload()
    open_app(page, url)
    expect(query_heading(page)).to_have_text(SDK_QUERIES[1])
    expect(current_rank(page)).to_have_text("#3")
    expect(page.locator(".gs-judged .gs-label")).to_have_text(["0 · not relevant"] * 2)
    page.keyboard.type("1")
    expect(query_heading(page)).to_have_text(SDK_QUERIES[2])
    wait_idle(page)
    assert judged_sequence(demo_db) == [("q01", 1, 1), ("q02", 1, 0), ("q02", 2, 0), ("q02", 3, 1)]


def test_keys_30ms_apart_across_queries_are_all_recorded_in_order(page: Page, serve_app, demo_db):
    open_app(page, serve_app(demo_db))
    page.keyboard.type("1" + "01" + "001" + "0001" + "00", delay=30)
    expect(current_rank(page)).to_have_text("#3", timeout=20_000)
    expect(query_heading(page)).to_have_text("upload a file to a bucket")
    wait_idle(page)
    assert judged_sequence(demo_db) == [
        ("q01", 1, 1),
        ("q02", 1, 0), ("q02", 2, 1),
        ("q03", 1, 0), ("q03", 2, 0), ("q03", 3, 1),
        ("q04", 1, 0), ("q04", 2, 0), ("q04", 3, 0), ("q04", 4, 1),
        ("q05", 1, 0), ("q05", 2, 0),
    ]  # fmt: skip


def log_in(page: Page, url: str, name: str, password: str) -> None:
    """Log in with the keyboard only: type the name, Tab, the password, Enter."""
    page.goto(url)
    page.get_by_label("User name").focus()
    page.keyboard.type(name)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    wait_keys_ready(page)


def test_two_annotators_typing_at_once_lose_nothing(browser: Browser, serve_app, demo_db):
    with Store(demo_db) as store:
        for name in ("ana", "ben"):
            store.add_annotator(name, password_hash=hash_password(f"{name}-secret"))
    url = serve_app(demo_db)
    pages = {}
    for name in ("ana", "ben"):
        pages[name] = browser.new_context().new_page()
        log_in(pages[name], url, name, f"{name}-secret")
    typed = {"ana": "0001" * 3, "ben": "01" * 6}
    for ana_key, ben_key in zip(typed["ana"], typed["ben"], strict=True):
        pages["ana"].keyboard.press(ana_key)
        pages["ben"].keyboard.press(ben_key)
        pages["ben"].wait_for_timeout(30)
    expect(progress_text(pages["ana"])).to_contain_text("3 of 50 queries done", timeout=20_000)
    expect(progress_text(pages["ben"])).to_contain_text("6 of 50 queries done", timeout=20_000)
    for name, page in pages.items():
        wait_idle(page)
        grades = [grade for _, _, grade in judged_sequence(demo_db, name)]
        assert grades == [int(key) for key in typed[name]], name


HOSTILE = (
    "<script>alert('script')</script> <img src=x onerror=alert('img')> "
    "![x](http://example.invalid/t.png) [a](javascript:alert(1))"
)


def hostile_project(path):
    """A project whose query, titles and texts are all attacks; ``h2``'s doc is for search."""
    with Store(path) as store:
        store.import_records(
            [
                {
                    "query_id": "h1",
                    "query": f"alert {HOSTILE}",
                    "slice": "<b>tail</b>",
                    "candidates": [
                        {"doc_id": "evil", "title": HOSTILE, "text": f"{HOSTILE}\nalert"},
                        {"doc_id": "plain", "title": "plain", "text": "nothing here"},
                    ],
                },
                {
                    "query_id": "h2",
                    "query": "second",
                    "candidates": [{"doc_id": "evil-2", "title": "found", "text": HOSTILE}],
                },
            ]
        )
    return path


def test_hostile_text_shows_as_text_runs_nothing_and_calls_nowhere(
    page: Page, serve_app, tmp_path, artifacts_dir
):
    dialogs, requests = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))
    open_app(page, serve_app(hostile_project(tmp_path / "hostile.db")))

    expect(page.locator(".gs-current .gs-title")).to_have_text(HOSTILE)
    expect(query_heading(page)).to_have_text(f"alert {HOSTILE}")
    page.keyboard.type("00", delay=50)
    expect(page.get_by_text("No candidate is relevant")).to_be_visible()
    wait_idle(page)  # a rerun still drawing the panel would replace the box "/" focuses
    page.keyboard.press("/")
    search = page.get_by_label("Search the corpus")
    expect(search).to_be_focused()  # "/" opens and focuses the box, pre-filled with the query
    wait_idle(page)
    expect(search).to_have_value(f"alert {HOSTILE}")
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("alert")
    expect(search).to_have_value("alert")
    page.keyboard.press("Enter")
    expect(page.locator(".st-key-gs-search .gs-card", has_text="found")).to_contain_text(HOSTILE)
    wait_idle(page)
    page.screenshot(path=artifacts_dir / "label-hostile.png", full_page=True)

    assert dialogs == []
    assert page.locator("img[src='x'], img[src*='example.invalid']").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.locator(".gs-card script, .gs-query script").count() == 0
    remote = [
        url for url in requests if not url.startswith(("http://127.0.0.1:", "blob:", "data:"))
    ]
    assert remote == []


def test_label_page_screenshots_desktop_and_narrow(page: Page, serve_app, demo_db, artifacts_dir):
    open_app(page, serve_app(demo_db))
    page.keyboard.type("1" + "00", delay=50)
    expect(current_rank(page)).to_have_text("#3")
    page.set_viewport_size({"width": 1280, "height": 900})
    wait_idle(page)
    page.screenshot(path=artifacts_dir / "label-desktop.png")
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()  # a phone-sized window opens with the sidebar collapsed
    wait_keys_ready(page)
    expect(current_rank(page)).to_have_text("#3")
    page.screenshot(path=artifacts_dir / "label-narrow.png")


def test_current_candidate_stays_in_view_far_down_a_narrow_page(page: Page, serve_app, demo_db):
    page.set_viewport_size({"width": 390, "height": 700})
    open_app(page, serve_app(demo_db))
    page.keyboard.type("1" + "01" + "0" * 9, delay=50)
    expect(current_rank(page)).to_have_text("#10")
    wait_idle(page)
    expect(page.locator(".gs-current")).to_be_in_viewport()
