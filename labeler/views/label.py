"""The label page: one query at a time, one key per judgement.

Everything that changes with a key press lives in one fragment, so a press reruns only that
panel. Keys arrive through :func:`goldset.labeler.keys.listen` (none lost, none doubled, each aimed
at the query and card on screen); the listener also shows a press's effect on the cards at once,
and the rerun then shows what the server stored. The buttons do the same actions for mouse
users, deliberately without ``shortcut=`` (keys would count twice). Data text (queries,
titles, documents, ids, slices) only ever reaches the page through :mod:`goldset.labeler.render`,
escaped, or as widget options (plain text).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from goldset.labeler import keys, render
from goldset.labeler.auth import LOCAL_ANNOTATOR
from goldset.labeler.judging import (
    IMPLIED_NAME,
    LabelSession,
    QueryView,
    Search,
    StillBusy,
    grade_name,
)
from goldset.labeler.views import context

GUIDELINES = Path(__file__).resolve().parents[1] / "guidelines.md"
MODE_NAMES = {
    "first_hit": "first hit (judge from the top down, stop at the first relevant)",
    "full": "full (grade every candidate)",
}
SEARCH_LABEL = "Search the corpus"
BUTTON_KEYS = "umszxnp"  # the letter keys that also have a button
# The table's words, where they are too long for a button.
BUTTON_WORDS = {"z": "undo", "x": "undo here", "p": "previous"}
KEY_NAMES = {"enter": "Enter", "escape": "Esc"}  # as the keyboard labels them
UNSAVED_HELP = (
    "This press and the ones typed after it are kept on this page and sent again until the "
    "database accepts them: keep the page open (a reload would lose them)."
)


def protocol_text(protocol: dict) -> str:
    """The project's protocol in words (static text: nothing from the data)."""
    depth = f"within the top {protocol['depth']}" if protocol["depth"] else "no depth limit"
    scale = "binary 0/1" if protocol["max_grade"] == 1 else f"grades 0–{protocol['max_grade']}"
    return (
        f"Protocol (set by an admin): {MODE_NAMES[protocol['mode']]}, {depth}, {scale}, "
        f"relevant from {protocol['rel_threshold']}."
    )


def sidebar(session: LabelSession, annotator: str) -> None:
    """Who is labelling, the protocol, details toggle, keyboard help and logout."""
    with st.sidebar:
        st.html(render.note(f"Labelling as {annotator}"))
        # read again on a whole rerun: the judging panel's reruns read it with their page
        st.html(render.note(protocol_text(session.read_protocol())))
        st.toggle("Show score and provenance", key="show_details")
        st.html(keys_help(session))
        if annotator != LOCAL_ANNOTATOR and st.button("Log out"):
            context.logout()
            st.rerun()


def keys_help(session: LabelSession) -> str:
    """The key map as a small table (static text: nothing from the data)."""
    rows = [(k, grade_name(int(k))) for k in session.grade_keys]
    rows += [(KEY_NAMES.get(k, k.upper()), meaning) for k, (_, meaning) in keys.KEY_ACTIONS.items()]
    cells = "".join(f"<span><kbd>{key}</kbd></span><span>{meaning}</span>" for key, meaning in rows)
    return f'<div class="gs-keymap">{cells}</div>'


def progress_bar(per_slice: dict[str, dict[str, int]]) -> None:
    """Done / total for this annotator, overall and per slice (see :meth:`Store.progress`)."""
    done = sum(counts["done"] for counts in per_slice.values())
    total = sum(counts["total"] for counts in per_slice.values())
    skipped = sum(counts["skipped"] for counts in per_slice.values())
    caption = f"{done} of {total} queries done" + (f", {skipped} skipped" if skipped else "")
    st.progress(done / total if total else 0.0, text=caption)
    st.html(render.slice_progress(per_slice))


def details(candidate: dict) -> str | None:
    """Score and provenance of a candidate, when the annotator asked for them."""
    if not st.session_state.get("show_details"):
        return None
    found_by = " · ".join(f"{run} #{rank}" for run, rank in candidate["provenance"].items())
    score = f"score {candidate['score']:.4g}" if candidate["score"] is not None else "no score"
    return f"{score} · found by {found_by or 'search'}"


