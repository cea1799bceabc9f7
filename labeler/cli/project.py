"""The project's own commands: ``import``, ``pool``, ``configure``, ``export``, ``status``,
``cost`` (planned, or measured in a project) and ``app``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from contextlib import closing
from typing import TYPE_CHECKING

import click

from goldset.labeler.cli.common import (
    EXPORTED_LABELS,
    FiniteFloat,
    changing_project,
    count_option,
    db_option,
    fail_on_bad_input,
    json_option,
    labels_options,
    machine_labels,
    open_store,
)

if TYPE_CHECKING:
    import pandas as pd

    from goldset.eval.cost import Cost


@click.command("cost")
@click.option("--queries", type=click.IntRange(min=0), help="Queries to label.")
@click.option("--docs-per-query", type=FiniteFloat(min=0), help="Docs judged per query.")
@click.option("--seconds", type=FiniteFloat(min=0), help="Seconds per judgement.")
@click.option("--rate", type=FiniteFloat(min=0), help="Hourly rate, in dollars.")
@click.option(
    "--annotators",
    type=FiniteFloat(min=1),
    default=1,
    show_default=True,
    help="Annotators per query (1.2 = a fifth of the queries labelled twice).",
)
@click.option(
    "--db",
    type=click.Path(exists=True, dir_okay=False),
    help="Measure a project's cost instead: spent, remaining and total.",
)
@json_option
@fail_on_bad_input
def cost_command(queries, docs_per_query, seconds, rate, annotators, db, as_json):
    """Hours and dollars to label a golden set: planned, or measured in a project.

    \b
    Example:
        goldset cost --queries 400 --docs-per-query 4 --seconds 20 --rate 60
        400 queries × 4 docs × 20 s × 1 annotator = 32,000 s = 8.89 h = $533.33 at $60/h
        goldset cost --db project.db --rate 60 --json

    The line rounds to cents and hundredths of an hour; --json prints the unrounded figures,
    {"seconds": ..., "hours": ..., "dollars": ...}, for scripts to round as they need.

    With --db the figures are measured, as on the app's cost page (--rate defaults to $60/h
    there): every active second in the log is spent (judging, U/M, searching, attaching,
    skipping; a pause counts up to 120 s), and each query not done yet costs the mean active
    seconds of a done query (its median is shown beside it) × the measured overlap
    (annotators per query), less the time already spent on queries started. The JSON has
    spent, remaining and total (each with seconds, hours and dollars), seconds_per_query
    (the mean), median_seconds_per_query, judgements_per_query (docs read per done query,
    those a U/M verdict answered for included), seconds_per_judgement (seconds per doc
    read), rate, queries_remaining, annotators_per_query and per annotator.
    """
    from goldset.eval.cost import labelling_cost

    if db:
        _measured_cost(db, queries, docs_per_query, seconds, rate, as_json)
        return
    given = {
        "--queries": queries,
        "--docs-per-query": docs_per_query,
        "--seconds": seconds,
        "--rate": rate,
    }
    missing = [name for name, value in given.items() if value is None]
    if missing:
        raise click.UsageError(f"missing {', '.join(missing)}")
    estimate = labelling_cost(queries, docs_per_query, seconds, rate, annotators)
    if as_json:
        click.echo(json.dumps(estimate.as_dict()))
    else:
        click.echo(_cost_text(queries, docs_per_query, seconds, annotators, rate, estimate))


def _cost_text(
    queries: int, docs: float, seconds: float, annotators: float, rate: float, estimate: Cost
) -> str:
    people = "annotator" if annotators == 1 else "annotators"
    return (
        f"{queries:,} queries × {docs:g} docs × {seconds:g} s × {annotators:g} {people} = "
        f"{estimate.seconds:,.0f} s = {estimate.hours:.2f} h = ${estimate.dollars:,.2f} "
        f"at ${rate:g}/h"
    )


def _measured_cost(db, queries, docs_per_query, seconds, rate, as_json) -> None:
    """``goldset cost --db``: the project's measured cost (see labeler.live.cost_summary)."""
    from goldset.labeler import live

    planned = {"--queries": queries, "--docs-per-query": docs_per_query, "--seconds": seconds}
    given = [name for name, value in planned.items() if value is not None]
    if given:
        raise click.UsageError(f"--db measures the cost: leave out {', '.join(given)}")
    with open_store(db) as store:
        summary = live.cost_summary(store, live.DEFAULT_RATE if rate is None else rate)
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
        return
    figures = summary.cost
    if not figures.seconds_per_query >= 0:  # NaN: no query completed yet
        click.echo(f"nothing measured yet: no query is done; {summary.queries_remaining:,} left")
        return
    lines = [
        live.work_text(summary),
        f"{summary.annotators_per_query:.2f} annotators per query",
        *(
            f"{name:<9} {live.duration_text(price.hours):>10}  ${price.dollars:,.2f}"
            for name, price in (
                ("spent", figures.spent),
                ("remaining", figures.remaining),
                ("total", figures.total),
            )
        ),
        f"at ${summary.rate:g}/h",
    ]
    click.echo("\n".join(lines))


