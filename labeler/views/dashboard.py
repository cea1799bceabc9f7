"""The dashboard: what the golden set already says, with its uncertainty, while it is made.

The figures refresh by themselves: a fragment reruns every ``REFRESH_SECONDS`` and shows the
newest figures, computed by :mod:`labeler.live` (eval on the store's golden set) and shared
by every session. Two rules keep each rerun fast at any size:

- :func:`latest` serves its entry while it is at most one refresh old and, once older,
  serves it one more time while a new one is computed in the background (Streamlit's
  ``refresh_mode="background"``): a rerun never waits for eval on a large project;
- the figures are computed again only when the store's dashboard marks changed (one cheap
  SQL statement) and, after a computation of t seconds, not before PACE × t seconds have
  passed: on a small project the figures follow every refresh, on a large one the server
  spends at most a fraction of a core on them, however many sessions watch.

Data text (queries, slices, ids) reaches the page only inside dataframe cells and chart
labels, which show it as text.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import altair as alt
import pandas as pd
import streamlit as st

from labeler import live
from labeler.store import Store
from labeler.views import context

REFRESH_SECONDS = 5
PACE = 4  # after a computation of t seconds, the next one waits at least PACE × t
CACHE_SECONDS = 600
FIGURE_LABELS = {
    "mrr@10": "MRR@10",
    "hit@1": "hit@1",
    "hit@10": "hit@10",
    "miss@10": "miss rate",
    live.UNANSWERABLE: "unanswerable",
}
PERCENT_FIGURES = ("hit@1", "hit@10", "miss@10", live.UNANSWERABLE)
NUMBER = st.column_config.NumberColumn(format="%.3f")
FIGURE_COLUMNS = {
    "slice": st.column_config.TextColumn("slice"),
    "metric": st.column_config.TextColumn("figure"),
    "value": NUMBER,
    "ci_low": st.column_config.NumberColumn("95% CI low", format="%.3f"),
    "ci_high": st.column_config.NumberColumn("95% CI high", format="%.3f"),
    "queries": st.column_config.NumberColumn("queries", format="%d"),
    live.JUDGED: st.column_config.NumberColumn(
        live.JUDGED,
        format="%.3f",
        help="Share of the top 10 that is judged: the rest counts as not relevant",
    ),
}

golden_at = st.cache_resource(ttl=CACHE_SECONDS, max_entries=2, show_spinner=False)(live.golden_at)
run_at = st.cache_resource(ttl=CACHE_SECONDS, max_entries=4, show_spinner=False)(live.run_at)


@st.cache_resource(max_entries=16, show_spinner=False)
def last_computed(path: str, run: str | None, target: float, rate: float) -> dict:
    """The figures last computed for these settings, the project state they are of, and when
    they may be computed again: one dict shared by every session."""
    return {}


@st.cache_data(ttl=REFRESH_SECONDS, max_entries=16, show_spinner=False, refresh_mode="background")
def latest(
    path: str, run: str | None, target: float, rate: float
) -> tuple[live.Snapshot, pd.DataFrame, pd.DataFrame, dict]:
    """The project's newest figures: the run's snapshot, coverage per slice, judgements per
    hour and the project status (see the module docstring for how fresh they are)."""
    last = last_computed(path, run, target, rate)
    with Store(path) as store:
        state = live.ProjectState.of(store)
        if last and (last["state"] == state or time.monotonic() < last["due"]):
            return last["figures"]
        started = time.monotonic()
        figures = (
            live.snapshot(
                golden_at(state),
                run_at(state.candidates(), run),
                live.cost_summary(store, rate),
                store.eval_history(),
                target=target,
            ),
            live.coverage(store),
            live.throughput(store),
            store.status(),
        )
    finished = time.monotonic()
    last.update(state=state, figures=figures, due=finished + PACE * (finished - started))
    return figures


def run_name(run: str | None) -> str:
    """How a run is named in the selector."""
    return "candidate lists (imported)" if run is None else f"pooled run {run}"


def controls(store: Store) -> tuple[str | None, float, float]:
    """The run to show, the target CI half-width and the hourly rate (sidebar)."""
    with st.sidebar:
        run = st.selectbox("Run", live.project_runs(store), format_func=run_name, key="dash_run")
        target = st.number_input(
            "Target MRR@10 CI half-width", 0.005, 0.5, live.TARGET_HALF_WIDTH, 0.005, "%.3f"
        )
        rate = st.number_input("Hourly rate ($)", 0.0, 10_000.0, live.DEFAULT_RATE, 5.0)
    return run, target, rate


def number(value: float | None, metric: str) -> str:
    """A figure as shown in a tile: rates in percent, MRR with three decimals."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.1%}" if metric in PERCENT_FIGURES else f"{value:.3f}"


def headline(table: pd.DataFrame) -> None:
    """The whole set's figures as tiles, each with its 95% CI and how many queries."""
    overall = table[table["slice"] == live.ALL].set_index("metric")
    for column, metric in zip(st.columns(len(FIGURE_LABELS)), FIGURE_LABELS, strict=True):
        row = overall.loc[metric]
        column.metric(FIGURE_LABELS[metric], number(row["value"], metric))
        ci = f"{number(row['ci_low'], metric)} – {number(row['ci_high'], metric)}"
        column.caption(f"95% CI {ci} · n = {row['queries']}")


