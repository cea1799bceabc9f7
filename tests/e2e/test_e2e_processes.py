"""One project served by two app processes behind Caddy (the Caddyfile of docs/scaling.md):
two annotators on different processes share one queue, stay blind to each other, get second
opinions first, stay signed in whichever process they reach, and lose or double no press.

Caddy keeps a browser on one process with a cookie naming it (``goldset_process``); each
annotator's browser is given the cookie of a different process, so every page load and the
websocket of that browser go there.
"""

from __future__ import annotations

import json
import urllib.request
from http.cookies import SimpleCookie
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from e2e_proxy import STICKY_COOKIE, caddy_proxy
from e2e_support import current_rank, progress_text, query_heading, wait_idle, wait_keys_ready
from helpers.stream_client import browser_cookies
from helpers.team import PASSWORD, team_project
from playwright.sync_api import Browser, BrowserContext, Page, expect

from goldset.labeler import judges
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

JUDGE = "machine:rule"


def process_cookies(url: str) -> list[str]:
    """The sticky cookies of the two processes behind the proxy at ``url``: Caddy sends a
    new browser to one process at random and names it in the cookie it sets."""
    seen: list[str] = []
    for _ in range(64):  # the chance of one process 64 times in a row is 2**-63
        with urllib.request.urlopen(url + "/_stcore/health", timeout=10) as response:
            jar = SimpleCookie()
            for header in response.headers.get_all("Set-Cookie") or []:
                jar.load(header)
        value = jar[STICKY_COOKIE].value
        if value not in seen:
            seen.append(value)
        if len(seen) == 2:
            return seen
    raise AssertionError("the proxy sent every new browser to the same process")


@pytest.fixture
def team(serve_app, tmp_path):
    """The planted team project (shared queue: nothing dealt) with a trusted machine judge,
    served by two processes behind Caddy: ``url`` (the proxy's), ``db``, ``sticky`` (the
    cookie of each process)."""
    db = team_project(tmp_path / "team.db")
    with Store(db) as store:
        store.trust_judge(JUDGE)
    processes = [serve_app(db).removeprefix("http://") for _ in range(2)]
    with caddy_proxy(processes) as (url, _):
        yield SimpleNamespace(url=url, db=db, sticky=process_cookies(url))


def on_process(browser: Browser, url: str, sticky: str) -> BrowserContext:
    """A new browser whose requests all go to the process named by ``sticky``."""
    context = browser.new_context()
    context.add_cookies([{"name": STICKY_COOKIE, "value": sticky, "url": url}])
    return context


def sign_in(page: Page, url: str, name: str) -> None:
    """Open ``url`` and sign in through the login form, then wait for the page to settle."""
    page.goto(url)
    page.get_by_label("User name").fill(name)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_label("User name")).to_have_count(0)
    wait_idle(page)


def disagree_by_machine(db, query_id: str, doc_id: str, grade: int) -> None:
    """The trusted machine judge labels a pair (as ``goldset judge`` would, in its own process)."""
    pair = judges.Pair(query_id, doc_id, "", "", "")
    call = judges.Call("ok", 0.2, 30, 6, grade=grade, reason="rule")
    context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
    with Store(db) as store:
        store.record_judge_calls(judges.call_rows(pair, [call], context))


