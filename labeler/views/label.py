"""The label page: one query at a time, one key per judgement.

Everything that changes with a key press lives in one fragment, so a press reruns only that
panel. Keys arrive through :func:`labeler.keys.listen` (none lost, none doubled); the buttons
do the same actions for mouse users, deliberately without ``shortcut=`` (keys would count twice).
Data text (queries, titles, documents, ids, slices) only ever reaches the page through
:mod:`labeler.render`, escaped.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from labeler import keys, render, team
from labeler.auth import LOCAL_ANNOTATOR
from labeler.judging import KEY_HELP, MODES, LabelSession, QueryView, grade_name
from labeler.views import context

GUIDELINES = Path(__file__).resolve().parents[1] / "guidelines.md"
MODE_NAMES = {
    "first_hit": "First hit (stop at the first relevant)",
    "full": "Full (grade every one)",
}
SEARCH_RESULTS = 8
SEARCH_LABEL = "Search the corpus"


def sidebar(session: LabelSession, annotator: str) -> None:
    """Mode, details toggle, keyboard help and logout."""
    with st.sidebar:
        st.html(render.note(f"Labelling as {annotator}"))
        mode = st.radio(
            "Mode for new queries",
            MODES,
            index=MODES.index(session.mode),
            format_func=MODE_NAMES.get,
        )
        session.set_mode(mode)
        st.toggle("Show score and provenance", key="show_details")
        st.html(keys_help(session))
        if annotator != LOCAL_ANNOTATOR and st.button("Log out"):
            context.logout()
            st.rerun()


def keys_help(session: LabelSession) -> str:
    """The key map as a small table (static text: nothing from the data)."""
    rows = [(k, grade_name(int(k))) for k in session.grade_keys]
    rows += [(k.upper(), meaning) for k, meaning in KEY_HELP.items()]
    rows += [("/", "search the corpus"), ("Esc", "leave a text field")]
    cells = "".join(f"<span><kbd>{key}</kbd></span><span>{meaning}</span>" for key, meaning in rows)
    return f'<div class="gs-keymap">{cells}</div>'


def progress_bar(session: LabelSession) -> None:
    """Done / total for this annotator, overall and per slice."""
    per_slice = session.progress()
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


def candidate_cards(view: QueryView, terms: list[str]) -> str:
    """All candidate cards in the store's order, then any documents attached from search."""
    current_id = view.current["doc_id"] if view.current else None
    cards = []
    for candidate in view.candidates:
        if candidate["doc_id"] == current_id:
            state, label = "current", None
        elif candidate["grade"] is not None:
            state, label = "judged", f"{candidate['grade']} · {grade_name(candidate['grade'])}"
        else:
            state, label = "waiting", None
        cards.append(
            render.candidate_card(
                rank=candidate["position"],
                title=candidate["title"],
                text=candidate["text"],
                terms=terms,
                state=state,
                label=label,
                details=details(candidate),
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
    return "".join(cards)


def action_buttons(session: LabelSession, view: QueryView) -> None:
    """One button per key, for mouse users; the label names the key."""
    grade_keys = "01" if view.mode == "first_hit" else session.grade_keys
    actions = [(k, f"{k} · {grade_name(int(k))}") for k in grade_keys]
    actions += [(k, f"{k.upper()} · {meaning}") for k, meaning in KEY_HELP.items()]
    columns = st.columns(4)
    for index, (key, label) in enumerate(actions):
        columns[index % 4].button(
            label,
            key=f"button_{key}",
            on_click=session.press,
            args=(key,),
            width="stretch",
            type="primary" if key in grade_keys else "secondary",
        )


def missed_answer_search(session: LabelSession, view: QueryView, terms: list[str]) -> None:
    """When no candidate is relevant: explain U vs M, and search the corpus for the answer."""
    st.warning(
        "No candidate is relevant. Press **U** if the corpus holds no answer (unanswerable), "
        "**M** if an answer should exist (a miss). You may first search the corpus (**/**) and "
        "attach the document the system missed.",
        icon=":material/search:",
    )
    text = st.text_input(
        SEARCH_LABEL,
        key=f"search_{view.query['query_id']}",
        placeholder="/ to search, Enter to run, Esc to go back to the keys",
    )
    if not text:
        return
    candidate_ids = {candidate["doc_id"] for candidate in view.candidates}
    results = [
        doc
        for doc in session.store.search(text, SEARCH_RESULTS)
        if doc["doc_id"] not in candidate_ids
    ]
    if not results:
        st.caption("No document outside the candidates matches.")
    for number, doc in enumerate(results, start=1):
        card = render.candidate_card(
            rank=number, title=doc["title"], text=doc["text"], terms=terms, state="waiting"
        )
        left, right = st.columns([5, 1], vertical_alignment="center")
        left.html(card)
        right.button(
            "Attach",
            key=f"attach_{number}",
            on_click=session.attach,
            args=(doc["doc_id"],),
            help="Attach this document as the relevant answer the system missed",
        )


def notes(session: LabelSession, view: QueryView) -> None:
    """The annotator's note on the query, saved when the field is left or Enter is pressed."""
    key = f"note_{view.query['query_id']}"
    st.text_input(
        "Notes",
        value=view.state["note"],
        key=key,
        on_change=lambda: session.save_note(st.session_state[key]),
        placeholder="Optional; Esc returns to judging",
    )


@st.fragment
def judging_panel(session: LabelSession) -> None:
    """The query, its candidates and the actions: rerun alone on every key press."""
    keys.listen(
        session.accepted_keys,
        lambda press: session.press_typed(
            press.key, page=press.page or "", seq=press.seq, lag_seconds=press.lag_seconds
        ),
        focus={"/": SEARCH_LABEL},
        follow=".gs-current",
        applied_before=session.store.applied_key_press,
    )
    progress_bar(session)
    view = session.view()
    if session.message:
        st.html(render.note(session.message))
    if view is None:
        st.success("Nothing left to label. Z undoes the last action; P goes back.")
        return
    query = view.query
    terms = render.query_terms(query["query"])
    st.html(render.query_heading(query["query"], query["query_id"], query["slice"]))
    st.html(candidate_cards(view, terms))
    if view.no_relevant_candidate:
        missed_answer_search(session, view, terms)
    action_buttons(session, view)
    notes(session, view)


def open_linked_query(session: LabelSession, role: str) -> None:
    """Open the query named in the URL (``?query=q17``, the dashboard's worst-query links),
    then drop it from the URL so that a reload resumes as usual. Reviewers and admins only:
    an annotator keeps to their own queue."""
    query_id = st.query_params.get("query")
    if query_id is None:
        return
    del st.query_params["query"]
    if not team.has_role(role, "reviewer"):
        return
    try:
        session.store.query(query_id)
    except ValueError:
        session.message = f"No query {query_id} in this project."
        return
    session.query_id, session.message = query_id, ""


def main() -> None:
    """Render the label page."""
    user = context.require_user()
    annotator = user["name"]
    session = context.label_session(annotator)
    open_linked_query(session, user["role"])
    st.html(render.stylesheet())
    sidebar(session, annotator)
    with st.expander("Guidelines", icon=":material/menu_book:"):
        st.markdown(GUIDELINES.read_text(encoding="utf-8"))
    judging_panel(session)


main()
