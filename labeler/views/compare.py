"""Compare runs: evaluate runs against the current golden set, compare two of them, add a
run's unjudged top k as work ("label the holes"), and keep results in the run live.

- Runs are uploaded (TREC or JSONL) or held in the project (its candidate lists, its pooled
  runs). Each is evaluated with judged@10 beside every figure: unjudged documents count as
  not relevant, and judged@10 says how far that assumption carries.
- Two runs are compared on the same queries with a paired 95% CI of each delta, per
  slice, and the release gate's verdict (as ``goldset compare --gate``).
- The run history (``goldset eval --record`` and the Record button here) is drawn as a trend
  per metric and slice, one line per golden-set version: figures of different versions are
  never joined, and the flags say where they changed.

Reviewers and admins only; the actions that change the project (label the holes, recording)
are admins' and check the role in the database again when they fire. Data text (run names,
slices, messages naming them) is shown only as text.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from goldset.eval.readers import Golden, Run
from goldset.labeler import accounts, live, render
from goldset.labeler.store import Store
from goldset.labeler.views import context

TREND_METRICS = ("mrr@10", "hit@1", "hit@10", "miss@10")
CHANGE_COLORS = {"new miss": "#c0392b", "new hit": "#1e8449", "moved down": "#e67e22",
                 "moved up": "#2e86c1"}  # fmt: skip
NONE_RANK = 11  # where "no relevant doc in the top 10" sits on the rank-change chart
HISTORY_COLUMNS = {
    "record": "Record",
    "recorded_at": "Recorded at (UTC)",
    "run": "Run",
    "golden_version": "Golden set",
    "tags": "Tags",
}

uploaded_run = st.cache_data(**context.CACHE)(live.read_uploaded_run)


def project_run_name(run: str | None, pooled: int = 0) -> str:
    """How a run held in the project is named in the selector: its own order (the imported
    candidate lists, or the pool of ``pooled`` runs in its fused order), or a pooled run."""
    if run is not None:
        return f"{run} (pooled run)"
    if pooled:
        return f"{live.CANDIDATES} (the pool of {pooled} runs, fused order)"
    return f"{live.CANDIDATES} (the project's imported candidate lists)"


def chosen_runs(store: Store, state: live.ProjectState) -> tuple[list[Run], dict[str, tuple]]:
    """The runs to evaluate: uploaded files (their file name and bytes kept by run name, for
    the actions) and runs held in the project."""
    files = st.file_uploader(
        "Run files (TREC or JSONL)", accept_multiple_files=True, key="compare_runs"
    )
    project = live.project_runs(store)
    held = st.multiselect(
        "Runs held in the project",
        project,
        format_func=lambda run: project_run_name(run, len(project) - 1),
    )
    runs, uploads = [], {}
    for number, file in enumerate(files or [], start=1):
        try:
            run = uploaded_run(file.name, file.getvalue())
        except ValueError as error:
            context.show_error(f"Could not read upload {number}:", error)
            continue
        runs.append(run)
        uploads[run.name] = (file.name, file.getvalue())
    runs += [context.run_at(state.candidates(), name) for name in held]
    names = [run.name for run in runs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        context.show_error(
            "Runs need distinct names; rename the files. Repeated:", ", ".join(repeated)
        )
        return [], {}
    return runs, uploads


@st.cache_data(**context.CACHE)
def evaluation(
    state: live.ProjectState, _runs: list[Run], keys: tuple, keep_order: bool = False
) -> tuple[pd.DataFrame, dict]:
    """Every run against the golden set at ``state`` (``keys`` identify the runs)."""
    return live.evaluate_runs(context.golden_at(state), _runs, keep_order=keep_order)


@st.cache_data(**context.CACHE)
def comparison(
    state: live.ProjectState, _pair: tuple[Run, Run], keys: tuple, keep_order: bool = False
) -> dict:
    """The paired comparison of two runs at ``state`` (``keys`` identify them)."""
    return live.compare_pair(context.golden_at(state), *_pair, keep_order=keep_order)


@st.cache_data(**context.CACHE)
def holes_preview(
    state: live.ProjectState, _store: Store, _upload: tuple[str, bytes], key: str, depth: int
) -> dict:
    """What labelling an uploaded run's holes would add at ``state`` (``key``: the upload's
    content hash): read once per project state, not on every rerun of the page."""
    return live.holes_preview(_store, *_upload, depth)


def run_key(run: Run, uploads: dict[str, tuple]) -> tuple:
    """What identifies a run for the caches: an upload's content, or the project run's name."""
    upload = uploads.get(run.name)
    return (run.name, live.run_sha256(upload[1]) if upload else None)


def evaluate_section(
    state: live.ProjectState, runs: list[Run], uploads: dict, keep_order: bool = False
) -> tuple[dict, str]:
    """Each run's figures on the whole set or a chosen slice, with judged@10 beside them,
    exact@10 below (first-hit labels), and both orders' figures of a run with ties.
    Returns the reports by run name and the chosen slice."""
    st.subheader("Evaluation on the current golden set")
    keys = tuple(run_key(run, uploads) for run in runs)
    _, reports = evaluation(state, runs, keys, keep_order)
    slices = list(dict.fromkeys(name for report in reports.values() for name in report["slices"]))
    shown = st.selectbox("Slice", [live.ALL, *slices], key="compare_slice")
    table = live.runs_table(reports, shown)
    st.dataframe(table, hide_index=True, height=context.rows_height(table))
    st.caption(
        "Mean [95% CI] per run. Judged@10 (last row): the share of each run's top "
        "10 that is judged. Unjudged documents count as not relevant, so a low judged@10 "
        "understates the run: label its holes."
    )
    context.exactness_table(live.exactness_by_run(reports, shown))
    for line in live.orders_lines(reports):
        st.text(line)  # run names are data: plain text
    return reports, shown


def paired_section(
    state: live.ProjectState,
    runs: list[Run],
    uploads: dict,
    slice_name: str = live.ALL,
    keep_order: bool = False,
) -> None:
    """Two runs on the same queries: deltas with paired CIs (on the slice chosen above), the
    gate, and the queries that changed."""
    st.subheader("Paired comparison")
    names = [run.name for run in runs]
    left, right = st.columns(2)
    baseline = left.selectbox("Baseline", names, index=0, key="baseline")
    candidate = right.selectbox("Candidate", names, index=1, key="candidate")
    if baseline == candidate:
        st.info("Choose two different runs.")
        return
    pair = tuple(runs[names.index(name)] for name in (baseline, candidate))
    result = comparison(state, pair, tuple(run_key(run, uploads) for run in pair), keep_order)
    verdict = result["gate"]
    if verdict["verdict"] == "pass":
        st.success("Release gate: passed.", icon=":material/check_circle:")
    elif verdict["verdict"] == "fail":
        st.error("Release gate: failed.", icon=":material/block:")
    else:  # the CIs cannot decide every rule yet: each reason says how many more queries would
        st.warning("Release gate: inconclusive.", icon=":material/help:")
    for line in [*verdict["reasons"], *(f"warning: {w}" for w in verdict["warnings"])]:
        st.text(line)
    paired, changes = st.columns([4, 3])
    with paired:
        deltas = live.paired_wide(result, baseline, candidate)
        deltas = deltas[deltas["Slice"] == slice_name].drop(columns="Slice")
        queries = deltas["Queries"].iloc[0] if len(deltas) else 0
        st.html(  # the slice's name is data: escaped
            render.note(
                f"Paired figures on {slice_name}: candidate − baseline over the same "
                f"{queries:,} answerable queries"
            )
        )
        st.dataframe(
            deltas.drop(columns="Queries"),
            hide_index=True,
            height=context.rows_height(deltas),
            column_config={"Change [95% CI]": st.column_config.TextColumn(width="medium")},
        )
    with changes:
        changed_section(result, context.golden_at(state))


def changed_section(result: dict, golden: Golden) -> None:
    """The queries behind the means: new misses first, each opening on the label page, and
    a chart of their first relevant ranks in both runs."""
    st.markdown("**Queries that changed** (new misses first)")
    if "changed_queries" not in result:
        st.caption("This comparison does not list the queries that changed.")
        return
    changed = live.changed_table(result, golden)
    if changed.empty:
        st.caption("No query changed its first relevant rank in the top 10.")
        return
    counts = changed["change"].value_counts()
    st.caption(" · ".join(f"{kind}: {counts.get(kind, 0)}" for kind in live.CHANGES.values()))
    st.dataframe(
        changed,
        hide_index=True,
        height=context.rows_height(changed, most=12),
        column_config={
            "change": "Change",
            "query_id": "Query id",
            "query": st.column_config.TextColumn("Query", width="medium"),
            "slice": "Slice",
            "baseline_rank": st.column_config.NumberColumn("Baseline rank", format="%d"),
            "candidate_rank": st.column_config.NumberColumn("Candidate rank", format="%d"),
            "link": st.column_config.LinkColumn("Open", display_text="label ↗"),
        },
    )
    st.altair_chart(rank_change_chart(changed), width="stretch")


def rank_change_chart(changed: pd.DataFrame) -> alt.Chart:
    """The changed queries' first relevant ranks in the baseline (x) and the candidate (y),
    one circle per move sized by how many queries made it; "none" (not in the top 10) at the
    far end, so new misses sit on the top edge, in red."""
    data = (
        changed.assign(
            baseline=changed["baseline_rank"].fillna(NONE_RANK).astype(int),
            candidate=changed["candidate_rank"].fillna(NONE_RANK).astype(int),
        )
        .groupby(["change", "baseline", "candidate"], as_index=False)
        .agg(queries=("query_id", "size"), ids=("query_id", ", ".join))
    )
    labels = f"datum.value == {NONE_RANK} ? 'none' : datum.value"
    axis = {"values": list(range(1, NONE_RANK + 1)), "labelExpr": labels}
    scale = alt.Scale(domain=[0.5, NONE_RANK + 0.5])
    colors = alt.Scale(domain=list(CHANGE_COLORS), range=list(CHANGE_COLORS.values()))
    return (
        alt.Chart(data)
        .mark_circle(opacity=0.85)
        .encode(
            x=alt.X("baseline:Q", title="baseline first relevant rank", scale=scale,
                    axis=alt.Axis(**axis)),
            y=alt.Y("candidate:Q", title="candidate first relevant rank", scale=scale,
                    axis=alt.Axis(**axis)),
            color=alt.Color("change:N", title="change", scale=colors),
            size=alt.Size("queries:Q", title="queries", scale=alt.Scale(range=[80, 600])),
            tooltip=["change", "baseline", "candidate", "queries",
                     alt.Tooltip("ids:N", title="query ids")],
        )
        .properties(height=280)
    )  # fmt: skip


def label_the_holes(
    store: Store, user: dict, state: live.ProjectState, uploads: dict[str, tuple], reports: dict
) -> None:
    """Admins: add an uploaded run's unjudged top k as new work, so that it is measured
    fairly. The role is checked again in the database when the button is pressed."""
    st.subheader("Label the holes")
    if not uploads:
        st.caption("Upload a run to add its unjudged top documents as work for the annotators.")
        return
    left, right = st.columns(2)
    name = left.selectbox("Run", list(uploads), key="holes_run")
    depth = right.number_input("Depth", 1, 1000, live.CUTOFF, key="holes_depth")
    judged = reports[name]["metrics"][live.JUDGED]["mean"]
    if judged is not None:
        st.caption(f"judged@10 of this run: {judged:.1%} of its top 10 is judged.")
    try:
        upload = uploads[name]
        preview = holes_preview(state, store, upload, live.run_sha256(upload[1]), int(depth))
    except ValueError as error:
        context.show_error("This run cannot be pooled:", error)
        return
    st.caption(
        f"Labelling the holes adds {preview['documents']:,} documents over "
        f"{preview['queries']:,} queries; {preview['new_work']:,} done queries get holes to "
        f"judge (they stay in the golden set meanwhile); {preview['already_exact']:,} are "
        "already exact for this run."
    )
    if st.button("Label the holes", icon=":material/playlist_add:"):
        try:
            accounts.authorize(store, user["name"], "admin")
            counts = live.queue_holes(store, *uploads[name], int(depth))
        except (PermissionError, ValueError) as error:
            context.show_error("Could not add the run's documents:", error)
            return
        st.success(
            f"Added {counts['candidates_added']:,} documents over {counts['queries_touched']:,} "
            f"queries: {counts['new_work']:,} done queries were given holes to judge (they stay "
            f"in the golden set), {counts['already_exact']:,} were already exact. The "
            "annotators get them next; judged documents are reused."
        )


def record_section(
    store: Store, user: dict, state: live.ProjectState, runs: list[Run], uploads: dict
) -> None:
    """Admins: keep a run's figures in the run history with tags, as ``goldset eval
    --record``. The role is checked again in the database when the button is pressed."""
    st.subheader("Record in the run history")
    names = [run.name for run in runs]
    left, right = st.columns([1, 2])
    name = left.selectbox("Run to record", names, key="record_run")
    text = right.text_input("Tags", placeholder="model=e5, chunking=512", key="record_tags")
    if st.button("Record", icon=":material/history:"):
        run = runs[names.index(name)]
        upload = uploads.get(name)
        try:
            accounts.authorize(store, user["name"], "admin")
            tags = live.parse_tags(text)
            sha = live.run_sha256(upload[1]) if upload else live.project_run_sha256(store, run.name)
            record = live.record_run(store, context.golden_at(state), run, sha, tags)
        except (PermissionError, ValueError) as error:
            context.show_error("Not recorded:", error)
            return
        st.success(f"Recorded as #{record}.")


def history_chart(table: pd.DataFrame) -> alt.Chart:
    """A trend per metric and slice; one line per golden-set version, never joined."""
    data = table[table["metric"].isin(TREND_METRICS)]
    return (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("record:O", title="record"),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("slice:N", title="slice"),
            shape=alt.Shape("golden_version:N", title="golden set"),
            detail="golden_version:N",
            tooltip=["record", "recorded_at", "run", "tags", "golden_version", "slice", "value"],
        )
        .properties(width=300, height=150)
        .facet(facet=alt.Facet("metric:N", title=None, sort=list(TREND_METRICS)), columns=2)
        .resolve_scale(y="independent")
    )


def history_section(store: Store) -> None:
    """The run history: trend per metric and slice, and flags between consecutive records."""
    st.subheader("Run history")
    records = store.eval_history()
    if not records:
        st.caption(
            "No recorded evaluations yet: `goldset eval --db PATH --run RUN --record --tag "
            "model=...`, or Record above."
        )
        return
    runs = sorted({record["run"] for record in records})
    shown = st.multiselect("Runs in the history", runs, default=runs)  # new runs: all shown
    records = [record for record in records if record["run"] in shown]
    table = live.history_table(records)
    if not table.empty:
        st.altair_chart(history_chart(table))
    flags = live.history_flags(records)
    if flags:
        st.warning(f"{len(flags)} change(s) between consecutive records:", icon=":material/flag:")
        st.dataframe(
            pd.DataFrame(flags),
            hide_index=True,
            column_config={
                "record": "Record",
                "previous": "Previous record",
                "kind": "Kind",
                "message": st.column_config.TextColumn("Message", width="large"),
            },
        )
    versions = {record["golden_version"] for record in records}
    if len(versions) > 1:
        st.caption(
            f"{len(versions)} golden-set versions: figures of different versions are drawn as "
            "separate lines and never compared."
        )
    st.dataframe(live.history_records(records), hide_index=True, column_config=HISTORY_COLUMNS)


def main() -> None:
    """Render the compare page (reviewers and admins; the actions for admins)."""
    user = context.open_page("reviewer", "Compare runs")
    store = context.store()
    state = live.ProjectState.of(store)
    runs, uploads = chosen_runs(store, state)
    keep_order = st.checkbox(
        "Keep each run's own order (its file's lines, the project's stored lists) instead of "
        "ranking by score with ties by doc id, as goldset eval --keep-order",
        key="keep_order",
    )
    if runs:
        reports, slice_name = evaluate_section(state, runs, uploads, keep_order)
        if len(runs) >= 2:
            paired_section(state, runs, uploads, slice_name, keep_order)
        if accounts.has_role(user["role"], "admin"):
            label_the_holes(store, user, state, uploads, reports)
            record_section(store, user, state, runs, uploads)
    else:
        st.caption("Upload run files or choose runs held in the project to evaluate them.")
    history_section(store)


main()
