"""The label page, driven through its buttons in AppTest (the keys call the same actions).

Each test starts a fresh browser session on a small project: three queries of three
candidates each, over two slices.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from goldset.labeler.auth import hash_password
from goldset.labeler.store import Store

APP = "../labeler/app.py"
TASKS = [
    {
        "query_id": f"q{number}",
        "query": f"query number {number}",
        "slice": "head" if number < 3 else "tail",
        "candidates": [
            {"doc_id": f"q{number}-d{rank}", "title": f"doc {rank}", "text": f"text {rank}"}
            for rank in (1, 2, 3)
        ],
    }
    for number in (1, 2, 3)
]
TASKS.append(
    {
        "query_id": "lone",
        "query": "zebra manual",
        "candidates": [{"doc_id": "zebra-guide", "title": "Zebra guide", "text": "zebra"}],
    }
)


@pytest.fixture
def small_db(make_project, open_in_app) -> Path:
    """The small project of ``TASKS``, opened by the app."""
    return open_in_app(make_project(TASKS))


def open_app() -> AppTest:
    """A new browser session on the app."""
    return AppTest.from_file(APP, default_timeout=30).run()


def press(at: AppTest, *keys: str) -> AppTest:
    """Click the button of each key in turn (the same action as typing it)."""
    for key in keys:
        at.button(key=f"button_{key}").click().run()
        assert not at.exception, at.exception
    return at


def press_keys(at: AppTest, *keys: str) -> AppTest:
    """Type keys that have no button (as the key listener would hand them over)."""
    for key in keys:
        at.session_state["label_session"].press(key)
        at.run()
        assert not at.exception, at.exception
    return at


def heading(at: AppTest) -> str:
    """The HTML of the query heading."""
    return next(h.proto.body for h in at.get("html") if "gs-query-text" in h.proto.body)


def banner(at: AppTest) -> str:
    """The verdict line under the query's heading (empty when there is none)."""
    return " ".join(h.proto.body for h in at.get("html") if "gs-verdict" in h.proto.body)


def record(db_path, query_id: str) -> dict:
    with Store(db_path) as store:
        return next(r for r in store.golden_records() if r["query_id"] == query_id)


def test_a_project_without_users_serves_no_one_beyond_loopback(small_db):
    from streamlit import config

    served_on = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")  # e.g. `streamlit run` with no config
    try:
        at = open_app()
    finally:
        config.set_option("server.address", served_on)
    assert "only serves this machine" in at.error[0].value
    assert not at.button  # no label page, no admin actions


def test_first_relevant_candidate_completes_the_query_and_the_next_appears(small_db):
    at = open_app()
    assert "query number 1" in heading(at)
    press(at, "0", "1")
    assert "query number 2" in heading(at)
    assert record(small_db, "q1")["judgments"] == {"q1-d1": 0, "q1-d2": 1}
    assert record(small_db, "q1")["first_relevant_rank"] == 2


def test_first_hit_mode_leaves_later_candidates_unjudged(small_db):
    at = press(open_app(), "1")
    assert record(small_db, "q1")["judgments"] == {"q1-d1": 1}
    assert at.progress[0].proto.text == "1 of 4 queries done"


def test_full_mode_set_by_the_project_grades_every_candidate_before_moving_on(small_db):
    with Store(small_db) as store:
        store.configure(mode="full", by="rita")
    at = open_app()
    assert at.button(key="button_3").label == "3 · perfect"
    press(at, "3", "0")
    assert "query number 1" in heading(at)
    press(at, "2")
    assert "query number 2" in heading(at)
    assert record(small_db, "q1")["judgments"] == {"q1-d1": 3, "q1-d2": 0, "q1-d3": 2}
    assert record(small_db, "q1")["mode"] == "full"


