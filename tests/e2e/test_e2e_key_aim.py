"""The key listener driven step by step in Chromium: what it sends and what it shows.

``keys.js`` runs here on a bare page, outside Streamlit, so that the server's answers can be
played in any order a busy queue produces: the test renders the component with a panel,
types, and reads the log it would send and the cards it painted. (The Streamlit flow itself
is in test_e2e_label.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from goldset.labeler import render
from goldset.labeler.keys import browser_table

KEYS_JS = Path(__file__).resolve().parents[2] / "labeler" / "keys.js"
NAMES = ["not relevant", "relevant"]


def panel(
    query: str,
    cards: list[tuple[str, int | None]],
    next_panel: dict | None = None,
    undo_to: list | None = None,
):
    """A first-hit panel as labeler/views/label.py sends it: the first unjudged card current;
    ``undo_to``: (query, doc) of the action the server's Z would take back."""
    current = next((doc for doc, grade in cards if grade is None), None)
    return {
        "query": query, "text": f"text of {query}", "meta": query, "next": next_panel,
        "undo_to": undo_to,
        "cards": [list(card) for card in cards], "current": current, "mode": "first_hit",
        "threshold": 1, "done": False, "searching": False, "grades": "01", "names": NAMES,
    }  # fmt: skip


def cards_html(shown: str, *hidden: tuple[str, list[str]], current: str | None = None) -> str:
    """The server's card lists: ``shown`` = (query, docs) on screen, then hidden ones."""
    lists = []
    for number, (query, docs) in enumerate((shown, *hidden)):
        cards = [
            render.candidate_card(
                rank=rank, title=doc, text="", terms=[], doc_id=doc,
                state="current" if doc == current and not number else "waiting",
            )
            for rank, doc in enumerate(docs, start=1)
        ]  # fmt: skip
        lists.append(render.card_list(query, cards, hidden=bool(number)))
    return '<h2 class="gs-query-text"></h2><p></p>' + "".join(lists)


def painted(page: Page) -> dict:
    """The list on screen: its query, whether it is greyed, each card's state and grade."""
    return page.evaluate(
        """() => {
            const list = [...document.querySelectorAll(".gs-cards")].find(
                (element) => !element.classList.contains("gs-hidden"));
            return {
                query: list.dataset.query,
                greyed: list.classList.contains("gs-pending"),
                cards: [...list.querySelectorAll(".gs-card")].map((card) =>
                    [card.dataset.doc, card.className.replace("gs-card gs-", ""),
                     card.dataset.grade || null]),
            };
        }"""
    )


@pytest.fixture
def listener(page: Page):
    """A bare page running keys.js; ``render(panel, applied)`` plays a server answer and
    ``sent()`` returns the log entries of every state the listener sent, oldest first."""
    source = KEYS_JS.read_text(encoding="utf-8").replace(
        "export default function", "window.goldsetKeys = function"
    )
    page.set_content('<div id="root"><span class="goldset-keys"></span></div><main></main>')
    page.add_script_tag(content=source, type="module")
    page.wait_for_function("typeof window.goldsetKeys === 'function'")
    page.evaluate("window.sentStates = []")

    def render(model: dict | None, applied: int = 0) -> None:
        page.evaluate(
            """([panel, applied, table]) => {
                const states = window.sentStates;
                const page = states.length ? states[states.length - 1].page : null;
                window.goldsetKeys({
                    data: {
                        keys: ["0", "1", "n", "z", "x"], table, page, applied, panel, retry: 0,
                    },
                    parentElement: document.getElementById("root"),
                    setStateValue: (name, value) => states.push(value),
                });
            }""",
            [model, applied, browser_table()],
        )
        page.wait_for_timeout(50)  # a press aimed on this render is sent on the next tick

    def sent() -> list[list]:
        return page.evaluate("window.sentStates.map((state) => state.entries)")

    return page, render, sent


def targets(entries: list[list]) -> list[tuple[int, str, dict | None]]:
    return [(seq, key, target) for seq, key, _ms, target in entries]


def test_a_press_typed_while_the_panel_is_unknown_waits_for_the_server_and_is_aimed_there(
    listener,
):
    page, render, sent = listener
    render(panel("q1", [("a", None), ("b", None)]))  # no query fetched ahead
    page.keyboard.press("1")  # completes q1: only the server knows what comes next
    page.keyboard.press("0")
    assert [targets(entries) for entries in sent()] == [
        [(1, "1", {"query": "q1", "doc": "a", "grade": None})],
    ]  # the "0" is held, not sent unaimed

    render(panel("q7", [("x", None), ("y", None)]), applied=1)
    assert targets(sent()[-1]) == [(2, "0", {"query": "q7", "doc": "x", "grade": None})]
    page.keyboard.press("0")  # typed on the foreseen panel: aimed and sent at once
    assert targets(sent()[-1])[-1] == (3, "0", {"query": "q7", "doc": "y", "grade": None})