@click.command("import")
@click.argument("tasks_file", type=click.Path(exists=True, dir_okay=False), required=False)
@click.option(
    "--corpus",
    type=click.Path(exists=True, dir_okay=False),
    help="A BEIR corpus.jsonl (_id, title, text) to search for missed answers.",
)
@db_option
@fail_on_bad_input
def import_command(tasks_file, corpus, db):
    """Import queries with their candidates (JSONL or CSV) into the project.

    \b
    Example:
        goldset import tasks.jsonl --db project.db
        goldset import --corpus corpus.jsonl --db project.db

    All-or-nothing: any problem is reported with its file, line and field, and nothing is
    written. Importing the same file again changes nothing. --corpus adds documents that
    are no query's candidate, so that annotators can find (with "/" on the label page) and
    attach the answer a system missed; given with a TASKS_FILE, both are one import (a
    refused corpus imports no task either).
    """
    if tasks_file is None and corpus is None:
        raise click.UsageError("give a TASKS_FILE, --corpus FILE, or both")
    with changing_project(db, create=True) as store:
        if tasks_file is None:
            click.echo(f"{store.add_corpus(corpus)} corpus documents added (searchable)")
            return
        counts = store.import_tasks(tasks_file, corpus=corpus)  # one import: all or nothing
        click.echo(
            f"{counts['queries_added']} queries added ({counts['candidates_added']} "
            f"candidates, {counts['documents_added']} new documents), "
            f"{counts['queries_unchanged']} already there"
        )
        if corpus is not None:
            added = counts["corpus_documents_added"]
            click.echo(f"{added} corpus documents added (searchable)")


@click.command()
@click.option("--mode", type=click.Choice(["first_hit", "full"]), help="How queries are judged.")
@click.option("--depth", type=click.IntRange(min=0), help="Candidates judged per query (0 = all).")
@click.option("--max-grade", type=click.IntRange(min=1), help="Top of the grade scale 0..N.")
@click.option("--binary", is_flag=True, help="Grades 0/1 only (the same as --max-grade 1).")
@click.option("--threshold", type=click.IntRange(min=1), help="Lowest grade that is relevant.")
@click.option("--by", default="cli", show_default=True, help="Who makes the change (logged).")
@click.option("--json", "as_json", is_flag=True, help="Print the protocol as JSON.")
@db_option
@fail_on_bad_input
def configure(mode, depth, max_grade, binary, threshold, by, as_json, db):
    """Set the project's labelling protocol; every annotator labels under it.

    \b
    Example:
        goldset configure --db project.db --mode full --depth 10 --max-grade 4 --threshold 2

    With no option, prints the protocol and its change log. Every change is logged with
    --by and the time; annotators see the protocol and cannot change it.
    """
    if binary and max_grade not in (None, 1):
        raise click.UsageError("--binary means --max-grade 1")
    max_grade = 1 if binary else max_grade
    with changing_project(db, create=True) as store:
        settings = store.configure(
            mode=mode, depth=depth, max_grade=max_grade, rel_threshold=threshold, by=by
        )
        log = store.protocol_log()
    if as_json:
        click.echo(json.dumps({"protocol": settings, "log": log}, indent=2))
        return
    click.echo(" ".join(f"{key}={value}" for key, value in settings.items()))
    for change in log:
        changes = " ".join(f"{key}={value}" for key, value in change["changes"].items())
        click.echo(f"  {change['changed_at']} by {change['changed_by']}: {changes}")


