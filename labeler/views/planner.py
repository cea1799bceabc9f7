"""The cost planner: what the golden set has cost, what finishing it will cost, and what a
plan would cost before labelling starts.

Measured figures (the same as ``goldset cost --db``) come from
:func:`goldset.labeler.live.cost_summary`:
every active second spent (U/M, search and skips included), the mean seconds of a done query
(its median beside it), the docs it read, queries left. A plan compares
first-hit labelling with full depth k and with the full pool of several systems, whose
real size per query comes from the runs' overlap (:func:`goldset.eval.cost.pool_depth_per_query`).
With a random human sample, the human queries and hours a machine judge saves
(:func:`goldset.labeler.live.judge_savings`), beside its token cost.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from goldset.eval import cost
from goldset.labeler import live
from goldset.labeler.store import Store
from goldset.labeler.views import context

ASSUMED_RANKS = "1, 3, none, 2"  # the field's worked example, until something is measured
ASSUMED_SECONDS = 20.0  # the field's figure per judgement
HOURS = st.column_config.NumberColumn("Hours", format="%.2f")
DOLLARS = st.column_config.NumberColumn("Dollars", format="$%.2f")


@st.cache_data(**context.CACHE)
def measured(_store: Store, state: live.ProjectState, rate: float) -> live.CostSummary:
    """The measured cost at this state of the project."""
    return live.cost_summary(_store, rate)


@st.cache_data(**context.CACHE)
def measured_ranks(state: live.ProjectState) -> tuple[np.ndarray, float | None]:
    """First relevant ranks of the candidate lists on the labelled queries, and the share of
    done queries that are answerable (None before any is done)."""
    golden = context.golden_at(state)
    ranks = live.first_relevant_ranks(golden, context.run_at(state.candidates(), None)).to_numpy()
    return ranks, live.answerable_share(golden)


@st.cache_data(**context.CACHE)
def pool_frames(
    _store: Store, state: live.ProjectState, pooled: tuple[str, ...], uploads: tuple
) -> dict[str, pd.DataFrame]:
    """The results of the chosen pooled runs and uploaded run files, by run name."""
    return live.runs_to_pool(_store, pooled, uploads)


def money(value: float | None) -> str:
    """Dollars, or a dash when not known yet."""
    return "–" if value is None or math.isnan(value) else f"${value:,.2f}"


def measured_section(summary: live.CostSummary) -> None:
    """Spent, remaining and total, the measured figures behind them, and per annotator."""
    st.subheader("Measured so far")
    figures = summary.cost
    for column, (label, price) in zip(
        st.columns(3),
        (("spent", figures.spent), ("remaining", figures.remaining), ("total", figures.total)),
        strict=True,
    ):
        column.metric(label, money(price.dollars))
        column.caption(live.duration_text(price.hours))
    st.caption(  # numbers only: no data text
        f"{live.work_text(summary)} · {summary.annotators_per_query:.2f} annotators per "
        f"query · at \\${summary.rate:g}/h"
    )
    st.dataframe(
        summary.per_annotator,
        hide_index=True,
        column_config={
            "annotator": "Annotator",
            "judgements": st.column_config.NumberColumn(
                "Judgements made", help="Undone ones included: their time was spent"
            ),
            "queries_done": "Queries done",
            "seconds_per_query": st.column_config.NumberColumn(
                "Mean seconds per done query",
                format="%.1f",
                help="Every active second of the query: reading, judging, U/M, search, skips",
            ),
            "median_seconds_per_query": st.column_config.NumberColumn(
                "Median seconds per done query", format="%.1f"
            ),
            "judgements_per_query": st.column_config.NumberColumn(
                "Docs read per done query",
                format="%.2f",
                help="Judged one by one, or answered for by a U/M verdict",
            ),
            "seconds_per_judgement": st.column_config.NumberColumn(
                "Seconds per doc read", format="%.1f"
            ),
            "hours": HOURS,
            "dollars": DOLLARS,
        },
    )


def bounded_input(column, label: str, low, high, value, step=None):
    """A number input whose default, measured on the project, is clamped into its range: a
    measured figure outside it (0 s per judgement, no annotator yet) must not break the page."""
    return column.number_input(label, low, high, min(max(value, low), high), step)


def plan_inputs(store: Store, summary: live.CostSummary, ranks: np.ndarray, share: float | None):
    """The plan's inputs, defaulting to what was measured (or the field's figures)."""
    measured_seconds = summary.cost.seconds_per_judgement
    if not live.finite(measured_seconds) or measured_seconds <= 0:
        measured_seconds = ASSUMED_SECONDS  # nothing timed yet (or only instant imports)
    left, right = st.columns(2)
    queries = bounded_input(
        left, "Queries to label", 1, 10_000_000, store.status()["queries"] or 400
    )
    k = right.number_input("Depth k", 1, 1000, live.CUTOFF)
    seconds = bounded_input(left, "Seconds per judgement", 0.1, 3600.0, float(measured_seconds))
    if live.finite(summary.cost.seconds_per_judgement):
        left.caption("Measured: a done query's seconds (U/M, search, skips too) per doc read.")
    annotators = bounded_input(
        right, "Annotators per query", 1.0, 10.0, float(summary.annotators_per_query), 0.1
    )
    answerable = bounded_input(
        left, "Answerable share", 0.0, 1.0, share if share is not None else 0.85, 0.05
    )
    if len(ranks):
        right.caption(f"First relevant ranks: measured on {len(ranks):,} labelled queries.")
        sample = ranks
    else:
        text = right.text_input(
            "Assumed first relevant ranks (none = not in the top k)", ASSUMED_RANKS
        )
        sample = parse_ranks(text)
    return int(queries), int(k), sample, float(seconds), float(annotators), float(answerable)


def parse_ranks(text: str) -> np.ndarray:
    """``"1, 3, none, 2"`` as ranks (none is NaN); shows an error and uses the default on a
    bad entry."""
    try:
        return np.array([math.nan if p.strip() == "none" else float(p) for p in text.split(",")])
    except ValueError:
        st.error(f"Ranks are numbers or none, separated by commas: using {ASSUMED_RANKS}.")
        return parse_ranks(ASSUMED_RANKS)


def pool_section(store: Store, state: live.ProjectState, k: int) -> float | None:
    """The real pool size per query of the chosen runs at depth k, beside k × systems."""
    st.subheader("Pooling several systems")
    depths = {run["name"]: run["depth"] for run in store.status()["runs"]}
    pooled = list(depths)
    chosen = st.multiselect("Pooled runs of the project", pooled, default=pooled)
    files = st.file_uploader(
        "Or run files (TREC or JSONL)", accept_multiple_files=True, key="plan_runs"
    )
    uploads = tuple((file.name, file.getvalue()) for file in files or [])
    if len(chosen) + len(uploads) == 0:
        st.caption("Choose or upload the runs to pool to see their real overlap.")
        return None
    # A pooled run holds only its pooled top docs: a deeper pool of it would repeat that size
    # (and show a false saving), so only depths it holds are sized.
    deepest = min((depths[name] for name in chosen), default=None)
    asked = sorted({max(1, k // 2), k, 2 * k})
    shown = [depth for depth in asked if deepest is None or depth <= deepest]
    if not shown:
        st.caption(f"The chosen pooled runs hold only their top {deepest}: choose k ≤ {deepest}.")
        return None
    try:
        frames = pool_frames(store, state, tuple(chosen), uploads)
        sizes = live.pool_sizes(frames, shown)
    except ValueError as error:
        context.show_error("Could not pool these runs:", error)
        return None
    st.dataframe(
        sizes.assign(overlap_saving=sizes["overlap_saving"] * 100),
        hide_index=True,
        column_config={
            "depth": "Depth",
            "systems": "Systems",
            "depth_x_systems": "Depth × systems",
            "pooled_per_query": st.column_config.NumberColumn(
                "Docs per query (real overlap)", format="%.1f"
            ),
            "overlap_saving": st.column_config.NumberColumn("Saved by overlap", format="%.1f%%"),
        },
    )
    if len(shown) < len(asked):
        st.caption(
            f"The chosen pooled runs hold only their top {deepest}: depths beyond it are not "
            "sized (upload the run files to size deeper pools)."
        )
    at_k = sizes.loc[sizes["depth"] == k, "pooled_per_query"]
    return float(at_k.iloc[0]) if len(at_k) else None


def plan_section(store: Store, state: live.ProjectState, summary: live.CostSummary) -> None:
    """What labelling would cost: first hit vs full depth k vs the full pool."""
    st.subheader("Plan")
    ranks, share = measured_ranks(state)
    queries, k, sample, seconds, annotators, answerable = plan_inputs(store, summary, ranks, share)
    pool_depth = pool_section(store, state, k)
    depth = summary.cost.judgements_per_query
    measured_depth = depth if k == live.CUTOFF and live.finite(depth) and depth > 0 else None
    table = live.plans(
        queries,
        k,
        sample,
        seconds,
        summary.rate,
        annotators_per_query=annotators,
        answerable_share=answerable,
        pool_depth=pool_depth,
        measured_depth=measured_depth,
    )
    st.dataframe(
        table,
        hide_index=True,
        column_config={
            "plan": st.column_config.TextColumn("Plan", width="medium"),
            "docs_per_query": st.column_config.NumberColumn("Docs judged per query", format="%.2f"),
            "hours": HOURS,
            "dollars": DOLLARS,
        },
    )
    if measured_depth is not None:
        st.caption(
            f"First hit is priced at the measured docs read ({measured_depth:.2f} per done "
            "query, as above, those a U/M verdict answered for included), not at the depth the "
            "first relevant ranks alone suggest."
        )


def machine_section(judges: list[dict], summary: live.CostSummary) -> None:
    """Machine judging beside human hours: what each judge (:meth:`Store.machine_judges`)
    would cost to fill holes (pairs no human labelled), from its measured tokens and call
    seconds per label at the prices entered, and the human hours (at the measured seconds
    per judgement) that it saves."""
    st.subheader("Machine judging")
    if not judges:
        st.caption("No machine judge has labelled anything yet (goldset judge).")
        return
    left, middle, right = st.columns(3)
    price_in = left.number_input("$ per million prompt tokens", 0.0, 10_000.0, 0.0, 0.05)
    price_out = middle.number_input("$ per million completion tokens", 0.0, 10_000.0, 0.0, 0.05)
    holes = right.number_input("Holes to fill", 0, 100_000_000, 1000, 100)
    rows = []
    for judge in judges:
        per_label = max(judge["labels"], 1)  # failed calls were paid for too: spread them
        priced = cost.machine_judging_cost(
            holes,
            round(judge["prompt_tokens"] * holes / per_label),
            round(judge["completion_tokens"] * holes / per_label),
            judge["seconds"] * holes / per_label,
            input_price=price_in,
            output_price=price_out,
            human_seconds_per_judgement=summary.cost.seconds_per_judgement,
            hourly_rate=summary.rate,
        )
        rows.append(
            {
                "judge": judge["judge"],
                "labels so far": judge["labels"],
                "machine dollars": priced.dollars,
                "machine hours (one request at a time)": priced.wall_seconds / 3600,
                "human hours saved": priced.saved.hours,
                "human dollars saved": priced.saved.dollars,
            }
        )
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        column_config={
            name: st.column_config.NumberColumn(name, format=spec)
            for name, spec in (
                ("machine dollars", "$%.4f"),
                ("machine hours (one request at a time)", "%.2f"),
                ("human hours saved", "%.2f"),
                ("human dollars saved", "$%.2f"),
            )
        },
    )
    st.caption("Only a judge that goldset calibrate finds usable on a slice should fill its holes.")


@st.cache_data(**context.CACHE)
def savings(
    _store: Store,
    state: live.ProjectState,
    drawn_at: str,
    judge: str,
    judge_labels: int,
    rate: float,
    target: float,
) -> pd.DataFrame | None:
    """:func:`goldset.labeler.live.judge_savings` of the candidate lists with ``judge``; None
    without a labelled query in the project's random sample. A new draw (``drawn_at``) and
    the judge's labels (never changed or taken back: ``judge_labels``, their count) are no
    label event, so they key the cache too."""
    sample = _store.human_sample()
    if not sample["labelled"].any():
        return None
    golden = context.golden_at(state)
    run = context.run_at(state.candidates(), None)
    judged = _store.machine_judgments_frame(judge)
    return live.judge_savings(golden, run, judged, sample, measured(_store, state, rate), target)


def savings_section(
    store: Store, state: live.ProjectState, summary: live.CostSummary, judges: list[dict]
) -> None:
    """The human queries and hours an MRR@10 CI needs per slice, without a machine judge and
    with its values on every query corrected on the random sample (prediction-powered);
    ``judges`` as :meth:`Store.machine_judges` gives them."""
    st.subheader("With a machine judge on every query")
    labels = {row["judge"]: row["labels"] for row in judges if row["labels"]}
    if not labels:
        st.caption("No machine judge has labelled anything yet (goldset judge).")
        return
    left, right = st.columns(2)
    judge = left.selectbox("Judge", list(labels), key="savings_judge")
    target = right.number_input("Target CI half-width (MRR@10)", 0.005, 0.5, 0.05, 0.005)
    drawn_at = store.sampling()["drawn_at"] or ""
    table = savings(store, state, drawn_at, judge, labels[judge], summary.rate, target)
    if table is None:
        st.caption(
            "No figure without a random human sample: draw one (goldset sample --random) "
            "and label its queries first."
        )
        return
    st.dataframe(
        table,
        hide_index=True,
        column_config={
            "correlation": st.column_config.NumberColumn("ρ judge-human", format="%.2f"),
            "human_queries": st.column_config.NumberColumn("Human queries, no judge"),
            "with_judge": st.column_config.NumberColumn("Human queries, with judge"),
            **{
                name: st.column_config.NumberColumn(name.replace("_", " "), format="%.2f")
                for name in ("hours_without", "hours_with", "hours_saved")
            },
        },
    )
    st.caption(
        "With the judge: n × (1 − ρ²) human queries, ρ the correlation of the judge's and "
        "the humans' per-query MRR@10 on the labelled sample, assumed to hold on the rest. "
        "The judge must label every query: its cost is in the Machine judging table above."
    )


def main() -> None:
    """Render the cost planner page (reviewers and admins)."""
    context.open_page("reviewer", "Cost planner")
    store = context.store()
    with st.sidebar:
        rate = st.number_input("Hourly rate ($)", 0.0, 10_000.0, live.DEFAULT_RATE, 5.0)
    state = live.ProjectState.of(store)
    summary = measured(store, state, rate)
    measured_section(summary)
    plan_section(store, state, summary)
    # read once for both sections: a sum over every judge call (0.3 s at 400,000 calls)
    judges = store.machine_judges()
    machine_section(judges, summary)
    savings_section(store, state, summary, judges)


main()