def test_annotators_see_the_protocol_and_cannot_switch_the_mode(small_db):
    with Store(small_db) as store:
        store.configure(mode="full", depth=2, max_grade=4, rel_threshold=2, by="rita")
    at = open_app()
    assert not at.sidebar.radio
    sidebar_text = " ".join(h.proto.body for h in at.sidebar.get("html"))
    assert "full (grade every candidate), within the top 2, grades 0–4, relevant from 2" in (
        sidebar_text
    )
    grade_keys = {f"button_{grade}" for grade in "0123456789"}
    assert [b.label for b in at.button if b.key in grade_keys] == [
        "0 · not relevant", "1 · relevant", "2 · highly relevant", "3 · perfect", "4 · grade 4"
    ]  # fmt: skip
    press(at, "4", "0")  # depth 2: two grades complete the query
    assert record(small_db, "q1")["judgments"] == {"q1-d1": 4, "q1-d2": 0}
    assert "query number 2" in heading(at)


def test_a_binary_first_hit_project_offers_only_1_and_0(small_db):
    with Store(small_db) as store:
        store.configure(max_grade=1)
    at = open_app()
    grade_buttons = [b.key for b in at.button if b.key in {f"button_{g}" for g in "0123"}]
    assert sorted(grade_buttons) == ["button_0", "button_1"]
    assert "<kbd>2</kbd>" not in " ".join(h.proto.body for h in at.sidebar.get("html"))


def test_all_non_relevant_then_unanswerable_is_exported_unanswerable(small_db):
    at = press(open_app(), "0", "0", "0")
    assert "No candidate is relevant" in banner(at)
    press(at, "u")
    assert "query number 2" in heading(at)
    exported = record(small_db, "q1")
    assert (exported["status"], exported["answerable"]) == ("done", False)


def test_all_non_relevant_then_miss_is_exported_answerable_without_a_hit(small_db):
    press(open_app(), "0", "0", "0", "m")
    exported = record(small_db, "q1")
    assert (exported["status"], exported["answerable"]) == ("done", True)
    assert exported["first_relevant_rank"] is None
    assert exported["judgments"] == {"q1-d1": 0, "q1-d2": 0, "q1-d3": 0}


def test_unanswerable_at_the_first_candidate_completes_the_query_in_one_key(small_db):
    at = press(open_app(), "u")
    assert "query number 2" in heading(at)
    exported = record(small_db, "q1")
    assert (exported["status"], exported["answerable"]) == ("done", False)
    assert exported["judgments"] == {"q1-d1": 0, "q1-d2": 0, "q1-d3": 0}
    assert at.session_state["label_session"].message == "q1 done — unanswerable · Z undoes"


def test_one_undo_takes_back_an_unanswerable_given_at_any_candidate(small_db):
    at = press(open_app(), "0", "u", "z")
    assert "query number 1" in heading(at)
    assert record(small_db, "q1")["judgments"] == {"q1-d1": 0}


def test_a_miss_is_refused_while_a_candidate_is_judged_relevant(small_db):
    with Store(small_db) as store:
        store.configure(mode="full")
    at = press(open_app(), "1", "m")
    assert "query number 1" in heading(at)
    assert "#1 is judged relevant" in at.session_state["label_session"].message


def test_search_opens_with_the_query_text_and_enter_attaches_the_selected_result(small_db):
    at = press_keys(open_app(), "/")
    assert at.text_input(key="search_q1").value == "query number 1"
    at.text_input(key="search_q1").input("zebra").run()
    press_keys(at, "enter")
    exported = record(small_db, "q1")
    assert exported["judgments"]["zebra-guide"] == 1
    assert (exported["status"], exported["answerable"]) == ("done", True)
    assert exported["first_relevant_rank"] is None
    assert "query number 2" in heading(at)  # attaching completes the query and moves on


def test_missed_document_attached_by_click_completes_the_query(small_db):
    at = press_keys(open_app(), "/")
    at.text_input(key="search_q1").input("zebra").run()
    at.button(key="attach_1").click().run()
    assert record(small_db, "q1")["judgments"]["zebra-guide"] == 1
    assert "q1 done — miss, answer attached" in at.session_state["label_session"].message