def exported(db, tmp_path) -> dict[str, dict]:
    """The golden set export, by query id."""
    out = tmp_path / "golden.jsonl"
    result = CliRunner().invoke(
        cli, ["export", "--db", str(db), "--format", "jsonl", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return {record["query_id"]: record for record in map(json.loads, out.read_text().splitlines())}


def type_and_wait(page: Page, keys: str) -> None:
    """Type ``keys`` and wait until the server has committed them."""
    page.keyboard.type(keys, delay=40)
    wait_idle(page)


def test_two_processes_share_the_queue_blind_with_second_opinions_and_sessions(
    browser: Browser, team, tmp_path
):
    first, second = team.sticky
    ana = on_process(browser, team.url, first).new_page()
    sign_in(ana, team.url, "ana")  # a ticket made and traded on the first process
    wait_keys_ready(ana)
    # bob's ticket is traded on the first process; his browser then talks to the second.
    cookies = browser_cookies(team.url, team.db, "bob", held={STICKY_COOKIE: first})
    bob_context = on_process(browser, team.url, second)
    bob_context.add_cookies(
        [{"name": "goldset_session", "value": cookies["goldset_session"], "url": team.url}]
    )
    bob = bob_context.new_page()
    bob.goto(team.url)
    expect(query_heading(bob)).to_have_text("question 1")  # signed in: no login form
    wait_keys_ready(bob)

    # One queue: q1, completed by ana on the first process, is not offered to bob any more.
    type_and_wait(ana, "1")
    expect(query_heading(ana)).to_have_text("question 2")
    bob.reload()
    expect(query_heading(bob)).to_have_text("question 2")
    wait_keys_ready(bob)

    # The machine judge disagrees with ana on q1: bob's next query is q1, blind.
    disagree_by_machine(team.db, "q1", "q1-d1", 0)
    type_and_wait(bob, "1")
    expect(query_heading(bob)).to_have_text("question 1")
    expect(current_rank(bob)).to_have_text("#1")
    # Nothing of ana's label shows (the hidden cards are q2's, for Z to go back to).
    expect(bob.locator(".gs-cards:not(.gs-hidden) .gs-judged")).to_have_count(0)
    type_and_wait(bob, "01")
    expect(query_heading(bob)).to_have_text("question 3")

    # ana's browser now reaches the second process: still signed in, her queue goes on.
    ana.context.add_cookies([{"name": STICKY_COOKIE, "value": second, "url": team.url}])
    ana.reload()
    expect(query_heading(ana)).to_have_text("question 3")
    wait_keys_ready(ana)
    expect(progress_text(ana)).to_contain_text("1 of 6 queries done")  # her own: q1
    type_and_wait(ana, "001")
    expect(query_heading(ana)).to_have_text("question 4")

    records = exported(team.db, tmp_path)
    assert records["q1"]["labels"]["ana"]["judgments"] == {"q1-d1": 1}
    assert records["q1"]["labels"]["bob"]["judgments"] == {"q1-d1": 0, "q1-d2": 1}
    assert (records["q2"]["annotators"], records["q2"]["judgments"]) == (["bob"], {"q2-d1": 1})
    assert (records["q3"]["annotators"], records["q3"]["judgments"]) == (
        ["ana"],
        {"q3-d1": 0, "q3-d2": 0, "q3-d3": 1},
    )
    with Store(team.db) as store:  # every press once: 4 by ana, 3 by bob, nothing else
        events = store.events_frame()
    assert sorted(events["annotator"]) == ["ana"] * 4 + ["bob"] * 3


def test_two_processes_keep_blind_overlap_of_dealt_queries(browser: Browser, team, tmp_path):
    result = CliRunner().invoke(cli, ["assign", "--db", str(team.db), "--overlap", "1"])
    assert result.exit_code == 0, result.output
    pages = {}
    for name, sticky in zip(("ana", "bob"), team.sticky, strict=True):
        pages[name] = on_process(browser, team.url, sticky).new_page()
        sign_in(pages[name], team.url, name)
        wait_keys_ready(pages[name])

    type_and_wait(pages["ana"], "1")
    expect(query_heading(pages["ana"])).to_have_text("question 2")
    # Dealt to both: bob, on the other process, still gets q1, as if nobody had touched it.
    pages["bob"].reload()
    expect(query_heading(pages["bob"])).to_have_text("question 1")
    wait_keys_ready(pages["bob"])
    expect(pages["bob"].locator(".gs-cards:not(.gs-hidden) .gs-judged")).to_have_count(0)
    type_and_wait(pages["bob"], "01")
    expect(query_heading(pages["bob"])).to_have_text("question 2")

    labels = exported(team.db, tmp_path)["q1"]["labels"]
    assert labels["ana"]["judgments"] == {"q1-d1": 1}
    assert labels["bob"]["judgments"] == {"q1-d1": 0, "q1-d2": 1}
    with Store(team.db) as store:
        assert sorted(store.events_frame()["annotator"]) == ["ana", "bob", "bob"]