def candidate_cards(view: QueryView, terms: list[str], *, ahead: bool = False) -> str:
    """All candidate cards in the store's order, then any documents attached from search.
    ``ahead``: another query's cards (the one fetched ahead, or the one Z returns to), hidden,
    with no current card (the key listener marks it when it shows them)."""
    current_id = view.current["doc_id"] if view.current and not ahead else None
    cards = []
    for candidate in view.candidates:
        grade = candidate["grade"]
        implied = candidate["doc_id"] in view.asserted
        label = None if grade is None else f"{grade} · {grade_label(grade, implied)}"
        if candidate["doc_id"] == current_id:
            state = "current"
        else:
            state = "waiting" if grade is None else "judged"
        cards.append(
            render.candidate_card(
                rank=candidate["position"],
                title=candidate["title"],
                text=candidate["text"],
                terms=terms,
                state=state,
                label=label,
                details=details(candidate),
                doc_id=candidate["doc_id"],
                grade=grade,
                implied=implied,
            )
        )
    for rank, doc in enumerate(view.attached, start=len(view.candidates) + 1):
        label = f"attached · {doc['grade']} · {grade_name(doc['grade'])}"
        card = render.candidate_card(
            rank=rank,
            title=doc["title"],
            text=doc["text"],
            terms=terms,
            state="judged",
            label=label,
        )
        cards.append(card)
    return render.card_list(view.query["query_id"], cards, hidden=ahead)


def grade_label(grade: int, implied: bool) -> str:
    """A card's grade in words: what the grade means, or that a verdict gave it."""
    return IMPLIED_NAME if implied else grade_name(grade)


def action_buttons(session: LabelSession) -> None:
    """One button per key, for mouse users; the label names the key. Each row wraps its
    buttons at their own width, so that no label is cut short in a narrow column."""
    rows = [
        [(k, f"{k} · {grade_name(int(k))}", "primary") for k in session.grade_keys],
        [(k, f"{k.upper()} · {button_words(k)}", "secondary") for k in BUTTON_KEYS],
    ]
    for row in rows:
        with st.container(horizontal=True, gap="small"):
            for key, label, kind in row:
                st.button(
                    label,
                    key=f"button_{key}",
                    on_click=session.click,
                    args=(session.press, key),
                    width="content",
                    type=kind,
                )


def button_words(key: str) -> str:
    """A letter button's words: the key table's, short."""
    return BUTTON_WORDS.get(key) or keys.action_words(key)


def verdict_line(view: QueryView) -> None:
    """Under the query's heading: the prompt for a verdict, or, on a finished query, the
    verdict and how to change it (static words and the verdict only)."""
    query_id = view.query["query_id"]
    if view.verdict_due:
        text = (
            "No candidate is relevant. Press U if the corpus holds no answer (unanswerable), "
            "M if an answer should exist (a miss). You may first search the corpus (/) and "
            "attach the document the system missed."
        )
        st.html(render.banner(text, query_id, kind="due"))
    elif view.verdict is not None:
        text = (
            f"Done: {view.verdict}. To change it: grade the selected card (J/K pick another), "
            "or U/M; X undoes the last action on this query."
        )
        st.html(render.banner(text, query_id, kind="done"))


def search_panel(session: LabelSession, view: QueryView) -> None:
    """The corpus search (``/``): a box pre-filled with the query text, and the results, the
    selected one framed; J/K move, Enter attaches, Esc closes."""
    search = session.search
    if search is None or search.query_id != view.query["query_id"]:
        return
    with st.container(key="gs-search"):
        search_box(session, search, f"search_{view.query['query_id']}")


def search_box(session: LabelSession, search: Search, key: str) -> None:
    """The search field and its results (see :func:`search_panel`)."""
    st.text_input(
        SEARCH_LABEL,
        value=search.text,
        key=key,
        on_change=lambda: session.open_search(st.session_state[key]),
        placeholder="Enter searches; then Esc, J/K to choose, Enter to attach",
    )
    grades = session.grade_keys
    st.caption(
        "Any of the words, as prefixes, best first (bm25). J/K move · Enter attaches "
        f"(grade {max(1, session.protocol['rel_threshold'])}) · {grades[0]}–{grades[-1]} "
        "attaches with that grade."
    )
    terms = render.query_terms(search.text)
    marker = f"▶ Enter: attach · {grades[0]}–{grades[-1]}: grade"
    for number, doc in enumerate(search.results, start=1):
        st.html(
            render.candidate_card(
                rank=number,
                title=doc["title"],
                text=doc["text"],
                terms=terms,
                state="current" if number - 1 == search.selected else "waiting",
                marker=marker,
            )
        )
        st.button(
            f"Attach #{number}",
            key=f"attach_{number}",
            on_click=session.click,
            args=(session.attach, doc["doc_id"]),
            help="Attach this document as the relevant answer the system missed",
        )