def test_skipped_query_comes_back_after_the_others_and_is_exported_skipped(small_db):
    at = press(open_app(), "s")
    assert "query number 2" in heading(at)
    assert record(small_db, "q1")["status"] == "skipped"
    press(at, "1", "1", "1")
    assert "query number 1" in heading(at)


def test_undo_steps_back_across_queries(small_db):
    at = press(open_app(), "0", "1", "1")
    assert "query number 3" in heading(at)
    press(at, "z")
    assert "query number 2" in heading(at)
    assert record(small_db, "q2")["judgments"] == {}
    press(at, "z", "z")
    assert "query number 1" in heading(at)
    assert record(small_db, "q1")["judgments"] == {}
    press(at, "z")
    assert at.session_state["label_session"].message == "Nothing left to undo."


def hidden_card_lists(at: AppTest) -> list[str]:
    """The queries whose cards the page rendered hidden, for the key listener to show."""
    cards = next(h.proto.body for h in at.get("html") if "gs-cards" in h.proto.body)
    return re.findall(r'class="gs-cards gs-hidden" data-query="([^"]+)"', cards)


def test_the_page_renders_the_query_undo_returns_to_beside_the_one_fetched_ahead(small_db):
    at = press(open_app(), "1")  # q1 done: q2 opens
    assert "query number 2" in heading(at)
    assert hidden_card_lists(at) == ["q3", "q1"]  # next, and Z's target
    press(at, "0")  # the last action is now on the open query: nothing to render for Z
    assert hidden_card_lists(at) == ["q3"]


def test_next_and_previous_move_between_queries_without_judging(small_db):
    at = press(open_app(), "1", "n")
    assert "query number 3" in heading(at)
    press(at, "p")
    assert "query number 2" in heading(at)  # the query viewed before, though never judged
    assert record(small_db, "q2")["judgments"] == {}


def test_a_finished_query_reopened_from_the_history_shows_its_verdict_and_changes_in_place(
    small_db,
):
    at = press(open_app(), "0", "0", "0", "m")
    assert "query number 2" in heading(at)
    press_keys(at, "h", "1")
    assert "query number 1" in heading(at)
    assert "Done: miss" in banner(at) and "No candidate is relevant" not in banner(at)
    press_keys(at, "j", "1")  # it opens on its first card: the second is relevant after all
    exported = record(small_db, "q1")
    assert exported["first_relevant_rank"] == 2 and exported["answerable"]
    with Store(small_db) as store:
        actions = store.events_frame("q1")["action"].tolist()
    assert actions == ["judge", "judge", "judge", "miss", "judge"]  # old events stay


def test_undo_scoped_to_the_open_query_leaves_later_queries_alone(small_db):
    at = press(open_app(), "0", "1", "0")  # q1 done at #2, then #1 of q2 judged
    press_keys(at, "p")
    assert "query number 1" in heading(at)
    press(at, "x")
    assert record(small_db, "q1")["judgments"] == {"q1-d1": 0}
    assert record(small_db, "q2")["judgments"] == {"q2-d1": 0}


def test_a_press_aimed_at_a_card_judged_in_another_tab_writes_nothing(small_db):
    at = open_app()
    other_tab = open_app()
    press(other_tab, "0")  # the other tab judges #1
    session = at.session_state["label_session"]
    session.press_typed(
        "1", page="tab-a", seq=1, target={"query": "q1", "doc": "q1-d1", "grade": None}
    )
    assert record(small_db, "q1")["judgments"] == {"q1-d1": 0}  # not moved on to #2
    assert "#1 was judged meanwhile" in session.message
    with Store(small_db) as store:
        assert store.applied_key_press("tab-a") == 0


