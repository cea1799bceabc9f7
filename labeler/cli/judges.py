"""The machine judges' commands: ``judge`` labels pooled pairs through an OpenAI-compatible
server, ``judge-key-env`` names the variables its API key may come from, ``calibrate``
measures the judge against the humans."""

from __future__ import annotations

import json
import sys

import click

from goldset.labeler.cli.common import (
    LABELS,
    MAX_RESAMPLES,
    count_option,
    dollars_option,
    fail_on_bad_input,
    json_option,
    machine_labels,
    open_store,
    seed_option,
)
from goldset.labeler.cli.text import fixed, signed


@click.command()
@click.option("--db", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option(
    "--base-url", required=True, help="OpenAI-compatible API, e.g. http://127.0.0.1:8080/v1"
)
@click.option("--model", required=True, help="Model name sent with every request.")
@click.option("--name", help="Judge name, stored as machine:NAME [default: the model].")
@click.option(
    "--api-key-env",
    default="GOLDSET_JUDGE_API_KEY",
    show_default=True,
    help="Environment variable holding the API key (unset: no key, for a local server): "
    "GOLDSET_JUDGE_*, OPENAI_API_KEY, or one allowed with goldset judge-key-env.",
)
@click.option(
    "--prompt",
    "prompt_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Prompt template [default: labeler/judge_prompt.md].",
)
@count_option("--concurrency", 1, 4)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds per request, the whole of it (connecting, headers, body).",
)
@count_option("--retries", 0, 4, "Retries on 429/5xx/timeouts, with exponential backoff.")
@click.option(
    "--response-format",
    type=click.Choice(["json", "json-schema", "json-object-schema", "none"]),
    default="json",
    show_default=True,
    help="How to ask for JSON: json_object; OpenAI's json_schema; json_object with a schema "
    "(llama-cpp-python's server); nothing.",
)
@click.option("--run", "run_name", help="Only this pooled run's top DEPTH.")
@click.option(
    "--holes",
    "holes_run",
    type=click.Path(exists=True, dir_okay=False),
    help="A new run file: fill its top DEPTH that no human has labelled.",
)
@count_option("--depth", 1, 10)
@click.option("--limit", type=click.IntRange(min=0), help="Judge at most N pairs this time.")
@json_option
@fail_on_bad_input
def judge(
    db,
    base_url,
    model,
    name,
    api_key_env,
    prompt_path,
    concurrency,
    timeout,
    retries,
    response_format,
    run_name,
    holes_run,
    depth,
    limit,
    as_json,
):
    """Label pooled (query, document) pairs with a machine judge.

    \b
    Example:
        python -m llama_cpp.server --model gemma.gguf --port 8080 &
        goldset judge --db project.db --base-url http://127.0.0.1:8080/v1 \\
            --model gemma-3-270m --response-format json-object-schema --limit 200
        GOLDSET_JUDGE_API_KEY=sk-... goldset judge --db project.db \\
            --base-url https://api.example.com/v1 --model big-model --holes new.trec

    Any OpenAI-compatible chat-completions server (hosted, vLLM, Ollama, llama.cpp).
    Labels are kept apart, as machine:NAME: they enter no golden set, agreement or metric
    unless asked (goldset eval --labels machine|both). Resumable: pairs this judge has
    labelled are skipped. Every call's model, prompt hash, tokens and seconds are kept, and
    every failed pair is listed with its outcome. The key is sent to --base-url only: a
    redirect is not followed. An answer over 1 MiB is not read.
    """
    from goldset.labeler import judges
    from goldset.labeler.pooling import read_pooled_run

    if run_name and holes_run:
        raise click.UsageError("give --run NAME or --holes RUN_FILE, not both")
    try:
        identity = judges.judge_identity(name or model)
    except ValueError as error:
        raise _bad_input(str(error)) from None
    pairs = None
    if holes_run:
        rankings = read_pooled_run(holes_run, depth).rankings
        pairs = [(query_id, doc_id) for query_id, docs in rankings.items() for doc_id, _ in docs]
    with open_store(db, write=True) as store:
        try:
            endpoint = judges.Endpoint.from_env(
                base_url,
                model,
                api_key_env,
                store.judge_key_envs(),
                timeout=timeout,
                retries=retries,
                response_format=response_format,
            )
        except ValueError as error:
            raise _bad_input(str(error)) from None
        prompt = _prompt(prompt_path, store.settings()["max_grade"])
        rows = store.machine_pairs(
            identity,
            run=run_name,
            depth=depth,
            pairs=pairs,
            holes_only=bool(holes_run),
            limit=limit,
        )
        summary = judges.judge_project(store, endpoint, prompt, identity, rows, concurrency)
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
    else:
        click.echo(_judging_text(summary))
    if summary.stopped:
        sys.exit(1)