def test_a_queue_changed_under_the_query_fetched_ahead_holds_later_presses(listener):
    page, render, sent = listener
    ahead = panel("q2", [("c", None), ("d", None)])
    render(panel("q1", [("a", None)], next_panel=ahead))
    page.keyboard.press("1")  # completes q1; the page shows q2, fetched ahead
    page.keyboard.press("0")  # aimed at q2's first card, as shown
    assert targets(sent()[-1]) == [
        (1, "1", {"query": "q1", "doc": "a", "grade": None}),
        (2, "0", {"query": "q2", "doc": "c", "grade": None}),
    ]
    # Meanwhile another annotator finished q2: the server's answer to press 1 opens q5.
    render(panel("q5", [("e", None)]), applied=1)
    page.keyboard.press("0")  # what follows press 2 (applied on q2) is unknown: held
    assert len(sent()) == 2 and targets(sent()[-1])[-1][0] == 2

    render(panel("q2", [("c", 0), ("d", None)]), applied=2)  # press 2 applied where aimed
    assert targets(sent()[-1]) == [(3, "0", {"query": "q2", "doc": "d", "grade": None})]


def test_with_nothing_left_to_label_a_press_is_sent_with_no_target(listener):
    page, render, sent = listener
    render(None)
    page.keyboard.press("n")
    assert targets(sent()[-1]) == [(1, "n", None)]


def test_undo_of_the_press_that_completed_a_query_shows_that_query_again_at_once(listener):
    page, render_answer, sent = listener
    page.evaluate(
        "html => { document.querySelector('main').innerHTML = html; }",
        cards_html(("q0", ["a"]), ("q1", ["b", "c"]), current="a"),
    )
    render_answer(panel("q0", [("a", None)], next_panel=panel("q1", [("b", None), ("c", None)])))
    page.keyboard.press("1")  # completes q0: q1, fetched ahead, is shown
    assert painted(page) == {
        "query": "q1", "greyed": False, "cards": [["b", "current", None], ["c", "waiting", None]],
    }  # fmt: skip
    page.keyboard.press("z")  # before the server answers: q0 again, its card unjudged
    assert painted(page) == {"query": "q0", "greyed": False, "cards": [["a", "current", None]]}

    # The server's answer to the "1" (q1 open, q0 rendered hidden as Z's target) keeps it so.
    render_answer(panel("q1", [("b", None), ("c", None)], undo_to=["q0", "a"]), applied=1)
    assert painted(page)["query"] == "q0" and not painted(page)["greyed"]
    assert targets(sent()[-1])[-1][1:] == ("z", {"query": "q1"})  # sent at once, aimed


def test_undo_on_the_open_query_unmarks_the_card_and_an_undo_with_nothing_kept_waits(listener):
    page, render_answer, _ = listener
    page.evaluate(
        "html => { document.querySelector('main').innerHTML = html; }",
        cards_html(("q1", ["b", "c"]), current="b"),
    )
    render_answer(panel("q1", [("b", None), ("c", None)]))
    page.keyboard.press("0")
    assert painted(page)["cards"] == [["b", "judged", "0"], ["c", "current", None]]
    page.keyboard.press("x")
    assert painted(page)["cards"] == [["b", "current", None], ["c", "waiting", None]]
    page.keyboard.press("z")  # what came before this page is the server's to tell
    assert painted(page)["greyed"]


def test_after_an_action_the_page_did_not_type_an_undo_waits_for_the_server(listener):
    page, render_answer, _ = listener
    page.evaluate(
        "html => { document.querySelector('main').innerHTML = html; }",
        cards_html(("q1", ["b", "c"]), current="b"),
    )
    render_answer(panel("q1", [("b", None), ("c", None)]))
    page.keyboard.press("0")
    # The server applied it, then a click (or another tab) judged c: Z would undo that.
    render_answer(panel("q1", [("b", 0), ("c", 1)], undo_to=["q1", "c"]), applied=1)
    page.keyboard.press("z")
    assert painted(page)["greyed"]  # not b unmarked, which the kept model would show