def history(session: LabelSession, states: dict[str, dict]) -> None:
    """The queries viewed before this one, each reopened with H + its number, or chosen
    (``states``: theirs, as :meth:`Store.recent_states` gives them)."""
    recent = session.recent()
    if not recent:
        return
    entries = [(query_id, _status_word(states.get(query_id))) for query_id in recent]
    st.html(render.history_strip(entries))
    choice = st.selectbox(
        "Reopen a recent query",
        [None, *recent],
        format_func=lambda query_id: "—" if query_id is None else query_id,
        key=f"reopen_{session.query_id}",
        label_visibility="collapsed",
    )
    if choice is not None:
        session.reopen(choice)
        st.rerun(scope="fragment")


def _status_word(state: dict | None) -> str:
    if state is None:
        return "viewed"
    if state["status"] != "done":
        return state["status"].replace("_", " ")
    if state["first_relevant_rank"] is not None:
        return f"#{state['first_relevant_rank']}"
    return "miss" if state["answerable"] else "unanswerable"


def notes(session: LabelSession, view: QueryView) -> None:
    """The annotator's note on the query, saved when the field is left or Enter is pressed."""
    key = f"note_{view.query['query_id']}"
    st.text_input(
        "Notes",
        value=view.state["note"],
        key=key,
        on_change=lambda: session.click(session.save_note, st.session_state[key]),
        placeholder="Optional; Esc returns to judging",
    )


def press_typed(session: LabelSession, press: keys.KeyPress) -> None:
    """Apply one key press from the browser, aimed at what that page showed."""
    session.press_typed(
        press.key,
        page=press.page or "",
        seq=press.seq,
        lag_seconds=press.lag_seconds,
        target=press.target,
    )


@st.fragment
def judging_panel(session: LabelSession) -> None:
    """The query, its candidates and the actions: rerun alone on every key press."""
    if session.refused_account:  # signed out in another tab, or removed: show the sign-in gate
        session.refused_account = False
        st.rerun(scope="app")
    # One read: presses were applied by the listener's callback, before this.
    page = session.page()
    view, ahead, last_action, behind = page.view, page.ahead, page.last_action, page.behind
    keys.listen(
        session.accepted_keys,
        lambda press: press_typed(session, press),
        focus={"/": SEARCH_LABEL},
        follow=".gs-cards:not(.gs-hidden) .gs-current",
        applied_before=session.store.applied_key_press,
        retry_on=(StillBusy,),
        panel=keys.panel_model(
            session, view, ahead, last_action, grade_name=grade_name, implied=IMPLIED_NAME
        ),
        unsaved=bool(session.unsaved),
    )
    with st.container(key="gs-header"):
        if view is not None:
            query = view.query
            st.html(render.query_heading(query["query"], query["query_id"], query["slice"]))
            verdict_line(view)
        progress_bar(page.progress)
        if session.unsaved:
            st.html(render.alert(f"{session.unsaved} {UNSAVED_HELP}"))
        if session.message:
            st.html(render.note(session.message))
    if view is None:
        st.success("Nothing left to label. Z undoes the last action; P goes back.")
        history(session, page.recent)
        return
    terms = render.query_terms(view.query["query"])
    cards, side = st.columns([3, 2], gap="medium")
    with cards:
        # Rendered hidden: the query fetched ahead and the one Z returns to, for the key
        # listener to show before the server answers.
        others = {
            other.query["query_id"]: other
            for other in (ahead, behind)
            if other is not None and other.query["query_id"] != view.query["query_id"]
        }
        hidden = "".join(
            candidate_cards(other, render.query_terms(other.query["query"]), ahead=True)
            for other in others.values()
        )
        st.html(candidate_cards(view, terms) + hidden)
        action_buttons(session)
    with side:
        search_panel(session, view)
        history(session, page.recent)
        notes(session, view)


def open_linked_query(session: LabelSession) -> None:
    """Open the query named in the URL (``?query=q17``, the dashboard's worst-query links),
    then drop it from the URL so that a reload resumes as usual. Reviewers and admins open
    any query, an annotator only one of their own queue (the rule every action follows,
    see :meth:`LabelSession.reopen`)."""
    query_id = st.query_params.get("query")
    if query_id is None:
        return
    del st.query_params["query"]
    session.reopen(query_id)


def main() -> None:
    """Render the label page."""
    st.set_page_config(layout="wide")
    user = context.require_user()
    annotator = user["name"]
    session = context.label_session(annotator)
    open_linked_query(session)
    st.html(render.stylesheet())
    sidebar(session, annotator)
    with st.expander("Guidelines", icon=":material/menu_book:"):
        st.markdown(GUIDELINES.read_text(encoding="utf-8"))
    judging_panel(session)


main()
