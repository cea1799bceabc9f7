"""The review page: agreement between annotators, and the adjudication queue.

Reviewers and admins only: the role is checked on the server before anything is read, and
again (from the database) by every decision. Data text — queries, titles, doc ids, user
names — reaches the page only through ``st.dataframe`` or :mod:`goldset.labeler.render`, escaped;
never through a markdown label.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from goldset.labeler import render, team
from goldset.labeler.judging import grade_name
from goldset.labeler.store import Store
from goldset.labeler.views import context

BOOTSTRAP_RESAMPLES = 1000
NOT_JUDGED = -1  # the decision form's "leave unjudged" option
QUERY_PREVIEW = 60  # characters of a query's text in the queue's selector
FIGURES_PER_ROW = 2  # agreement tiles per row: their labels are long, never cut


@st.cache_data(ttl=60, max_entries=16, show_spinner="Computing agreement…")
def _agreement(path: str, marks: tuple) -> dict:
    """The agreement report, recomputed only when a label or decision changed (``marks``)."""
    return team.agreement_report(context.store(), n_resamples=BOOTSTRAP_RESAMPLES)


def agreement_section(store: Store) -> None:
    """The four agreement figures overall, then per annotator pair and per slice."""
    st.subheader("Agreement")
    report = _agreement(str(store.path), store.dashboard_marks())
    if not report["queries"]:
        st.info("No query has been completed by two annotators yet: deal some with overlap.")
        return
    st.caption(
        f"{report['queries']} doubly judged queries · 95% bootstrap CIs over queries · "
        "n = items behind each figure · n/a = undefined (no items, or one category only)"
    )
    names = list(team.FIGURE_NAMES.items())
    for start in range(0, len(names), FIGURES_PER_ROW):
        row = names[start : start + FIGURES_PER_ROW]
        for column, (key, label) in zip(st.columns(FIGURES_PER_ROW), row, strict=False):
            figure = report["overall"][key]
            value = "n/a" if figure["value"] is None else f"{figure['value']:.3f}"
            column.metric(label, value, help=team.agreement_text(figure), border=True)
    st.dataframe(pd.DataFrame(team.figure_table(report)), hide_index=True)


def queue_section(store: Store, reviewer: dict) -> None:
    """The disagreements, most consequential first, and the one chosen, with the means to
    decide it."""
    show_decided = st.toggle("Show decided queries too", key="show_decided")
    queue = team.adjudication_queue(store, include_decided=show_decided)
    waiting = sum(item["decision"] is None for item in queue)
    st.subheader(f"Adjudication queue · {waiting} waiting")
    if not queue:
        st.success("No disagreement waiting.")
        return
    st.caption(
        "Ordered by the effect on MRR@10: the gap between the annotators' reciprocal ranks "
        "(ΔMRR@10 = that gap over the scored queries), then by the docs graded differently."
    )
    st.dataframe(
        pd.DataFrame([_queue_row(item) for item in queue]),
        hide_index=True,
        column_config={"Query": st.column_config.TextColumn(width="medium")},
    )
    by_id = {item["query_id"]: item for item in queue}
    chosen = st.selectbox(  # option labels are plain text: data text is safe there
        "Disagreement to decide",
        list(by_id),
        format_func=lambda query_id: queue_label(list(by_id).index(query_id), by_id[query_id]),
        key="review_query",
    )
    with st.container(border=True):
        disagreement(store, reviewer, by_id[chosen])


def queue_label(index: int, item: dict) -> str:
    """How a disagreement is named in the selector: its place, query id and text, the RR@10
    gap and whether it is decided."""
    state = "decided" if item["decision"] else "waiting"
    text = render.clip(item["query"], QUERY_PREVIEW)
    return f"{index + 1} · {item['query_id']} · {text} · RR@10 gap {item['rr_gap']:.2f} · {state}"


def _queue_row(item: dict) -> dict:
    labels = "; ".join(f"{name}: {_outcome(label)}" for name, label in item["labels"].items())
    return {
        "Query id": item["query_id"],
        "Query": item["query"],
        "Slice": item["slice"],
        "Differs on": ", ".join(kind.replace("_", " ") for kind in item["kinds"]),
        "RR@10 gap": round(item["rr_gap"], 3),
        "ΔMRR@10": round(item["mrr_effect"], 4),
        "Labels": labels,
        "Decided by": item["decision"].reviewer if item["decision"] else "",
    }


def _outcome(label: dict) -> str:
    if label["first_relevant_rank"]:
        return f"first relevant #{label['first_relevant_rank']}"
    return "miss" if label["answerable"] else "unanswerable"


def disagreement(store: Store, reviewer: dict, item: dict) -> None:
    """One query: its text, each judged candidate's text with every annotator's grade beside
    it, accept one annotator's label, or decide grade by grade."""
    query_id = item["query_id"]
    st.html(render.stylesheet())
    st.html(render.query_heading(item["query"], query_id, item["slice"]))
    docs = _judged_docs(store, item)
    names = list(item["labels"])
    columns = st.columns(len(names))
    for column, (name, label) in zip(columns, item["labels"].items(), strict=True):
        column.html(render.note(f"{name}: {_outcome(label)}"))
        column.button(
            f"Accept {name}'s label",
            key=f"adopt_{query_id}_{name}",
            on_click=_adopt,
            args=(store, query_id, reviewer["name"], name),
        )
    for doc in docs:
        grades = " · ".join(f"{name}: {_grade_text(doc[name])}" for name in names)
        disputed = len({doc[name] for name in names}) > 1
        st.html(
            render.candidate_card(
                rank=doc["rank"] or 0,
                title=doc["title"] or doc["doc_id"],
                text=doc["text"],
                terms=render.query_terms(item["query"]),
                state="current" if disputed else "judged",
                label=grades,
                details=f"doc {doc['doc_id']}" + ("" if doc["rank"] else " · attached from search"),
                marker="disputed",
            )
        )
    if item["decision"] is not None:
        decision = item["decision"]
        adopted = f", accepting {decision.adopted}'s label" if decision.adopted else ""
        st.html(render.note(f"Decided by {decision.reviewer}{adopted}. {decision.note}"))
    _decision_form(store, reviewer, item, docs)


