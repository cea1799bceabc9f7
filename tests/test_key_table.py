"""One key table for the server and the browser: ``goldset.labeler.keys.KEY_ACTIONS`` is what
``judging`` dispatches on and what ``keys.js`` receives as the component's data, so the two
cannot disagree (tests/e2e/test_e2e_key_table.py runs keys.js with it in Chromium)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from goldset.labeler import keys
from goldset.labeler.judging import LabelSession
from goldset.labeler.store import Store

ROOT = Path(__file__).resolve().parents[1]
KEYS_JS = ROOT / "labeler" / "keys.js"


def test_keys_js_names_no_key_of_the_table_itself():
    # The letters live in keys.py only: keys.js compares actions, never a letter.
    code = re.sub(r"//[^\n]*", "", KEYS_JS.read_text(encoding="utf-8"))
    letters = [key for key in keys.KEY_ACTIONS if len(key) == 1 and key.isalpha()]
    found = [key for key in letters if re.search(rf"""["']{key}["']""", code)]
    assert found == []
    assert "ArrowDown" not in code  # the browser's key names come from the table too


@pytest.fixture
def session(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_records(
            [
                {"query_id": f"q{n}", "query": f"query {n}", "candidates": [{"doc_id": f"d{n}"}]}
                for n in range(1, 8)
            ]
        )
        store.add_annotator("ana")
        yield LabelSession(store, "ana")


def test_the_server_takes_every_key_the_browser_sends(session):
    for max_grade in (1, 3):
        session.store.configure(max_grade=max_grade, by="rita")
        assert set(keys.HISTORY_KEYS) <= set(session.accepted_keys)
        assert set(keys.KEY_ACTIONS) <= set(session.accepted_keys)


def test_h_5_reopens_the_fifth_latest_query_in_a_binary_project(session):
    session.store.configure(max_grade=1, by="rita")
    for _ in range(6):
        session.press("s")  # q1..q6 viewed, q7 open
    assert session.query_id == "q7"
    session.press("h")
    session.press("5")
    assert session.query_id == "q2"


def test_a_grade_after_a_refused_history_key_is_a_grade(session):
    session.press("s")  # q1 viewed, q2 open
    session.press("h")
    session.press("7")  # no 7th entry: said, and H no longer waits
    assert session.message == "No history entry '7'."
    session.press("1")
    assert session.store.labels("q2", "ana") == {"d2": 1}
