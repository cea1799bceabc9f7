"""The dashboard: what the golden set already says, with its uncertainty, while it is made.

The figures refresh by themselves: a fragment reruns every ``live.REFRESH_SECONDS`` and
reads the store's dashboard marks (one cheap SQL statement). The figures, computed by
:mod:`goldset.labeler.live` (eval on the store's golden set), are kept by a
:class:`goldset.labeler.live.Refresher` shared by every session: they are computed again only when
the marks changed — at once on a small project, so a new label shows at the next refresh;
in the background on a large one (the page shows the previous figures meanwhile and never
waits for eval), and then no more often than the computation's pace allows. The figures
are kept in the project, so a server start shows the last ones at once (saying so when
labels came since, while newer ones are computed).

In sampled labelling (``goldset sample``) a panel shows the sample's progress and, with a
machine judge, the prediction-powered figures (:mod:`goldset.labeler.live.ppi`) and how many
human-labelled queries they are worth.

Data text (queries, slices, ids) reaches the page only inside dataframe cells and chart
labels, which show it as text.
"""

from __future__ import annotations

from datetime import UTC, datetime

import altair as alt
import pandas as pd
import streamlit as st

from goldset.labeler import accounts, live, render
from goldset.labeler.live.ppi import NoSample, ppi_report
from goldset.labeler.store import Store
from goldset.labeler.views import context

FIGURE_LABELS = {
    "mrr@10": "MRR@10",
    "hit@1": "hit@1",
    "hit@10": "hit@10",
    "miss@10": "miss rate",
    live.UNANSWERABLE: "unanswerable",
}
STALE = (
    "These figures are from before the newest labels (or from the last server run): "
    "new ones are being computed in the background and replace them at a coming refresh."
)

refresher = st.cache_resource(max_entries=16, show_spinner=False)(live.dashboard_refresher)


def run_name(run: str | None, pooled: int = 0) -> str:
    """How a run is named: the project's own order (the imported candidate lists, or the pool
    of ``pooled`` runs in its fused order), or one pooled run."""
    if run is not None:
        return f"pooled run {run}"
    return f"the pool of {pooled} runs (fused order)" if pooled else "candidate lists (imported)"


def controls(store: Store) -> tuple[str | None, float, float]:
    """The run to show, the target CI half-width and the hourly rate (sidebar)."""
    runs = live.project_runs(store)
    with st.sidebar:
        run = st.selectbox(
            "Run", runs, format_func=lambda r: run_name(r, len(runs) - 1), key="dash_run"
        )
        target = st.number_input(
            "Target MRR@10 CI half-width", 0.005, 0.5, live.TARGET_HALF_WIDTH, 0.005, "%.3f"
        )
        rate = st.number_input("Hourly rate ($)", 0.0, 10_000.0, live.DEFAULT_RATE, 5.0)
    return run, target, rate


def headline(table: pd.DataFrame) -> None:
    """The whole set's figures as tiles, each with its 95% CI and how many queries."""
    overall = table[table["slice"] == live.ALL].set_index("metric")
    for column, metric in zip(st.columns(len(FIGURE_LABELS)), FIGURE_LABELS, strict=True):
        row = overall.loc[metric]
        column.metric(FIGURE_LABELS[metric], live.value_text(row["value"], metric))
        ci = f"{live.value_text(row['ci_low'], metric)} – {live.value_text(row['ci_high'], metric)}"
        column.caption(f"95% CI {ci}  \nn = {row['queries']}")


def mrr_chart(table: pd.DataFrame) -> alt.Chart:
    """MRR@10 per slice with its 95% CI as an error bar (the whole set first)."""
    data = table[(table["metric"] == "mrr@10") & table["value"].notna()]
    order = list(data["slice"])
    base = alt.Chart(data).encode(
        y=alt.Y("slice:N", sort=order, title=None),
        tooltip=[
            "slice",
            alt.Tooltip("value:Q", title="MRR@10", format=".3f"),
            alt.Tooltip("ci_low:Q", title="95% CI low", format=".3f"),
            alt.Tooltip("ci_high:Q", title="95% CI high", format=".3f"),
            alt.Tooltip("queries:Q", title="answerable queries"),
        ],
    )
    bars = base.mark_errorbar(ticks=True).encode(
        x=alt.X(
            "ci_low:Q",
            title="MRR@10 with its 95% CI",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format=".1f", tickCount=10),
        ),
        x2="ci_high:Q",
    )
    points = base.mark_point(filled=True, size=80).encode(x="value:Q")
    return (bars + points).properties(height=60 + 36 * len(order))