@click.command()
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), help="BEIR corpus.jsonl.")
@click.option("--queries", type=click.Path(exists=True, dir_okay=False), help="BEIR queries.jsonl.")
@click.option(
    "--run",
    "runs",
    type=click.Path(exists=True, dir_okay=False),
    multiple=True,
    required=True,
    help="A TREC run to pool (repeatable).",
)
@count_option("--depth", 1, 10)
@db_option
@fail_on_bad_input
def pool(corpus, queries, runs, depth, db):
    """Pool several systems' TREC runs (top DEPTH per query) over a BEIR corpus.

    \b
    Example:
        goldset pool --corpus corpus.jsonl --queries queries.jsonl \\
            --run bm25.trec --run dense.trec --depth 10 --db project.db

    Candidates are shown in fused order, with each run's rank kept. Pooling another run
    later adds only documents not yet in the pool; judgements already made are reused.
    Without --corpus and --queries the project's own documents and queries are used:
    "goldset pool --run new.trec --db project.db" adds a new system's unjudged top 10.
    """
    with changing_project(db, create=True) as store:
        counts = store.pool(corpus, queries, runs, depth)
    click.echo(
        f"pooled {', '.join(counts['runs'])} at depth {depth}: "
        f"{counts['candidates_added']} new candidates over {counts['queries_touched']} queries "
        f"({counts['queries_added']} queries, {counts['documents_added']} documents added)"
    )
    if counts["run_queries_ignored"]:
        click.echo(f"{counts['run_queries_ignored']} run queries are not in the project: ignored")


@click.command()
@db_option
@click.option(
    "--format",
    "export_format",
    type=click.Choice(["jsonl", "qrels"]),
    default="jsonl",
    show_default=True,
)
@click.option("--out", type=click.Path(dir_okay=False, writable=True), required=True)
@labels_options(choices=EXPORTED_LABELS)
@fail_on_bad_input
def export(db, export_format, out, labels, judge_name):
    """Export the golden set: golden-set JSONL (every query) or TREC qrels.

    \b
    Example:
        goldset export --db project.db --format jsonl --out golden.jsonl

    The JSONL holds every query, skipped and unanswerable ones included; unjudged
    documents are absent, never 0. The qrels list the judged docs of the scored
    (done, answerable) queries. --labels both adds each query's machine labels under
    "machine_judgments" (and the judge under "machine_judge"); --labels machine writes
    those alone, with "judgments" left empty. Machine labels are never in "judgments".
    """
    if labels != "human":
        if export_format != "jsonl":
            raise click.UsageError("qrels cannot mark machine labels: use --format jsonl")
        from goldset.labeler.golden import write_jsonl

        # The records' generator is closed before its store, whatever stopped the export.
        with open_store(db) as store, closing(store.iter_golden_records()) as records:
            store.check_export_path(out)
            identity, machine = machine_labels(store, judge_name)
            count = write_jsonl(_with_machine_judgments(records, identity, machine, labels), out)
        click.echo(f"wrote {count} queries to {out}")
        return
    with open_store(db) as store:
        if export_format == "jsonl":
            click.echo(f"wrote {store.write_jsonl(out)} queries to {out}")
            return
        count = store.write_qrels(out)
        progress = list(store.progress().values())
    click.echo(f"wrote {count} judgements to {out}")
    left_out = qrels_left_out(progress)
    if left_out:
        click.echo(f"left out (in --format jsonl only): {left_out}")


def qrels_left_out(progress: Iterable[Mapping[str, int]]) -> str:
    """The queries TREC qrels leave out, counted by why (from ``Store.progress`` per slice):
    unanswerable ones (no relevant doc to list: only the JSONL says "unanswerable", and eval
    leaves them out of the means) and those not done. Empty when none is left out."""
    progress = list(progress)
    totals = {
        words: sum(counts[key] for counts in progress) for key, words in LEFT_OUT_OF_QRELS.items()
    }
    return ", ".join(f"{n} {words}" for words, n in totals.items() if n)


# What `Store.progress` counts that qrels cannot hold (done, answerable queries are in them).
LEFT_OUT_OF_QRELS = {
    "unanswerable": "unanswerable",
    "skipped": "skipped",
    "in_progress": "in progress",
    "pending": "pending",
}


