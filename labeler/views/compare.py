"""Compare runs: evaluate runs against the current golden set, compare two of them, add a
run's unjudged top k as work ("label the holes"), and keep results in the run history.

- Runs are uploaded (TREC or JSONL) or held in the project (its candidate lists, its pooled
  runs). Each is evaluated with judged@10 beside every figure: unjudged documents count as
  not relevant, and judged@10 says how far that assumption carries.
- Two runs are compared on the same queries with paired bootstrap CIs of each delta, per
  slice, and the release gate's verdict (as ``goldset compare --gate``).
- The run history (``goldset eval --record`` and the Record button here) is drawn as a trend
  per metric and slice, one line per golden-set version: figures of different versions are
  never joined, and the flags say where they changed.

Reviewers and admins only; the actions that change the project (label the holes, recording)
are admins' and check the role in the database again when they fire. Data text (run names,
slices, messages naming them) is shown only as text.
"""

from __future__ import annotations

import hashlib

import altair as alt
import pandas as pd
import streamlit as st

from eval.readers import Run
from labeler import live, team
from labeler.store import Store
from labeler.views import context

NUMBER = st.column_config.NumberColumn(format="%.3f")
TREND_METRICS = ("mrr@10", "hit@1", "hit@10", "miss@10")
FIGURES = {
    "value": NUMBER,
    "ci_low": st.column_config.NumberColumn("95% CI low", format="%.3f"),
    "ci_high": st.column_config.NumberColumn("95% CI high", format="%.3f"),
    live.JUDGED: NUMBER,
}

uploaded_run = st.cache_data(**context.CACHE)(live.read_uploaded_run)


def project_run_name(run: str | None) -> str:
    """How a run held in the project is named in the selector."""
    return f"{live.CANDIDATES} (the project's candidate lists)" if run is None else run


def chosen_runs(store: Store, state: live.ProjectState) -> tuple[list[Run], dict[str, tuple]]:
    """The runs to evaluate: uploaded files (their file name and bytes kept by run name, for
    the actions) and runs held in the project."""
    files = st.file_uploader(
        "Run files (TREC or JSONL)", accept_multiple_files=True, key="compare_runs"
    )
    held = st.multiselect(
        "Runs held in the project", live.project_runs(store), format_func=project_run_name
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
    state: live.ProjectState, _runs: list[Run], keys: tuple
) -> tuple[pd.DataFrame, dict]:
    """Every run against the golden set at ``state`` (``keys`` identify the runs)."""
    return live.evaluate_runs(context.golden_at(state), _runs)


@st.cache_data(**context.CACHE)
def comparison(state: live.ProjectState, _pair: tuple[Run, Run], keys: tuple) -> dict:
    """The paired comparison of two runs at ``state`` (``keys`` identify them)."""
    return live.compare_pair(context.golden_at(state), *_pair)


def run_key(run: Run, uploads: dict[str, tuple]) -> tuple:
    """What identifies a run for the caches: an upload's content, or the project run's name."""
    return (run.name, upload_sha256(uploads[run.name]) if run.name in uploads else None)


def upload_sha256(upload: tuple[str, bytes]) -> str:
    """The SHA-256 of an uploaded file's bytes (as ``goldset eval --record`` hashes a file)."""
    return hashlib.sha256(upload[1]).hexdigest()


def evaluate_section(state: live.ProjectState, runs: list[Run], uploads: dict) -> dict:
    """Each run's figures, overall and per slice, with judged@10 beside every one."""
    st.subheader("Evaluation on the current golden set")
    table, reports = evaluation(state, runs, tuple(run_key(run, uploads) for run in runs))
    st.dataframe(table, hide_index=True, column_config=FIGURES, height=context.rows_height(table))
    st.caption(
        "judged@10: the share of each run's top 10 that is judged. Unjudged documents count "
        "as not relevant, so a low judged@10 understates the run: label its holes."
    )
    return reports


def paired_section(state: live.ProjectState, runs: list[Run], uploads: dict) -> None:
    """Two runs on the same queries: deltas with paired CIs per slice, and the gate."""
    st.subheader("Paired comparison")
    names = [run.name for run in runs]
    left, right = st.columns(2)
    baseline = left.selectbox("Baseline", names, index=0, key="baseline")
    candidate = right.selectbox("Candidate", names, index=1, key="candidate")
    if baseline == candidate:
        st.info("Choose two different runs.")
        return
    pair = tuple(runs[names.index(name)] for name in (baseline, candidate))
    result = comparison(state, pair, tuple(run_key(run, uploads) for run in pair))
    verdict = result["gate"]
    if verdict["passed"]:
        st.success("Release gate: passed.", icon=":material/check_circle:")
    else:
        st.error("Release gate: failed.", icon=":material/block:")
    for line in [*verdict["reasons"], *(f"warning: {w}" for w in verdict["warnings"])]:
        st.text(line)
    deltas = live.paired_table(result)
    st.dataframe(
        deltas,
        hide_index=True,
        height=context.rows_height(deltas),
        column_config={
            "baseline": NUMBER,
            "candidate": NUMBER,
            "delta": st.column_config.NumberColumn("delta", format="%+.3f"),
            "ci_low": st.column_config.NumberColumn("delta 95% CI low", format="%+.3f"),
            "ci_high": st.column_config.NumberColumn("delta 95% CI high", format="%+.3f"),
            "p_value": st.column_config.NumberColumn("p", format="%.4f"),
        },
    )


def label_the_holes(store: Store, user: dict, uploads: dict[str, tuple], reports: dict) -> None:
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
    if st.button("Label the holes", icon=":material/playlist_add:"):
        try:
            team.authorize(store, user["name"], "admin")
            counts = live.label_the_holes(store, *uploads[name], int(depth))
        except (PermissionError, ValueError) as error:
            context.show_error("Could not add the run's documents:", error)
            return
        st.success(
            f"Added {counts['candidates_added']:,} documents over {counts['queries_touched']:,} "
            "queries: the annotators get them next. Judged documents are reused."
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
            team.authorize(store, user["name"], "admin")
            tags = live.parse_tags(text)
            sha = upload_sha256(upload) if upload else live.project_run_sha256(store, run.name)
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
            column_config={"message": st.column_config.TextColumn(width="large")},
        )
    versions = {record["golden_version"] for record in records}
    if len(versions) > 1:
        st.caption(
            f"{len(versions)} golden-set versions: figures of different versions are drawn as "
            "separate lines and never compared."
        )
    st.dataframe(live.history_records(records), hide_index=True)


def main() -> None:
    """Render the compare page (reviewers and admins; the actions for admins)."""
    st.set_page_config(layout="wide")
    user = context.open_page("reviewer", "Compare runs")
    store = context.store()
    state = live.ProjectState.of(store)
    runs, uploads = chosen_runs(store, state)
    if runs:
        reports = evaluate_section(state, runs, uploads)
        if len(runs) >= 2:
            paired_section(state, runs, uploads)
        if team.has_role(user["role"], "admin"):
            label_the_holes(store, user, uploads, reports)
            record_section(store, user, state, runs, uploads)
    else:
        st.caption("Upload run files or choose runs held in the project to evaluate them.")
    history_section(store)


main()