def rank_chart(first_relevant: pd.DataFrame) -> alt.Chart:
    """Share of answerable queries by first relevant rank (1..10, none), per slice."""
    order = list(dict.fromkeys(first_relevant["rank"]))
    return (
        alt.Chart(first_relevant)
        .mark_bar()
        .encode(
            x=alt.X(
                "rank:N",
                sort=order,
                title="first relevant rank (none = not in the top 10)",
                axis=alt.Axis(labelAngle=0),
            ),
            y=alt.Y("share:Q", axis=alt.Axis(format="%"), title="answerable queries"),
            color=alt.Color("slice:N", title="slice"),
            xOffset="slice:N",
            tooltip=["slice", "rank", "queries", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(height=260)
    )


def throughput_chart(per_hour: pd.DataFrame) -> alt.Chart:
    """Judgements made per hour, stacked by annotator, over the hours that have some."""
    data = per_hour.assign(label=per_hour["hour"].dt.strftime("%d %b %H:00"))
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "label:O",
                sort=list(dict.fromkeys(data["label"])),
                title="hour (UTC)",
                axis=alt.Axis(labelAngle=0),
            ),
            y=alt.Y("judgements:Q", title="judgements made"),
            color=alt.Color("annotator:N", title="annotator"),
            tooltip=[alt.Tooltip("label:N", title="hour (UTC)"), "annotator", "judgements"],
        )
        .properties(height=200, width=alt.Step(60))  # one slim bar per hour, however few
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
                f" {live.duration_text(needed.cost.hours)} ≈ **\\${needed.cost.dollars:,.0f}** "
                f"at \\${rate:g}/h at the measured pace"
            )
        if needed.to_label > needed.left:
            text += f". The project has only {needed.left:,} queries left: import more"
    return text + "."


@st.fragment(run_every=live.REFRESH_SECONDS)
def live_figures(store: Store, run: str | None, target: float, rate: float) -> None:
    """Everything that changes while annotators work."""
    figures_of, state = refresher(str(store.path), run, target, rate), live.ProjectState.of(store)
    figures = figures_of.get(state)
    snap, report = figures.snapshot, figures.snapshot.report
    pooled = len(figures.status["runs"])
    st.html(  # the run's name is a file name: data, escaped
        render.note(
            f"{run_name(run, pooled)} · golden set {report['golden_version']} · "
            f"{report['queries']['answerable']} answerable and "
            f"{report['queries']['unanswerable']} unanswerable queries done · shown "
            f"{datetime.now(UTC):%H:%M:%S} UTC, refreshed every {live.REFRESH_SECONDS} s"
        )
    )
    if not figures_of.current(state):
        st.caption(STALE)
    for alert in snap.alerts:
        st.warning(alert.message, icon=":material/warning:")
    headline(snap.table)
    st.subheader("Per slice")
    st.dataframe(
        snap.wide,
        hide_index=True,
        height=context.rows_height(snap.wide),
        column_config={
            "Slice": st.column_config.TextColumn(width="small"),
            "Answerable queries": st.column_config.NumberColumn("Queries", width="small",
                help="Answerable done queries behind the figures"),
            "Unanswerable": st.column_config.TextColumn(
                help="Share of the done queries flagged unanswerable"),
        },
    )  # fmt: skip
    st.caption(
        "Mean [95% CI] over the answerable done queries; the unanswerable share is "
        "over all done queries. Judged@10: how much of the top 10 is judged (unjudged "
        "documents count as not relevant)."
    )
    context.exactness_table(live.exactness_by_slice(report))
    for line in live.orders_lines({run_name(run, pooled): report}):
        st.text(line)  # the run's name is data: plain text
    st.altair_chart(mrr_chart(snap.table), width="stretch")
    st.subheader("First relevant rank")
    st.altair_chart(rank_chart(snap.first_relevant), width="stretch")
    st.subheader("Worst queries, misses first")
    st.dataframe(
        snap.worst,
        hide_index=True,
        column_config={
            "link": st.column_config.LinkColumn("Open", display_text="label ↗"),
            "query_id": "Query id",
            "query": st.column_config.TextColumn("Query", width="large"),
            "slice": "Slice",
            "first_relevant_rank": "First relevant rank",
            "mrr@10": st.column_config.NumberColumn("MRR@10", format="%.3f"),
            "hit@1": st.column_config.NumberColumn("hit@1", format="%.0f"),
        },
    )
    st.subheader("How many more queries")
    st.markdown(needed_text(snap.needed, rate))
    st.subheader("Coverage")
    shown = figures.coverage.assign(done_share=figures.coverage["done_share"] * 100)
    st.dataframe(
        shown,
        hide_index=True,
        column_config={
            "slice": "Slice",
            "queries": "Queries",
            "done": "Done",
            "answerable": "Answerable",
            "unanswerable": "Unanswerable",
            "skipped": "Skipped",
            "in_progress": "In progress",
            "pending": "Pending",
            "done_share": st.column_config.ProgressColumn(
                "Share done", format="%.1f%%", min_value=0, max_value=100
            ),
        },
    )
    st.subheader("Work")
    per_hour = figures.throughput
    st.caption(live.work_text(figures.cost))  # numbers only: no data text
    if per_hour.empty:
        st.caption("No judgements in the last 24 hours.")
    else:
        st.altair_chart(throughput_chart(per_hour), width="content")
    if report["notes"]:
        st.caption(" ".join(report["notes"]))


