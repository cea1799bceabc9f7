"""The machine judges page (admins): each judge's labels, calls and tokens; a form that runs
a judge on a bounded number of pairs; and its calibration against the humans.

What ``goldset judge`` and ``goldset calibrate`` do, for the pairs of the project (the CLI
adds runs' metric impact and the release gate). The API key is never typed here: the form
names the environment variable of the server process that holds it, and only a variable a
judge's key may come from (``GOLDSET_JUDGE_*``, ``OPENAI_API_KEY``, or one registered with
``goldset judge-key-env``): any other is refused unread. Data text (slice names, a server's
error) reaches the page only through ``st.dataframe``, ``st.text`` and the escaped outcome.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from goldset.eval.calibration import calibration_report
from goldset.eval.readers import Golden
from goldset.labeler import accounts, judges, live
from goldset.labeler.store import Store
from goldset.labeler.views import context

MOST_PAIRS = 500  # one run from the page waits for its pairs: keep it bounded
FAILURES_SHOWN = 5  # failed pairs named in the outcome of a run


def judges_section(store: Store) -> list[str]:
    """The judges' figures; returns their names."""
    rows = store.machine_judges()
    if not rows:
        st.info("No machine judge has labelled anything yet.")
    else:
        st.dataframe(pd.DataFrame(rows), hide_index=True)
    return [row["judge"] for row in rows]


def run_form(store: Store, admin: str) -> None:
    """Run a judge on the pairs it has not labelled yet, at most ``limit`` of them: every
    candidate, or a pooled run's top k, and of these only the holes if asked."""
    with st.form("run_judge"):
        st.markdown("**Run a judge** (any OpenAI-compatible chat-completions server)")
        base_url = st.text_input("Base URL", "http://127.0.0.1:8080/v1")
        model = st.text_input("Model")
        name = st.text_input("Judge name (default: the model)")
        key_env = st.text_input(
            "Environment variable of the API key (GOLDSET_JUDGE_*, OPENAI_API_KEY, or one "
            "allowed with goldset judge-key-env)",
            judges.DEFAULT_API_KEY_ENV,
        )
        response_format = st.selectbox("Ask for JSON as", judges.RESPONSE_FORMATS)
        template = st.text_area(
            "Prompt template ($scale and $max_grade are the project's grade scale)",
            judges.DEFAULT_PROMPT.read_text(encoding="utf-8"),
            height=200,
        )
        run = st.selectbox(
            "Pairs of",
            [None, *store.pooled_run_names()],
            format_func=lambda run: "every candidate" if run is None else f"pooled run {run}",
        )
        limit = st.number_input("Pairs", min_value=1, max_value=MOST_PAIRS, value=20)
        retries = st.number_input("Retries on 429/5xx/timeouts", min_value=0, value=4)
        depth = st.number_input("Depth k (a pooled run's top k)", min_value=1, value=10)
        timeout = st.number_input(
            "Timeout per request (s), connecting to the last byte", min_value=1.0, value=60.0
        )
        concurrency = st.number_input("Requests at once", min_value=1, max_value=16, value=4)
        holes_only = st.checkbox("Only the holes: pairs no human labelled")
        if st.form_submit_button("Judge"):
            try:
                accounts.authorize(store, admin, "admin")
                endpoint = judges.Endpoint.from_env(
                    base_url,
                    model,
                    key_env,
                    store.judge_key_envs(),
                    response_format=response_format,
                    retries=retries,
                    timeout=timeout,
                )
                pairs = {"run": run, "depth": depth, "holes_only": holes_only, "limit": limit}
                outcome = _run(store, endpoint, name or model, template, pairs, concurrency)
                context.report(outcome)
            except (ValueError, PermissionError) as error:
                context.report(f"Not done: {error}")
            st.rerun()


def _run(
    store: Store,
    endpoint: judges.Endpoint,
    name: str,
    template: str,
    pairs: dict,
    concurrency: int,
) -> str:
    """Judge the ``pairs`` asked for (:meth:`Store.machine_pairs`' options); the outcome."""
    if not endpoint.model:
        raise ValueError("a judge needs a model")
    identity = judges.judge_identity(name)
    prompt = judges.Prompt.from_text(template, store.settings()["max_grade"])
    rows = store.machine_pairs(identity, **pairs)
    with st.spinner(f"judging {len(rows)} pairs"):
        summary = judges.judge_project(
            store, endpoint, prompt, identity, rows, concurrency=int(concurrency)
        )
    failed = ", ".join(f"{outcome} {count}" for outcome, count in sorted(summary.failed.items()))
    stopped = f"; stopped ({summary.stopped}): run again to resume" if summary.stopped else ""
    pairs_failed = "".join(
        f"; {failure['query_id']} {failure['doc_id']}: {failure['outcome']}: {failure['detail']}"
        for failure in summary.failures[:FAILURES_SHOWN]
    )
    return (
        f"{identity}: {summary.labelled} of {summary.pairs} pairs labelled"
        f"{f'; failed: {failed}' if failed else ''}{stopped}{pairs_failed}"
    )