def _prompt(path: str | None, max_grade: int):
    """The prompt template at ``path`` (None: the shipped one), filled; a file that is not
    UTF-8 text or has a bad placeholder is bad input: one line naming it, exit 2."""
    from goldset.labeler import judges

    try:
        return judges.Prompt.from_template(path, max_grade)
    except UnicodeDecodeError as error:
        where = f"byte {error.start + 1}: {error.reason}"
        raise _bad_input(f"{path}: the prompt template is not valid UTF-8 ({where})") from None
    except ValueError as error:
        raise _bad_input(str(error)) from None


def _bad_input(message: str) -> click.ClickException:
    """A refusal of what the command was given: one line, exit 2."""
    failure = click.ClickException(message)
    failure.exit_code = 2
    return failure


FAILURES_SHOWN = 20  # the text lists this many failed pairs; --json lists them all


def _judging_text(summary) -> str:
    failed = ", ".join(f"{outcome} {count}" for outcome, count in sorted(summary.failed.items()))
    lines = [
        f"{summary.judge}: {summary.labelled} of {summary.pairs} pairs labelled"
        + (f"; failed: {failed}" if failed else ""),
        f"{summary.calls} calls, {summary.prompt_tokens:,} prompt + "
        f"{summary.completion_tokens:,} completion tokens, {summary.seconds:.1f} s",
    ]
    lines += [
        f"  {failure['query_id']} {failure['doc_id']}: {failure['outcome']}: {failure['detail']}"
        for failure in summary.failures[:FAILURES_SHOWN]
    ]
    if len(summary.failures) > FAILURES_SHOWN:
        lines.append(f"  ... and {len(summary.failures) - FAILURES_SHOWN} more (--json: all)")
    if summary.stopped:
        lines.append(f"stopped ({summary.stopped}): run the same command again to resume")
    return "\n".join(lines)


@click.command("judge-key-env")
@click.option("--db", type=click.Path(exists=True, dir_okay=False), required=True)
@click.argument("name", required=False)
@click.option("--remove", is_flag=True, help="Take NAME off the allowed variables.")
def judge_key_env(db, name, remove):
    """Allow a judge's API key to come from the environment variable NAME; without NAME,
    list the variables allowed.

    \b
    Example:
        goldset judge-key-env --db project.db AZURE_OPENAI_KEY
        goldset judge --db project.db --api-key-env AZURE_OPENAI_KEY \\
            --base-url https://api.example.com/v1 --model big-model

    GOLDSET_JUDGE_* and OPENAI_API_KEY are always allowed; any other variable only once
    named here, from the command line: the app's Machine judges page cannot name a
    variable of the server (its database password, a cloud token) and send it to a URL.
    """
    from goldset.labeler import judges

    if remove and name is None:
        raise click.UsageError("--remove needs the NAME to take off")
    if name is not None:
        try:
            judges.key_env_name(name)
        except ValueError as error:
            raise _bad_input(str(error)) from None
    with open_store(db, write=name is not None) as store:
        if name is None:
            always = f"{judges.KEY_ENV_PREFIX}*, {', '.join(sorted(judges.STANDARD_KEY_ENVS))}"
            click.echo(f"always allowed: {always}")
            click.echo(f"allowed in this project: {', '.join(store.judge_key_envs()) or 'none'}")
        elif remove:
            removed = store.forget_judge_key_env(name)
            click.echo(f"{name} {'taken off' if removed else 'was not on'} the allowed list")
        else:
            store.allow_judge_key_env(name)
            click.echo(f"a judge's API key may come from {name}")


