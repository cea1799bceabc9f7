"""keys.js reads its keys from labeler/keys.py's table, handed over as the component's data:
run on a bare page in Chromium (as in test_e2e_key_aim), it sends every key the server takes
(H then any digit, whatever the grade scale; a refused key after H) and aims a grade on the
search results at attaching."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from goldset.labeler import keys

KEYS_JS = Path(__file__).resolve().parents[2] / "labeler" / "keys.js"
GRADES = ["not relevant", "relevant", "highly relevant", "perfect"]


def panel(max_grade: int, **changes) -> dict:
    """A first-hit panel on three unjudged cards, the first current (as label.py sends it)."""
    return {
        "query": "q1", "text": "q1", "meta": "q1", "next": None, "undo_to": None,
        "cards": [["a", None, False], ["b", None, False], ["c", None, False]],
        "current": "a", "mode": "first_hit", "threshold": 1, "done": False,
        "searching": False, "grades": keys.grade_keys(max_grade),
        "names": GRADES[: max_grade + 1], "implied": "by verdict", "marker": "▶",
        **changes,
    }  # fmt: skip


@pytest.fixture
def typed(page: Page):
    """``typed(keys, max_grade, **panel changes)``: the [key, target] entries that keys.js,
    given the label page's data for that scale, sends after the keys are pressed."""
    source = KEYS_JS.read_text(encoding="utf-8").replace(
        "export default function", "window.goldsetKeys = function"
    )
    page.set_content('<div id="root"><span class="goldset-keys"></span></div>')
    page.add_script_tag(content=source, type="module")
    page.wait_for_function("typeof window.goldsetKeys === 'function'")

    def run(pressed: list[str], max_grade: int = 3, **changes) -> list[list]:
        data = {
            "keys": keys.accepted_keys(max_grade), "table": keys.browser_table(), "focus": {},
            "page": None, "applied": 0, "retry": 0, "panel": panel(max_grade, **changes),
        }  # fmt: skip
        page.evaluate(
            """data => {
                window.sentStates = [];
                window.goldsetKeys({
                    data, parentElement: document.getElementById("root"),
                    setStateValue: (name, value) => window.sentStates.push(value),
                });
            }""",
            data,
        )
        for key in pressed:
            page.keyboard.press(key)
        entries = page.evaluate(
            "() => { const s = window.sentStates; return s.length ? s[s.length - 1].entries : []; }"
        )
        return [[key, target] for _seq, key, _ms, target in entries]

    return run


@pytest.mark.parametrize("max_grade", [1, 3])
def test_h_then_any_digit_is_sent_whatever_the_grade_scale(typed, max_grade):
    assert [key for key, _ in typed(["h", "5"], max_grade)] == ["h", "5"]


def test_a_key_outside_the_table_after_h_is_sent_so_that_the_server_stops_waiting(typed):
    assert [key for key, _ in typed(["h", "q"])] == ["h", "q"]


def test_the_arrow_the_table_names_moves_the_aim_of_the_next_grade(typed):
    assert typed(["ArrowDown", "2"]) == [
        ["j", {"query": "q1"}],
        ["2", {"query": "q1", "doc": "b", "grade": None}],
    ]


def test_a_grade_on_the_search_results_is_aimed_at_attaching_not_at_a_card(typed):
    assert typed(["3"], searching=True) == [["3", {"query": "q1", "attach": True}]]