def test_a_new_session_resumes_at_the_unfinished_query_and_candidate(small_db):
    press(open_app(), "1", "0")
    at = open_app()
    assert "query number 2" in heading(at)
    current = next(h.proto.body for h in at.get("html") if "gs-current" in h.proto.body)
    assert '<span class="gs-rank">#2</span><span class="gs-title"><bdi>doc 2' in current


def test_judged_candidates_show_their_label_and_the_current_one_is_marked(small_db):
    at = press(open_app(), "0")
    cards = next(h.proto.body for h in at.get("html") if "gs-card" in h.proto.body)
    assert cards.count("gs-current") == 1
    assert '<span class="gs-label">0 · not relevant</span>' in cards


def test_note_is_saved_on_the_query(small_db):
    at = open_app()
    at.text_input(key="note_q1").input("ambiguous wording").run()
    assert record(small_db, "q1")["notes"] == "ambiguous wording"


def test_active_seconds_are_recorded_per_judgement(small_db):
    at = open_app()
    at.session_state["label_session"].active_time.last -= 7.0
    press(at, "1")
    assert record(small_db, "q1")["seconds"] >= 7.0


def test_without_users_the_local_annotator_labels_without_login(small_db):
    press(open_app(), "1")
    assert record(small_db, "q1")["annotators"] == ["local"]


@pytest.fixture
def project_with_user(small_db):
    with Store(small_db) as store:
        store.add_annotator("ana", password_hash=hash_password("s3cret-pw"))
    return small_db


def log_in(at: AppTest, name: str, password: str) -> AppTest:
    at.text_input[0].input(name)
    at.text_input[1].input(password)
    return at.button[0].click().run()


def test_with_users_the_page_asks_for_a_login_first(project_with_user):
    at = open_app()
    assert [b.label for b in at.button] == ["Log in"]
    assert not [h for h in at.get("html") if "gs-query" in h.proto.body]


def test_wrong_password_is_refused(project_with_user):
    at = log_in(open_app(), "ana", "guess")
    assert at.error[0].value == "Unknown user name or wrong password."
    assert [b.label for b in at.button] == ["Log in"]


def test_logged_in_user_labels_under_their_name(project_with_user):
    at = log_in(open_app(), "ana", "s3cret-pw")
    press(at, "1")
    assert record(project_with_user, "q1")["annotators"] == ["ana"]


def test_score_and_provenance_show_on_demand(small_db):
    at = open_app()
    cards = next(h.proto.body for h in at.get("html") if "gs-card" in h.proto.body)
    assert "found by" not in cards
    at.sidebar.toggle[0].set_value(True).run()
    cards = next(h.proto.body for h in at.get("html") if "gs-card" in h.proto.body)
    assert "no score · found by import #1" in cards


def test_guidelines_are_one_collapsed_panel_away(small_db):
    at = open_app()
    assert at.expander[0].label == "Guidelines"
    assert "unanswerable" in at.expander[0].markdown[0].value


def test_the_protocol_an_admin_saves_is_what_annotators_get(project_with_user):
    with Store(project_with_user) as store:
        store.add_annotator("alan", role="admin")
    admin = AppTest.from_file(APP, default_timeout=30)
    admin.session_state["annotator"] = "alan"
    admin.run()
    admin.switch_page("views/admin.py").run()
    field = {widget.label: widget for widget in [*admin.radio, *admin.number_input]}
    field["Mode"].set_value("full")
    field["Depth k (0 = every candidate)"].set_value(2)
    field["Top grade (1 = binary)"].set_value(4)
    next(b for b in admin.button if b.label == "Save protocol").click().run()
    assert not admin.exception, admin.exception
    with Store(project_with_user) as store:
        assert store.settings() == {"mode": "full", "max_grade": 4, "rel_threshold": 1, "depth": 2}
        assert store.protocol_log()[-1]["changed_by"] == "alan"
    at = log_in(open_app(), "ana", "s3cret-pw")
    press(at, "4", "0")
    assert record(project_with_user, "q1")["judgments"] == {"q1-d1": 4, "q1-d2": 0}