def calibration_section(store: Store, golden: Golden, names: list[str]) -> None:
    """Agreement with the humans (``golden``) per slice, and the verdicts, for the chosen
    judge."""
    if not names:
        return
    st.subheader("Calibration against the humans")
    judge = st.selectbox("Judge", names)
    machine = store.machine_judgments_frame(judge)
    settings = store.settings()
    report = calibration_report(
        golden,
        machine,
        judge=judge,
        rel_threshold=settings["rel_threshold"],
        max_grade=settings["max_grade"],
        n_resamples=200,
    )
    if not report["pairs"]:
        st.info("No pair is labelled by both this judge and a human yet.")
        return
    st.dataframe(pd.DataFrame(_agreement_rows(report)), hide_index=True)
    for verdict in report["verdicts"].values():
        st.text(verdict)
    st.caption(
        "Kappa: bootstrap 95% CI over queries; TPR and TNR: Wilson 95% intervals. "
        "goldset calibrate adds each run's MRR@10, hit@1 and miss@10 under both label sets."
    )


def _agreement_rows(report: dict) -> list[dict]:
    rows = []
    for name, figures in report["agreement"].items():
        rows.append(
            {
                "slice": name,
                "pairs": figures["pairs"],
                "kappa": figures["kappa"]["value"],
                "kappa 95% CI": _bounds(figures["kappa"]["ci95"]),
                "TPR": figures["tpr"]["value"],
                "TPR 95% CI": _bounds(figures["tpr"]["ci95"]),
                "TNR": figures["tnr"]["value"],
                "TNR 95% CI": _bounds(figures["tnr"]["ci95"]),
                "confusion [[TN FP] [FN TP]]": str(figures["confusion"]["relevance"]),
            }
        )
    return rows


def _bounds(ci: list) -> str:
    return "n/a" if None in ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def second_opinions_section(
    store: Store, admin: str, names: list[str], golden_version: str
) -> None:
    """The judge the project trusts, and the queries where it disagrees with the one human
    who judged them: every other annotator gets those first, until a second one judged them.
    A judge is trusted on the golden set of ``golden_version``."""
    st.subheader("Second opinions first")
    status = store.trust_status(golden_version)
    current = None if status is None else status["judge"]
    options = list(dict.fromkeys([None, *names, current]))
    chosen = st.selectbox(
        "Trusted judge: where it disagrees with the one human who judged a query, the query "
        "goes to a second annotator first (blind)",
        options,
        index=options.index(current),
        format_func=lambda judge: "none" if judge is None else judge,
    )
    untrusted = status is not None and not status["trusted"]
    if untrusted:
        st.warning(  # the changed parts are goldset's own words, never data text
            f"The judge chosen is no longer trusted: its {', '.join(status['changed'])} "
            "changed since it was trusted. Calibrate it again (above), then trust it again."
        )
    again = untrusted and st.button("Trust it again, as it is now")
    if chosen != current or again:
        try:
            accounts.authorize(store, admin, "admin")
            store.trust_judge(chosen, golden_version)
            context.report(f"Trusted judge: {chosen or 'none'}.")
        except (ValueError, PermissionError) as error:
            context.report(f"Not done: {error}")
        st.rerun()
    waiting = store.second_opinions()
    if current is not None:
        st.caption(f"{len(waiting)} queries wait for a second annotator.")
    if waiting:
        st.dataframe(pd.DataFrame(waiting), hide_index=True)


user = context.open_page("admin", "Machine judges")
project = context.store()
known = judges_section(project)
run_form(project, user["name"])
# read in bulk and kept while no label changes: built from its records at every rerun, for
# each section, it took 4.4 s a time on 20,000 queries (0.4 s in bulk)
golden = context.golden_at(live.ProjectState.of(project))
calibration_section(project, golden, known)
second_opinions_section(project, user["name"], known, golden.version)