def _grade_text(grade: int | None) -> str:
    return "—" if grade is None else f"{grade} · {grade_name(grade)}"


def _judged_docs(store: Store, item: dict) -> list[dict]:
    """Every doc an annotator judged: rank (None = attached from search), title, doc_id,
    text, and one column of grades per annotator."""
    labels = item["labels"]
    judged = {doc_id for label in labels.values() for doc_id in label["judgments"]}
    candidates = {c["doc_id"]: c for c in store.candidates(item["query_id"])}
    in_display_order = sorted(
        judged, key=lambda d: (d not in candidates, candidates.get(d, {}).get("position", 0), d)
    )
    rows = []
    for doc_id in in_display_order:
        doc = candidates.get(doc_id) or {**store.document(doc_id), "position": None}
        row = {"rank": doc["position"], "title": doc["title"], "doc_id": doc_id}
        row["text"] = doc.get("text") or ""
        row.update({name: label["judgments"].get(doc_id) for name, label in labels.items()})
        rows.append(row)
    return rows


def _decision_form(store: Store, reviewer: dict, item: dict, docs: list[dict]) -> None:
    """Set the golden grades doc by doc: where the annotators agree, their grade; where they
    disagree, no choice until the reviewer makes one (the form refuses to decide before)."""
    query_id, names = item["query_id"], list(item["labels"])
    options = [NOT_JUDGED, *range(store.settings()["max_grade"] + 1)]
    with st.form(f"decide_{query_id}"):
        grades = {}
        for index, doc in enumerate(docs):
            given = {doc[name] for name in names}
            agreed = given.pop() if len(given) == 1 else None
            where = f"#{doc['rank']}" if doc["rank"] else "attached doc"
            grades[doc["doc_id"]] = st.selectbox(
                f"Grade of {where} (row {index + 1})"
                + (" · annotators agree" if agreed is not None else " · disputed: choose"),
                options,
                index=None if agreed is None else options.index(agreed),
                placeholder="choose a grade",
                format_func=lambda grade: "unjudged" if grade == NOT_JUDGED else grade_name(grade),
                key=f"grade_{query_id}_{index}",
            )
        unanswerable = st.checkbox(
            "Unanswerable: the corpus holds no answer",
            value=all(not label["answerable"] for label in item["labels"].values()),
            key=f"unanswerable_{query_id}",
        )
        note = st.text_input("Note (why)", key=f"note_{query_id}")
        submitted = st.form_submit_button("Decide with these grades")
    if submitted:
        open_rows = [str(i + 1) for i, grade in enumerate(grades.values()) if grade is None]
        if open_rows:
            st.error(f"Choose a grade for the disputed row(s) {', '.join(open_rows)} first.")
            return
        decided = {doc_id: grade for doc_id, grade in grades.items() if grade != NOT_JUDGED}
        _record(
            lambda: team.decide(
                store, query_id, reviewer["name"], decided, not unanswerable, note=note
            ),
            f"{query_id}: decided.",
        )
        st.rerun()


def _adopt(store: Store, query_id: str, reviewer: str, annotator: str) -> None:
    _record(
        lambda: team.adopt(store, query_id, reviewer, annotator),
        f"{query_id}: decided for {annotator}'s label.",
    )


def _record(decide, done: str) -> None:
    """Run a decision; keep what happened to show at the top of the next run."""
    try:
        decide()
    except (ValueError, PermissionError) as error:
        context.report(f"Not decided: {error}")
    else:
        context.report(done)


def main() -> None:
    """Render the review page (reviewers and admins)."""
    reviewer = context.open_page("reviewer", "Review")
    store = context.store()
    agreement_section(store)
    queue_section(store, reviewer)


main()
