"""An annotator who rewrites what their browser sends cannot reach another's query: over the
real websocket, ana's key-log entries are re-aimed at q3, a blind-overlap query dealt to bob
and carl, as an attacker would in devtools. The server refuses each press, nothing of q3 is
stored, and nothing of q3 (its text, its candidates) reaches ana's page."""

from __future__ import annotations

import pytest
from e2e_support import query_heading, wait_idle, wait_keys_ready
from helpers.team import PASSWORD, team_project
from playwright.sync_api import Page, WebSocketRoute, expect
from test_e2e_team import sign_in

from goldset.labeler.auth import hash_password
from goldset.labeler.store import Store

# ana's queue is q1 and q2; q3 and q4 are dealt to bob and carl, blind to each other.
PLAN = {"ana": ["q1", "q2"], "bob": ["q3", "q4"], "carl": ["q3", "q4"]}
AIMED_AT_Q1 = b'{"query":"q1"'
AIMED_AT_Q3 = b'{"query":"q3"'  # same length: the frame's protobuf lengths stay right


@pytest.fixture
def overlap(serve_app, tmp_path):
    """The app on the team project dealt as :data:`PLAN`, nothing labelled yet."""
    db = team_project(tmp_path / "team.db")
    with Store(db) as store:
        store.add_annotator("carl", password_hash=hash_password(PASSWORD))
        store.assign_plan(PLAN)
    return serve_app(db), db


def re_aim_presses(page: Page) -> list[int]:
    """Rewrite every key-log entry the page sends from q1 to q3 (the component's state rides
    in the websocket's binary frames as JSON); returns the running count of rewritten frames."""
    rewritten = [0]

    def route(socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()

        def to_server(message: str | bytes) -> None:
            if isinstance(message, bytes) and AIMED_AT_Q1 in message:
                message = message.replace(AIMED_AT_Q1, AIMED_AT_Q3)
                rewritten[0] += 1
            server.send(message)

        socket.on_message(to_server)
        server.on_message(socket.send)

    page.route_web_socket("**/_stcore/stream", route)
    return rewritten


@pytest.mark.parametrize("key", ["u", "1", "j", "h"])
def test_a_press_re_aimed_at_another_annotators_blind_overlap_query_is_refused(
    page: Page, overlap, key
):
    url, db = overlap
    rewritten = re_aim_presses(page)
    sign_in(page, url, "ana")
    wait_keys_ready(page)
    expect(query_heading(page)).to_have_text("question 1")

    page.keyboard.press(key)
    wait_idle(page)

    assert rewritten[0] >= 1  # the press did go out aimed at q3
    with Store(db) as store:
        assert store.events_frame("q3").empty and store.events_frame("q1").empty
    content = page.content()
    assert "question 3" not in content and "q3-d1" not in content and "doc 3." not in content
    expect(query_heading(page)).to_have_text("question 1")
    expect(page.get_by_text("Not done: no query q3 in your queue")).to_be_visible()