@st.cache_data(**context.CACHE)
def ppi_table(
    _store: Store,
    state: live.ProjectState,
    drawn_at: str,
    run: str | None,
    judge: str,
    judge_labels: int,
) -> pd.DataFrame:
    """The PPI figures of ``run`` with ``judge`` (:func:`goldset.labeler.live.ppi.ppi_report`),
    a row per slice and metric; raises :class:`NoSample` before a sampled query is labelled.
    A judge's labels are never changed or taken back, and write no label event: their count
    keys the cache beside the state."""
    figures = ppi_report(
        _store, context.run_at(state.candidates(), run), _store.machine_judgments_frame(judge)
    )
    rows = [
        {"slice": name, "metric": FIGURE_LABELS.get(metric, metric), **figure}
        for name, metrics in figures.items()
        for metric, figure in metrics.items()
    ]
    columns = ["slice", "metric", "mean", "low", "high", "effective_n", "n_human", "n_all"]
    human = ["human_mean", "human_low", "human_high"]
    return pd.DataFrame(rows, columns=[*columns, *human])


@st.fragment(run_every=live.REFRESH_SECONDS)
def sample_panel(store: Store, run: str | None) -> None:
    """In sampled labelling: the sample's progress and, with a machine judge, the PPI figures
    (the judge on every query corrected on the labelled sample) and how many human-labelled
    queries alone they are worth."""
    sampling = store.sampling()
    if sampling["mode"] == "off":
        return
    st.subheader("Random sample")
    drawn, labelled = sampling["drawn"], sampling["labelled"]
    st.progress(labelled / drawn if drawn else 0.0)
    st.caption(
        f"{labelled:,} of {drawn:,} drawn queries labelled ({sampling['mode']} sample), "
        f"{sampling['missing']:,} missing (skipped or open before the last labelled one), "
        f"{sampling['waiting']:,} labelled but waiting behind a missing one: the estimate "
        "counts the drawn order up to its first missing query."
    )
    judges = {row["judge"]: row["labels"] for row in store.machine_judges() if row["labels"]}
    if not judges:
        st.caption("No machine judge has labelled anything: no PPI figure (goldset judge).")
        return
    judge = st.selectbox("Judge for the PPI figures", list(judges), key="dash_ppi_judge")
    state = live.ProjectState.of(store)
    try:
        table = ppi_table(store, state, sampling["drawn_at"] or "", run, judge, judges[judge])
    except NoSample as refusal:
        st.caption(str(refusal))  # goldset's own words
        return
    worth = table[table["slice"] == "all"]["effective_n"].dropna()
    if len(worth):
        st.markdown(
            f"With the judge on every query, the figures are worth **{worth.max():,.0f}** "
            f"human-labelled queries (the humans labelled {int(table['n_human'].max()):,})."
        )
    st.dataframe(
        table,
        hide_index=True,
        column_config={
            "slice": "Slice",
            "metric": "Metric",
            "mean": st.column_config.NumberColumn("PPI", format="%.3f"),
            "low": st.column_config.NumberColumn("PPI 95% low", format="%.3f"),
            "high": st.column_config.NumberColumn("PPI 95% high", format="%.3f"),
            "effective_n": st.column_config.NumberColumn("Worth human queries", format="%.0f"),
            "n_human": "Sampled",
            "n_all": "All queries",
            "human_mean": st.column_config.NumberColumn("Humans only", format="%.3f"),
            "human_low": st.column_config.NumberColumn("Humans 95% low", format="%.3f"),
            "human_high": st.column_config.NumberColumn("Humans 95% high", format="%.3f"),
        },
    )


def downloads(store: Store, user: dict, run: str | None, target: float, rate: float) -> None:
    """Admins: the golden set (JSONL, TREC qrels) and the shown run's metrics report (JSON,
    CSV), each built when clicked, after the role is checked again in the database."""

    def built(make):
        def build():
            accounts.authorize(store, user["name"], "admin")
            return make()

        return build

    def report() -> dict:
        state = live.ProjectState.of(store)
        return refresher(str(store.path), run, target, rate).get(state).snapshot.report

    st.subheader("Downloads")
    files = (
        (
            "Golden set (JSONL)",
            lambda: live.golden_jsonl(store),
            "golden.jsonl",
            "application/jsonl",
        ),
        ("Report (JSON)", lambda: live.report_json(report()), "report.json", "application/json"),
        ("Report (CSV)", lambda: live.report_csv(report()), "report.csv", "text/csv"),
    )
    columns = st.columns(len(files) + 1)
    for column, (label, make, file_name, mime) in zip(columns, files, strict=False):
        column.download_button(label, built(make), file_name, mime)
    if columns[-1].button("TREC qrels", help=context.QRELS_HELP):
        with columns[-1]:
            context.offer_qrels(store, user["name"])


def main() -> None:
    """Render the dashboard page (reviewers and admins; downloads for admins)."""
    user = context.open_page("reviewer", "Dashboard")
    store = context.store()
    run, target, rate = controls(store)
    live_figures(store, run, target, rate)
    sample_panel(store, run)
    if accounts.has_role(user["role"], "admin"):
        downloads(store, user, run, target, rate)


main()