@click.command()
@click.option("--db", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--judge", "judge_name", help="Judge NAME (machine:NAME) [default: the only one].")
@click.option(
    "--run",
    "runs",
    type=click.Path(exists=True, dir_okay=False),
    multiple=True,
    help="A run whose MRR@10, hit@1, miss@10 to compare under both labels (repeatable).",
)
@click.option(
    "--baseline",
    type=click.Path(exists=True, dir_okay=False),
    help="With --candidate: does the release gate decide the same under both?",
)
@click.option("--candidate", type=click.Path(exists=True, dir_okay=False))
@click.option("--min-kappa", type=float, default=0.6, show_default=True)
@click.option(
    "--max-mrr-delta",
    type=float,
    default=0.05,
    show_default=True,
    help="The paired CI of ΔMRR@10 must lie within ± this.",
)
@click.option(
    "--trust",
    is_flag=True,
    help="Trust this judge: a query where it disagrees with the one annotator who judged it "
    "goes first to every other annotator's queue (a second opinion).",
)
@click.option(
    "--send-disagreements-to",
    "second_annotator",
    help="With a trusted judge: also assign the queries waiting for a second opinion to "
    "this annotator, most disagreeing first.",
)
@dollars_option("--price-in", "Dollars per million prompt tokens (0: a local server).")
@dollars_option("--price-out", "Dollars per million completion tokens.")
@dollars_option("--rate", "Annotators' hourly rate, in dollars: prices the human hours saved.")
@count_option("--bootstrap", 0, 1000, maximum=MAX_RESAMPLES)
@seed_option()
@json_option
@fail_on_bad_input
def calibrate(
    db,
    judge_name,
    runs,
    baseline,
    candidate,
    min_kappa,
    max_mrr_delta,
    trust,
    second_annotator,
    price_in,
    price_out,
    rate,
    bootstrap,
    seed,
    as_json,
):
    """Measure a machine judge against the humans, on the pairs both labelled.

    \b
    Example:
        goldset calibrate --db project.db --judge gemma-3-270m \\
            --baseline bm25.trec --candidate dense.trec
        goldset calibrate --db project.db --trust --send-disagreements-to rita

    Per slice: Cohen's kappa on relevance (bootstrap CI over queries), the machine's
    true-positive and true-negative rates (Wilson 95% intervals), the confusion matrix;
    each run's MRR@10, hit@1 and miss@10 under machine vs human labels (paired bootstrap
    CI), whether the release gate decides the same, and a verdict: usable for
    hole-filling where kappa >= --min-kappa and every ΔMRR@10 CI is within
    ±--max-mrr-delta. --baseline and --candidate are compared too. The cost: the judge's
    tokens at --price-in/--price-out and its call time, beside the human hours its labels
    of unlabelled pairs (filled holes) saved at the median human seconds per judgement.
    """
    from goldset.eval.calibration import calibration_report
    from goldset.eval.readers import golden_from_records, read_run, worth_reading_together
    from goldset.eval.threads import concurrently

    if bool(baseline) != bool(candidate):
        raise click.UsageError("give both --baseline and --candidate, or neither")
    with open_store(db, write=trust or bool(second_annotator)) as store:
        identity, machine = machine_labels(store, judge_name)
        golden_set = golden_from_records(store.golden_records(), source=db)
        settings = store.settings()
        cost = _machine_cost(store, identity, golden_set, machine, price_in, price_out, rate)
        if trust:
            store.trust_judge(identity, golden_set.version)
        trust_status = store.trust_status(golden_set.version)
        if second_annotator:
            if store.trusted_judge() != identity:
                raise click.UsageError(
                    f"--send-disagreements-to follows the trusted judge: add --trust to trust "
                    f"{identity} (now trusted: {store.trusted_judge() or 'none'})"
                )
            waiting = [
                row
                for row in sorted(store.second_opinions(), key=lambda row: -row["pairs"])
                if row["first_annotator"] != second_annotator  # never their own work again
            ]
            sent = store.assign(second_annotator, [row["query_id"] for row in waiting])
    paths = list(dict.fromkeys([*runs, *filter(None, (baseline, candidate))]))
    readers = [lambda path=path: read_run(path) for path in paths]
    threads = worth_reading_together(*paths)
    loaded = dict(zip(paths, concurrently(*readers, threads=threads), strict=True))
    report = calibration_report(
        golden_set,
        machine,
        list(loaded.values()),
        judge=identity,
        rel_threshold=settings["rel_threshold"],
        max_grade=settings["max_grade"],
        gate_runs=(loaded[baseline], loaded[candidate]) if baseline else None,
        thresholds={"min_kappa": min_kappa, "max_mrr_delta": max_mrr_delta},
        n_resamples=bootstrap,
        seed=seed,
    )
    report["cost"] = cost
    report["trust"] = trust_status
    if second_annotator:
        report["sent_to_second_annotator"] = {"annotator": second_annotator, "queries": sent}
    click.echo(json.dumps(report, indent=2) if as_json else _calibration_text(report))


def _machine_cost(store, identity, golden_set, machine, price_in, price_out, rate) -> dict:
    """The judge's cost so far, and the human time its filled holes saved (see calibrate)."""
    from goldset.eval.calibration import with_labels
    from goldset.eval.cost import machine_judging_cost, median_seconds_per_judgement

    figures = next(row for row in store.machine_judges() if row["judge"] == identity)
    human_seconds = store.judgement_seconds()["seconds"]
    filled = len(with_labels(golden_set, machine, "both").judgments) - len(golden_set.judgments)
    return machine_judging_cost(
        figures["labels"],
        figures["prompt_tokens"],
        figures["completion_tokens"],
        figures["seconds"],
        input_price=price_in,
        output_price=price_out,
        human_seconds_per_judgement=median_seconds_per_judgement(human_seconds),
        hourly_rate=rate,
        holes_filled=filled,
    ).as_dict()


def _calibration_text(report: dict) -> str:
    import pandas as pd

    lines = [
        f"{report['judge']}: {report['pairs']} pairs labelled by both, "
        f"over {report['queries']} queries (relevant: grade >= {report['rel_threshold']})"
    ]
    rows = {}
    for name, figures in report["agreement"].items():
        kappa = figures["kappa"]
        rows[name] = {
            "pairs": str(figures["pairs"]),
            "kappa": _interval(kappa["value"], kappa["ci95"]),
            "TPR": _interval(figures["tpr"]["value"], figures["tpr"]["ci95"]),
            "TNR": _interval(figures["tnr"]["value"], figures["tnr"]["ci95"]),
            "confusion [[TN FP] [FN TP]]": str(figures["confusion"]["relevance"]),
        }
    lines += ["", pd.DataFrame.from_dict(rows, orient="index").to_string()]
    for run, by_slice in report["impact"].items():
        impact_rows = {}
        for name, entry in by_slice.items():
            for spec, figure in entry["metrics"].items():
                impact_rows[f"{name} {spec}"] = {
                    "human": fixed(figure["human"]),
                    "machine": fixed(figure["machine"]),
                    "Δ (95% CI)": _interval(figure["delta"], figure["ci95"], with_sign=True),
                    "machine judged@10": fixed(entry["machine_judged@10"]),
                }
        lines += ["", f"{run} ({by_slice['(all)']['queries']} queries)"]
        lines.append(pd.DataFrame.from_dict(impact_rows, orient="index").to_string())
    if "gate" in report:
        gate = report["gate"]
        decided = {labels: "pass" if gate[labels]["passed"] else "FAIL" for labels in LABELS[:2]}
        same = "same" if gate["same_decision"] else "DIFFERENT"
        lines += [
            "",
            f"release gate {gate['baseline']} -> {gate['candidate']}: human {decided['human']}, "
            f"machine {decided['machine']} ({same} decision)",
        ]
    lines += ["", *(f"verdict: {text}" for text in report["verdicts"].values())]
    cost = report["cost"]
    saved = cost["human_saved"]
    saving = (
        "human time saved not known yet (no human judgement timed)"
        if saved["hours"] is None
        else f"{saved['hours']:.2f} human hours (${saved['dollars'] or 0:.2f}) saved"
    )
    lines.append(
        f"cost: {cost['pairs']} machine labels, {cost['prompt_tokens']:,} + "
        f"{cost['completion_tokens']:,} tokens = ${cost['dollars']:.4f}, "
        f"{cost['wall_seconds']:.0f} s of calls; {cost['holes_filled']} holes filled = {saving}"
    )
    if report["trust"] is not None:
        lines.append(trust_line(report["trust"]))
    if "sent_to_second_annotator" in report:
        sent = report["sent_to_second_annotator"]
        lines.append(f"{sent['queries']} disagreeing queries sent to {sent['annotator']}")
    return "\n".join(lines)


def trust_line(status: dict) -> str:
    """The trusted judge and whether its trust holds, or what changed since (one line)."""
    if status["trusted"]:
        return f"trusted judge: {status['judge']}"
    return (
        f"{status['judge']} is no longer trusted: its {', '.join(status['changed'])} changed "
        "since it was trusted; calibrate it again (goldset calibrate --trust)"
    )


def _interval(value: float | None, ci: list | None, *, with_sign: bool = False) -> str:
    shown = (signed if with_sign else fixed)(value)
    if not ci or None in ci:
        return shown
    return f"{shown} [{ci[0]:.3f}, {ci[1]:.3f}]"