def test_the_next_query_is_rendered_ahead_hidden_without_a_current_card(small_db):
    at = open_app()
    cards = next(h.proto.body for h in at.get("html") if "gs-card" in h.proto.body)
    assert '<div class="gs-cards" data-query="q1">' in cards
    ahead = cards[cards.index('<div class="gs-cards gs-hidden" data-query="q2">') :]
    assert "query number 2" not in ahead and "doc 1" in ahead  # its cards, not its heading
    assert "gs-current" not in ahead and cards.count("gs-current") == 1


def cards_of(at: AppTest) -> str:
    """The HTML of the candidate cards on screen (and those rendered ahead, hidden)."""
    return next(h.proto.body for h in at.get("html") if "gs-card" in h.proto.body)


def test_grades_a_verdict_gave_read_by_verdict_apart_from_the_pressed_ones(small_db):
    at = press(open_app(), "0", "u")  # #1 pressed 0; U grades #2 and #3 0 without a press
    press_keys(at, "p")
    assert "query number 1" in heading(at)
    shown = cards_of(at).split('class="gs-cards gs-hidden"')[0]
    assert shown.count('<span class="gs-label">0 · not relevant</span>') == 1
    assert shown.count('<span class="gs-label gs-implied">0 · by verdict</span>') == 2
    panel = at.session_state["label_session"]
    assert panel.page().view.asserted == {"q1-d2", "q1-d3"}


def test_a_reopened_finished_query_opens_on_its_first_card_and_a_grade_button_changes_it(
    small_db,
):
    at = press(open_app(), "u")
    press_keys(at, "p")
    assert "query number 1" in heading(at)
    assert cards_of(at).split('class="gs-cards gs-hidden"')[0].count("gs-current") == 1
    assert 'data-doc="q1-d1" data-grade="0"' in cards_of(at).split("gs-current")[1][:200]
    press(at, "2")
    assert record(small_db, "q1")["judgments"]["q1-d1"] == 2
    assert record(small_db, "q1")["first_relevant_rank"] == 1


def test_a_reopened_query_done_at_a_relevant_card_opens_on_that_card(small_db):
    at = press(open_app(), "0", "1")  # q1 done at #2
    press_keys(at, "p")
    assert "query number 1" in heading(at)
    assert at.session_state["label_session"].page().view.current["doc_id"] == "q1-d2"


def test_a_grade_key_on_the_search_results_attaches_the_selected_one_with_that_grade(small_db):
    at = press_keys(open_app(), "/")
    at.text_input(key="search_q1").input("zebra").run()
    results = [h.proto.body for h in at.get("html") if "guide" in h.proto.body]
    assert len(results) == 1 and "▶ Enter: attach · 0–3: grade" in results[0]
    session = at.session_state["label_session"]
    session.press("3", target={"query": "q1", "attach": True})
    at.run()
    assert record(small_db, "q1")["judgments"] == {"zebra-guide": 3}
    assert "query number 2" in heading(at)


def test_a_query_with_no_candidates_asks_for_a_verdict_at_once(tmp_path, monkeypatch):
    path = tmp_path / "empty.db"
    with Store(path) as store:
        store.import_records([{"query_id": "none", "query": "kotlin adapter", "candidates": []}])
    monkeypatch.setenv("GOLDSET_DB", str(path))
    st.cache_resource.clear()
    at = open_app()
    assert "kotlin adapter" in heading(at)
    assert "No candidate is relevant" in banner(at)
    press(at, "u")
    assert (record(path, "none")["status"], record(path, "none")["answerable"]) == ("done", False)
    st.cache_resource.clear()


def test_the_key_help_lists_every_key_of_the_table(small_db):
    from goldset.labeler.keys import KEY_ACTIONS

    at = open_app()
    help_html = next(h.proto.body for h in at.sidebar.get("html") if "gs-keymap" in h.proto.body)
    for _, meaning in KEY_ACTIONS.values():
        assert meaning in help_html