# The measured work figures that `goldset status --json` adds, as `goldset cost --db` has them.
STATUS_WORK_FIGURES = (
    "current_labels", "judgements_made", "seconds_per_query", "median_seconds_per_query",
    "seconds_per_judgement", "judgements_per_query", "queries_remaining",
)  # fmt: skip


@click.command()
@db_option
@json_option
def status(db, as_json):
    """Show the project: queries done / pending / skipped / unanswerable per slice, and the
    work figures as the app's dashboard and cost planner word them (current labels,
    judgements made, mean and median seconds per done query, docs read, queries left).

    \b
    Example:
        goldset status --db project.db
    """
    import pandas as pd

    from goldset.labeler import live

    with open_store(db) as store:
        summary = store.status()
        work = live.cost_summary(store)
    if as_json:
        figures = {key: work.as_dict()[key] for key in STATUS_WORK_FIGURES}
        click.echo(json.dumps({**summary, **figures}, indent=2))
        return
    frame = pd.DataFrame(summary["slices"]).T.rename(index={"": "(no slice)"})
    click.echo(f"{summary['path']}: {summary['queries']} queries, {summary['documents']} documents")
    click.echo(frame.to_string() if len(frame) else "no queries yet")
    click.echo(live.work_text(work))
    click.echo(
        f"events in the log: {summary['events']:,}; "
        f"annotators: {', '.join(summary['annotators']) or 'none'}"
    )
    for run in summary["runs"]:
        click.echo(f"pooled run {run['name']} at depth {run['depth']}")


# --- the app and its users ----------------------------------------------------------------------


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8501, show_default=True)
@click.option(
    "--allow-host",
    "named_hosts",
    multiple=True,
    metavar="NAME",
    help="A host name (or address) the app answers to besides localhost, 127.0.0.1 and ::1, "
    "as browsers reach it; repeatable. Needs users.",
)
@click.option(
    "--open/--no-open",
    "open_browser",
    default=None,
    help="Open the app in the browser once it is up [default: when a display exists].",
)
@fail_on_bad_input
def app(db, host, port, named_hosts, open_browser):
    """Start the labelling app and open it in the browser.

    \b
    Example:
        goldset app --db project.db --port 8501
        goldset app --db project.db --host 0.0.0.0 --allow-host labels.example.org

    Without --db the default project is used (created from the demo set on first use):
    data/goldset.db in a clone of the repository, else goldset/goldset.db in the user's data
    folder (~/.local/share on Linux). The app's settings (theme, toolbar, address) ship with
    the package, so it behaves the same from any directory. With no users in the project the
    app serves one local annotator and listens on loopback only; once users exist
    (goldset user add NAME) everyone logs in.

    The app answers only requests addressed to a loopback name (localhost, 127.0.0.1, ::1),
    to the address given with --host, and to the names given with --allow-host: any other
    name is refused (403), so that no web page can reach the app by pointing its own name at
    this machine.
    """
    from goldset.labeler.launch import (
        allowed_hosts,
        app_url,
        check_host,
        check_port,
        has_display,
        serve,
    )

    try:
        names = allowed_hosts(host, named_hosts)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--allow-host") from None
    with open_store(db, write=True, create=db is None) as store:
        has_users = bool(store.annotators())
        path = store.path
    check_host(host, has_users, named_hosts)  # every refusal comes before "serving"
    try:
        check_port(host, port)  # as late as can be: the server binds it a second later
    except ValueError as error:
        failure = click.ClickException(str(error))
        failure.exit_code = 2
        raise failure from None
    click.echo(f"goldset: serving {path} on {app_url(host, port)}", err=True)
    answered = f" and {', '.join(names)}" if names else " only (name others with --allow-host)"
    click.echo(f"goldset: answering to loopback names{answered}", err=True)
    browser = has_display() if open_browser is None else open_browser
    serve(db, host, port, has_users, browser, named_hosts)


def _with_machine_judgments(records, identity: str, machine: pd.DataFrame, labels: str):
    """Golden records marked with the machine's labels of each query (``machine_judgments``)."""
    grades = {
        query_id: dict(zip(group["doc_id"], group["grade"].astype(int).tolist(), strict=True))
        for query_id, group in machine.groupby("query_id", sort=False)
    }
    for record in records:
        marked = dict(record)
        if labels == "machine":
            marked["judgments"] = {}
        marked["machine_judge"] = identity
        marked["machine_judgments"] = grades.get(record["query_id"], {})
        yield marked