def rank_chart(first_relevant: pd.DataFrame) -> alt.Chart:
    """Share of answerable queries by first relevant rank (1..10, none), per slice."""
    order = list(dict.fromkeys(first_relevant["rank"]))
    return (
        alt.Chart(first_relevant)
        .mark_bar()
        .encode(
            x=alt.X("rank:N", sort=order, title="first relevant rank (none = not in the top 10)"),
            y=alt.Y("share:Q", axis=alt.Axis(format="%"), title="answerable queries"),
            color=alt.Color("slice:N", title="slice"),
            xOffset="slice:N",
            tooltip=["slice", "rank", "queries", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(height=260)
    )


def throughput_chart(per_hour: pd.DataFrame) -> alt.Chart:
    """Judgements per hour over the last 24 hours, stacked by annotator."""
    return (
        alt.Chart(per_hour)
        .mark_bar()
        .encode(
            x=alt.X("hour:T", title="hour (UTC)"),
            y=alt.Y("judgements:Q", title="judgements"),
            color=alt.Color("annotator:N", title="annotator"),
            tooltip=["hour:T", "annotator", "judgements"],
        )
        .properties(height=200)
    )


def needed_text(needed: live.QueriesNeeded, rate: float) -> str:
    """'How many more queries' in words (numbers only: no data text)."""
    if needed.needed is None:
        return "Label at least two answerable queries to estimate how many more are needed."
    now = f"±{needed.half_width:.3f}" if needed.half_width is not None else "not known yet"
    text = (
        f"The MRR@10 CI is {now} on {needed.answerable} answerable queries. "
        f"For ±{needed.target:.3f} about **{needed.needed:,}** answerable queries are needed "
        f"in all: **{needed.more:,} more**"
    )
    if needed.more:
        text += f", so about **{needed.to_label:,} queries to label** (some turn out unanswerable)"
        if needed.cost is not None:
            text += (
                f" ≈ {needed.cost.hours:,.1f} h ≈ **\\${needed.cost.dollars:,.0f}** "
                f"at \\${rate:g}/h at the measured pace"
            )
        if needed.to_label > needed.left:
            text += f". The project has only {needed.left:,} queries left: import more"
    return text + "."


@st.fragment(run_every=REFRESH_SECONDS)
def live_figures(path: str, run: str | None, target: float, rate: float) -> None:
    """Everything that changes while annotators work."""
    snap, coverage, per_hour, status = latest(path, run, target, rate)
    report = snap.report
    st.caption(
        f"{run_name(run)} · golden set {report['golden_version']} · "
        f"{report['queries']['answerable']} answerable and {report['queries']['unanswerable']} "
        f"unanswerable queries done · shown {datetime.now(UTC):%H:%M:%S} UTC, refreshed every "
        f"{REFRESH_SECONDS} s"
    )
    for alert in snap.alerts:
        st.warning(alert.message, icon=":material/warning:")
    headline(snap.table)
    st.subheader("Per slice")
    st.dataframe(snap.table, hide_index=True, column_config=FIGURE_COLUMNS)
    st.subheader("First relevant rank")
    st.altair_chart(rank_chart(snap.first_relevant), width="stretch")
    st.subheader("Worst queries, misses first")
    st.dataframe(
        snap.worst,
        hide_index=True,
        column_config={
            "link": st.column_config.LinkColumn("open", display_text="label ↗"),
            "first_relevant_rank": "first relevant rank",
            "mrr@10": NUMBER,
            "hit@1": NUMBER,
        },
    )
    st.subheader("How many more queries")
    st.markdown(needed_text(snap.needed, rate))
    st.subheader("Coverage")
    st.dataframe(
        coverage,
        hide_index=True,
        column_config={"done_share": st.column_config.ProgressColumn("done", format="percent")},
    )
    this_hour = per_hour[per_hour["hour"] == per_hour["hour"].max()]["judgements"].sum()
    st.caption(
        f"{status['judgements']:,} judgements by {len(status['annotators'])} annotators · "
        f"{this_hour:,} judgements this hour"
    )
    st.altair_chart(throughput_chart(per_hour), width="stretch")
    if report["notes"]:
        st.caption(" ".join(report["notes"]))


def downloads(store: Store, run: str | None, target: float, rate: float) -> None:
    """The golden set (JSONL, TREC qrels) and the shown run's metrics report (JSON, CSV),
    each built when clicked. Kept apart so that a role check can gate it."""

    def report() -> dict:
        return latest(str(store.path), run, target, rate)[0].report

    st.subheader("Downloads")
    first, second, third, fourth = st.columns(4)
    first.download_button(
        "Golden set (JSONL)", lambda: live.golden_jsonl(store), "golden.jsonl", "application/jsonl"
    )
    second.download_button(
        "TREC qrels", lambda: live.golden_qrels(store), "qrels.txt", "text/plain"
    )
    third.download_button(
        "Report (JSON)", lambda: live.report_json(report()), "report.json", "application/json"
    )
    fourth.download_button(
        "Report (CSV)", lambda: live.report_csv(report()), "report.csv", "text/csv"
    )


def main() -> None:
    """Render the dashboard page."""
    store = context.store()
    st.title("Dashboard")
    run, target, rate = controls(store)
    live_figures(str(store.path), run, target, rate)
    downloads(store, run, target, rate)


main()
