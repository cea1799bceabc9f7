"""The "My queries" page: the signed-in user's own queries — done, skipped, open — with their
own verdict on each (never another annotator's), filtered by slice and verdict, searched by
text, and opened in the label page.

Only queries of the user's queue are listed (the store applies the queue rule in SQL), and a
query is opened through the label page's ``?query=`` link, which checks the queue again on
the server. Data text (queries, ids, slices) reaches the page only through ``st.dataframe``
and widget options (plain text), never as Markdown or HTML. Filtering, counting and paging
are the store's, one statement a run: nothing is loaded past the page shown.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from goldset.labeler.store import VERDICTS, Store
from goldset.labeler.views import context

PAGE_SIZE = 50
PAGE_KEY = "my_queries_page"  # the page shown, 0-based; back to 0 when a filter changes
LABEL_PAGE = "views/label.py"
NO_SLICE = "(no slice)"
PREVIEW = 60  # characters of a query's text in the chooser
VERDICT_NAMES = {
    "relevant": "first relevant (#k)",
    "unanswerable": "unanswerable",
    "miss": "miss",
    "in_progress": "in progress",
    "pending": "pending",
    "skipped": "skipped",
}
COLUMNS = {
    "query_id": "Query ID",
    "query": "Query",
    "slice": "Slice",
    "verdict": "Your verdict",
    "updated_at": "Last change",
}


def verdict_word(row: dict) -> str:
    """The annotator's verdict on a listed query in a word: ``#3`` (the rank of the first
    relevant candidate), unanswerable, miss, in progress, pending or skipped."""
    if row["verdict"] == "relevant":
        return f"#{row['first_relevant_rank']}"
    return VERDICT_NAMES[row["verdict"]]


def _first_page() -> None:
    st.session_state[PAGE_KEY] = 0


def filters(store: Store, annotator: str) -> dict:
    """The slice, verdict and text filters; returns them as :meth:`Store.own_queries` takes
    them (an empty choice filters nothing)."""
    slices = [name for name, counts in store.progress(annotator).items() if counts["total"]]
    by_slice, by_verdict, by_text = st.columns([2, 2, 3])
    chosen_slices = by_slice.multiselect(
        "Slice",
        slices,
        format_func=lambda name: name or NO_SLICE,
        key="my_queries_slices",
        on_change=_first_page,
        placeholder="All slices",
    )
    chosen_verdicts = by_verdict.multiselect(
        "Your verdict",
        VERDICTS,
        format_func=VERDICT_NAMES.get,
        key="my_queries_verdicts",
        on_change=_first_page,
        placeholder="All verdicts",
    )
    text = by_text.text_input(
        "Search the query text",
        key="my_queries_text",
        on_change=_first_page,
        placeholder="Words of the query, or its id",
    )
    return {
        "slices": chosen_slices or None,
        "verdicts": chosen_verdicts or None,
        "text": text.strip(),
    }


def page_of_queries(store: Store, annotator: str, chosen: dict) -> dict:
    """The page of queries shown: the one asked for, or the first when it no longer exists
    (others finished queries of the shared queue meanwhile)."""
    page = st.session_state.setdefault(PAGE_KEY, 0)
    found = store.own_queries(annotator, **chosen, limit=PAGE_SIZE, offset=page * PAGE_SIZE)
    if not found["queries"] and page:
        _first_page()
        found = store.own_queries(annotator, **chosen, limit=PAGE_SIZE)
    return found


def pager(total: int) -> None:
    """Which queries are shown, and buttons to the previous and next pages."""
    page = st.session_state[PAGE_KEY]
    first, last = page * PAGE_SIZE + 1, min((page + 1) * PAGE_SIZE, total)
    back, caption, forward = st.columns([1, 4, 1], vertical_alignment="center")
    back.button("Previous", key="my_queries_back", on_click=_turn, args=(-1,), disabled=not page)
    caption.caption(f"Queries {first:,}–{last:,} of {total:,}")
    forward.button("Next", key="my_queries_next", on_click=_turn, args=(1,), disabled=last >= total)


def _turn(step: int) -> None:
    st.session_state[PAGE_KEY] += step


def queries_table(queries: list[dict]) -> None:
    """The page's queries as a table (data text as cells: never markup)."""
    rows = [
        {**row, "verdict": verdict_word(row), "updated_at": _minute(row["updated_at"])}
        for row in queries
    ]
    table = pd.DataFrame(rows, columns=list(COLUMNS)).rename(columns=COLUMNS)
    st.dataframe(
        table,
        hide_index=True,
        height=context.rows_height(queries),
        column_config={"Query": st.column_config.TextColumn(width="large")},
    )


def _minute(log_time: str | None) -> str:
    """A log time (``2026-12-02T12:48:48.025123Z``) to the minute: ``2026-12-02 12:48 UTC``
    (``—`` for a query the user never touched)."""
    return f"{log_time[:16].replace('T', ' ')} UTC" if log_time else "—"


def open_chooser(queries: list[dict]) -> None:
    """Choose one of the page's queries and open it in the label page (``?query=``: the label
    page opens it if it is the user's to open)."""
    by_id = {row["query_id"]: row for row in queries}
    chosen = st.selectbox(  # option labels are plain text: data text is safe there
        "Query to open",
        list(by_id),
        format_func=lambda query_id: _choice_label(by_id[query_id]),
        key="my_queries_open",
    )
    if st.button("Open in the label page", type="primary", disabled=chosen is None):
        st.switch_page(LABEL_PAGE, query_params={"query": chosen})


def _choice_label(row: dict) -> str:
    text = " ".join(row["query"].split())
    text = text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"
    return f"{row['query_id']} · {verdict_word(row)} · {text}"


def main() -> None:
    """Render the page for the signed-in user, whatever their role: their own queue."""
    user = context.open_page("annotator", "My queries")
    store = context.store()
    st.caption(
        "Your queries: assigned to you, or in the shared queue the ones you worked on and "
        "those still open. The verdicts are yours alone."
    )
    chosen = filters(store, user["name"])
    found = page_of_queries(store, user["name"], chosen)
    if not found["queries"]:
        st.info("No query of yours matches these filters.")
        return
    pager(found["total"])
    queries_table(found["queries"])
    open_chooser(found["queries"])


main()
