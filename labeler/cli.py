"""The ``goldset`` command line: a thin layer over the ``eval`` and ``labeler`` Python APIs."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import click

from labeler.auth import ROLES  # a tuple, in a module of the standard library only

# Every other import is made by the command that needs it: `goldset --help` loads click only,
# and `goldset eval` never loads Streamlit or sqlite-utils (tests/test_import_set.py).
if TYPE_CHECKING:
    import pandas as pd

    from eval.cost import Cost
    from eval.readers import Golden, Run


@click.group()
@click.version_option(package_name="goldset")
def cli() -> None:
    """goldset: build golden sets for search and RAG evaluation, and evaluate systems on them."""


# --- eval and compare ----------------------------------------------------------------------


def _scoring_options(command):
    """Options shared by ``eval`` and ``compare``: where labels come from, how runs are scored."""
    options = [
        click.option(
            "--golden",
            type=click.Path(exists=True, dir_okay=False),
            help="Golden set: golden JSONL, TREC qrels or BEIR qrels.tsv.",
        ),
        click.option(
            "--db",
            help="Or a goldset project database (read only: a typo never creates one).",
        ),
        click.option(
            "-m",
            "--metric",
            "metrics",
            multiple=True,
            help="name@k: mrr, hit, miss, recall, precision, ndcg, judged (repeatable).",
        ),
        click.option(
            "--rel-threshold",
            type=int,
            default=1,
            show_default=True,
            help="Lowest grade that counts as relevant (nDCG uses grades as they are).",
        ),
        click.option(
            "--depth", type=click.IntRange(min=1), help="Keep each query's top N (trec_eval -M)."
        ),
        click.option("--keep-order", is_flag=True, help="Rank by the file's order, not by score."),
        click.option(
            "--gain",
            type=click.Choice(["linear", "exp"]),
            default="linear",
            show_default=True,
            help="nDCG gain: the grade (trec_eval) or 2^grade - 1.",
        ),
        click.option(
            "--abstain-below",
            type=float,
            help="A query whose best score is below this counts as abstained (no results).",
        ),
        click.option(
            "--bootstrap",
            type=click.IntRange(min=0),
            default=1000,
            show_default=True,
            help="Bootstrap resamples for the 95% CIs (0: no CIs).",
        ),
        click.option("--seed", type=int, default=0, show_default=True, help="Resampling seed."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _load_golden(golden: str | None, db: str | None) -> Golden:
    """The golden set from a file or the project."""
    from eval.readers import golden_from_records, read_golden

    if bool(golden) == bool(db):
        raise click.UsageError("give exactly one of --golden FILE or --db PATH")
    if golden:
        golden_set = read_golden(golden)
    else:
        with _open_store(db) as store:
            golden_set = golden_from_records(store.golden_records(), source=db)
    return golden_set


def _load_run(path: str | None, db: str | None) -> Run:
    """A run file, or (with --db and no file) the candidate lists stored in the project."""
    from eval.readers import read_run

    if path:
        return read_run(path)
    if not db:
        raise click.UsageError("give a run file (or --db to evaluate the stored candidates)")
    from labeler.live.project import project_run

    with _open_store(db) as store:
        return project_run(store, depth=None)


def _read_concurrently(*readers: Callable[[], object]) -> list:
    """Call each reader on its own thread, all at once; their results, in order.

    Reading is mostly Arrow's parsing and numpy's hashing, which release the GIL, so a
    golden set and a run (or two) are read in about the time of the longest. An error is
    raised from the first reader (in order) that failed.
    """
    with ThreadPoolExecutor(len(readers)) as pool:
        futures = [pool.submit(reader) for reader in readers]
        return [future.result() for future in futures]


def _scoring(options: dict) -> dict:
    """The keyword arguments of ``build_report`` taken from the command's options."""
    names = ("rel_threshold", "depth", "keep_order", "gain", "abstain_below")
    return {name: options[name] for name in names}


def _metrics(metrics: tuple[str, ...]) -> list[str]:
    from eval.metrics import DEFAULT_METRICS, parse_metric

    chosen = list(metrics) or list(DEFAULT_METRICS)
    for spec in chosen:
        try:
            parse_metric(spec)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--metric") from None
    return chosen


def _fail_on_bad_input(function):
    """Print a refusal as a one-line message, not a traceback: an input error (file, line,
    field) exits with status 2 (not 1, which `compare --gate` uses for a failed gate), any
    other ValueError (an unknown user, say) with status 1."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except ValueError as error:
            # Imported on failure only: user/assign commands need not load eval (and pandas).
            from eval.readers import InputError

            if isinstance(error, InputError):
                failure = click.ClickException(str(error))
                failure.exit_code = 2
                raise failure from None
            raise click.ClickException(str(error)) from None

    return wrapper


LABELS = ("human", "machine", "both")


def _labels_options(command):
    """``--labels human|machine|both`` and ``--judge NAME``: whose labels count."""
    command = click.option(
        "--judge", "judge_name", help="Machine judge NAME for --labels [default: the only one]."
    )(command)
    return click.option(
        "--labels",
        type=click.Choice(LABELS),
        default="human",
        show_default=True,
        help="Whose labels: the humans', a machine judge's, or both (humans first).",
    )(command)


@cli.command("eval")
@click.option("--run", "run_path", type=click.Path(exists=True, dir_okay=False), help="Run file.")
@_scoring_options
@click.option("--per-query", type=click.Path(dir_okay=False), help="Write per-query JSONL here.")
@click.option("--worst", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--record", is_flag=True, help="Keep the results in the project's run history.")
@click.option("--tag", "tags", multiple=True, help="KEY=VALUE kept with --record (repeatable).")
@_labels_options
@_fail_on_bad_input
def eval_command(
    run_path,
    golden,
    db,
    metrics,
    bootstrap,
    seed,
    as_json,
    per_query,
    worst,
    record,
    tags,
    labels,
    judge_name,
    **options,
):
    """Evaluate a run against a golden set.

    \b
    Example:
        goldset eval --golden golden.jsonl --run bm25.trec
        goldset eval --golden qrels.tsv --run bm25.trec -m mrr@10 -m ndcg@10 --json
        goldset eval --db project.db --run dense.trec --record --tag model=e5 --tag chunk=512
        goldset eval --db project.db --run new.trec --labels both --judge gemma-3-270m

    The run is a TREC run or JSONL; with --db and no --run, the candidate lists stored in
    the project are evaluated. Means are over answerable, done queries; a query missing
    from the run scores 0. --record keeps the figures, the tags, the run file's hash and the
    golden set's version in the project (--db), so that later runs can be compared with it.
    --labels machine|both (with --db) scores with a machine judge's labels instead of, or
    filling the holes beside, the humans'; both reports judged@10 by humans and by the machine.
    """
    from eval import report as reports

    if record and not db:
        raise click.UsageError("--record keeps the results in a project: give --db PATH")
    run, golden_set = _read_concurrently(
        lambda: _load_run(run_path, db), lambda: _load_golden(golden, db)
    )
    human_set, golden_set = golden_set, _labelled(golden_set, db, labels, judge_name)
    result = reports.build_report(
        golden_set,
        run,
        _metrics(metrics),
        bootstrap=bootstrap,
        seed=seed,
        worst=worst,
        frame=False,  # the per-query values as arrays: no pandas on a CI gate's path
        **_scoring(options),
    )
    values = result.pop("per_query")
    if labels == "both":
        result["judged@10"] = _judged_by(human_set, golden_set, run, _scoring(options))
    if per_query:
        with open(per_query, "w", encoding="utf-8") as handle:
            for query_id, row in zip(values.query_ids, values.values.tolist(), strict=True):
                # A figure not measured on a query (recall, nDCG on first-hit labels) is NaN: null.
                figures = {
                    spec: None if v != v else v for spec, v in zip(values.metrics, row, strict=True)
                }
                handle.write(json.dumps({"query_id": query_id, **figures}) + "\n")
    if record:
        from labeler.live import history

        try:
            parsed_tags = history.parse_tags(tags)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--tag") from None
        run_hash = history.run_sha256(run_path or run.results)
        with _open_store(db, write=True) as store:
            result["record_id"] = history.record_report(store, result, run_hash, parsed_tags)
    click.echo(json.dumps(result, indent=2) if as_json else _eval_text(result))


@cli.command()
@click.option("--baseline", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--candidate", type=click.Path(exists=True, dir_okay=False), required=True)
@_scoring_options
@click.option("--gate", is_flag=True, help="Release gate: exit 1 when the candidate regresses.")
@click.option("--max-miss-rise", type=float, default=1.0, show_default=True, help="In points.")
@click.option("--max-mrr-drop", type=float, default=0.0, show_default=True)
@click.option("--max-slice-drop", type=float, default=0.05, show_default=True)
@_fail_on_bad_input
def compare(baseline, candidate, golden, db, metrics, bootstrap, seed, as_json, gate, **options):
    """Compare two runs on the same golden queries, with paired CIs and a release gate.

    \b
    Example:
        goldset compare --golden golden.jsonl --baseline old.trec --candidate new.trec --gate

    With --gate the command exits 1, and says why, when the candidate's miss@10 rises by
    more than --max-miss-rise points, its MRR@10 falls by more than --max-mrr-drop, or
    any slice's MRR@10 falls by more than --max-slice-drop.
    """
    from eval import report as reports
    from eval.readers import read_run

    thresholds = {
        name: options.pop(name) for name in ("max_miss_rise", "max_mrr_drop", "max_slice_drop")
    }
    golden_set, baseline_run, candidate_run = _read_concurrently(
        lambda: _load_golden(golden, db), lambda: read_run(baseline), lambda: read_run(candidate)
    )
    result = reports.compare_runs(
        golden_set,
        baseline_run,
        candidate_run,
        _metrics(metrics),
        bootstrap=bootstrap,
        seed=seed,
        thresholds=thresholds,
        **_scoring(options),
    )
    click.echo(json.dumps(result, indent=2) if as_json else _compare_text(result, gate))
    if gate and not result["gate"]["passed"]:
        sys.exit(1)


def _eval_text(result: dict) -> str:
    counts = result["queries"]
    lines = [
        f"run {result['run']} on golden set {result['golden_version']}",
        "queries: "
        + ", ".join(f"{count} {name.replace('_', ' ')}" for name, count in counts.items()),
        "",
        _table({"all": result["metrics"]}, lambda entry: _figure(entry, _with_ci(entry))),
    ]
    if result["slices"]:
        per_slice = {name: entry["metrics"] for name, entry in result["slices"].items()}
        lines += [
            "",
            "per slice:",
            _table(per_slice, lambda entry: _figure(entry, _fixed(entry["mean"]))),
        ]
    if result["worst"]:
        lines += ["", "worst queries (misses first):", _worst_table(result["worst"])]
    abstention = result["abstention"]
    if abstention["unanswerable_queries"]:
        lines += [
            "",
            f"unanswerable: {abstention['unanswerable_queries']} queries, correct abstention "
            f"{_percent(abstention['correct_abstention_rate'])}; wrong abstention on answerable "
            f"{_percent(abstention['wrong_abstention_rate'])}",
        ]
    lines += ["", *result["notes"]] if result["notes"] else []
    return "\n".join(lines)


def _worst_table(worst: list[dict]) -> str:
    cells = [
        {
            "query": entry["query"][:40],
            "slice": entry["slice"],
            "first_relevant_rank": _rank(entry["first_relevant_rank"]),
            **{
                spec: _fixed(entry[spec])
                for spec in ("mrr@10", "hit@1", "miss@10")
                if spec in entry
            },
        }
        for entry in worst
    ]
    shown = [name for name in cells[0] if name not in ("query", "slice")]
    text = [name for name in ("query", "slice") if any(row[name] for row in cells)]
    rows = {entry["query_id"]: row for entry, row in zip(worst, cells, strict=True)}
    return _text_table(rows, [*text, *shown], index_name="query_id")


def _compare_text(result: dict, gate: bool) -> str:
    lines = [
        f"{result['candidate']} vs {result['baseline']} on golden set {result['golden_version']}"
    ]
    rows = {spec: _compared_row(entry) for spec, entry in result["metrics"].items()}
    lines.append(_text_table(rows, list(next(iter(rows.values())))))
    for name, entry in result["slices"].items():
        deltas = ", ".join(
            f"{spec} {m['reason'] if m.get('reason') else _signed(m['delta'])}"
            for spec, m in entry["metrics"].items()
        )
        lines.append(f"  slice {name} ({entry['queries']} queries): {deltas}")
    lines += _changed_text(result["changed_queries"])
    verdict = result["gate"]
    if gate:
        lines.append("gate: PASSED" if verdict["passed"] else "gate: FAILED")
        lines += [f"  - {reason}" for reason in verdict["reasons"]]
    lines += [f"warning: {warning}" for warning in verdict["warnings"]]
    lines += ["", *result["notes"]] if result["notes"] else []
    return "\n".join(lines)


def _compared_row(entry: dict) -> dict[str, str]:
    """One metric's paired figures as printed; nothing beside a figure that is not measured."""
    ci = entry["ci95"]
    return {
        "baseline": _figure(entry, _fixed(entry["baseline"])),
        "candidate": _figure(entry, _fixed(entry["candidate"])),
        "delta": "" if entry.get("reason") else _signed(entry["delta"]),
        "ci95": f"[{_fixed(ci[0])}, {_fixed(ci[1])}]" if ci else "",
        "p_value": "" if entry["p_value"] is None else _fixed(entry["p_value"]),
        "p_randomization": ""
        if entry["p_randomization"] is None
        else _fixed(entry["p_randomization"]),
    }


CHANGED_SHOWN = 10  # queries listed per kind of change in the text output
CHANGED_TITLES = {
    "new_misses": "new misses (a relevant doc in the top 10 before, none now)",
    "new_hits": "new hits (none in the top 10 before, one now)",
    "worse": "worse (first relevant doc lower)",
    "better": "better (first relevant doc higher)",
}


def _changed_text(changed: dict[str, list[dict]]) -> list[str]:
    """A short section per kind of changed query, largest change first, capped with a count."""
    lines = []
    for name, title in CHANGED_TITLES.items():
        items = changed[name]
        if not items:
            continue
        lines += ["", f"{title}: {len(items)}"]
        for item in items[:CHANGED_SHOWN]:
            where = f" ({item['slice']})" if item["slice"] else ""
            lines.append(
                f"  {item['query_id']}{where}: rank {_rank(item['baseline_rank'])} → "
                f"{_rank(item['candidate_rank'])}"
            )
        if len(items) > CHANGED_SHOWN:
            lines.append(f"  … and {len(items) - CHANGED_SHOWN} more (--json lists them all)")
    return [*lines, ""] if lines else lines


def _rank(rank: int | None) -> str:
    return "none" if rank is None else str(rank)


def _figure(entry: dict, text: str) -> str:
    """A figure as printed: the reason when it is not measured, marked when it is a bound,
    with its count of queries when over fewer than all."""
    if entry.get("reason"):
        return entry["reason"]
    if entry.get("bound") == "lower":
        text += " (lower bound)"
    if "queries" in entry:
        text += f" ({entry['queries']} {'query' if entry['queries'] == 1 else 'queries'})"
    return text


def _table(columns: dict[str, dict], cell) -> str:
    """One row per metric, one column per group (all, or each slice)."""
    specs = list(next(iter(columns.values())))
    rows = {
        spec: {name: cell(metrics[spec]) for name, metrics in columns.items()} for spec in specs
    }
    return _text_table(rows, list(columns))


def _text_table(rows: dict[str, dict[str, str]], columns: list[str], index_name: str = "") -> str:
    """Cells of text laid out as pandas' ``DataFrame.to_string`` lays out text (labels on the
    left; each column right-aligned, its cells after one space of their own and one between
    columns), without loading pandas for a report."""
    label_width = max(len(index_name), *map(len, rows))
    widths = [max(len(name), 1 + max(len(row[name]) for row in rows.values())) for name in columns]

    def line(label: str, cells: list[str]) -> str:
        aligned = (f" {cell:>{width}}" for cell, width in zip(cells, widths, strict=True))
        return f"{label:<{label_width}}" + "".join(aligned)

    lines = [line("", columns)]
    if index_name:
        lines.append(line(index_name, [""] * len(columns)))
    lines += [line(label, [row[name] for name in columns]) for label, row in rows.items()]
    return "\n".join(lines)


def _with_ci(entry: dict) -> str:
    ci = entry["ci95"]
    text = _fixed(entry["mean"])
    return f"{text}  [{_fixed(ci[0])}, {_fixed(ci[1])}]" if ci else text


def _fixed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.4f}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


# --- cost ----------------------------------------------------------------------------------


@cli.command("cost")
@click.option("--queries", type=click.IntRange(min=0), help="Queries to label.")
@click.option("--docs-per-query", type=click.FloatRange(min=0), help="Docs judged per query.")
@click.option("--seconds", type=click.FloatRange(min=0), help="Seconds per judgement.")
@click.option("--rate", type=click.FloatRange(min=0), help="Hourly rate, in dollars.")
@click.option(
    "--annotators",
    type=click.FloatRange(min=1),
    default=1,
    show_default=True,
    help="Annotators per query (1.2 = a fifth of the queries labelled twice).",
)
@click.option(
    "--db",
    type=click.Path(exists=True, dir_okay=False),
    help="Measure a project's cost instead: spent, remaining and total.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def cost_command(queries, docs_per_query, seconds, rate, annotators, db, as_json):
    """Hours and dollars to label a golden set: planned, or measured in a project.

    \b
    Example:
        goldset cost --queries 400 --docs-per-query 4 --seconds 20 --rate 60
        400 queries × 4 docs × 20 s × 1 annotator = 32,000 s = 8.89 h = $533.33 at $60/h
        goldset cost --db project.db --rate 60 --json

    The line rounds to cents and hundredths of an hour; --json prints the unrounded figures,
    {"seconds": ..., "hours": ..., "dollars": ...}, for scripts to round as they need.

    With --db the figures are measured: the median active seconds per judgement, the mean
    judged depth of a completed query, the queries not done yet and the measured overlap
    (annotators per query) give the hours and dollars spent, remaining and in total, as on
    the app's cost page (--rate defaults to $60/h there). The JSON has spent, remaining and
    total (each with seconds, hours and dollars), seconds_per_judgement,
    judgements_per_query, rate, queries_remaining, annotators_per_query and per annotator.
    """
    from eval.cost import labelling_cost

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
    from labeler import live

    planned = {"--queries": queries, "--docs-per-query": docs_per_query, "--seconds": seconds}
    given = [name for name, value in planned.items() if value is not None]
    if given:
        raise click.UsageError(f"--db measures the cost: leave out {', '.join(given)}")
    with _open_store(db) as store:
        summary = live.cost_summary(store, live.DEFAULT_RATE if rate is None else rate)
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
        return
    figures = summary.cost
    if not figures.judgements_per_query >= 0:  # NaN: no query completed yet
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


# --- the project database: import, pool, export, status ------------------------------------


def _count_option(flag: str, minimum: int, default: int, text: str) -> Callable:
    """An integer option of at least ``minimum``, its default shown in ``--help``."""
    return click.option(
        flag, type=click.IntRange(min=minimum), default=default, show_default=True, help=text
    )


def _db_option(command):
    """``--db PATH``, defaulting to the default project (``labeler.store.DEFAULT_DB``)."""
    return click.option(
        "--db",
        type=click.Path(dir_okay=False),
        help="Project database [default: the default project, created from the demo set; "
        "see goldset app --help].",
    )(command)


def _open_store(db: str | None, *, write: bool = False, create: bool = False):
    """The one way every command opens its project (``--db``, or the default demo project).

    A read command gets a read-only connection; only the commands that create a project
    (``create=True``: import, pool) create one at ``--db``, while the default demo project is
    created by whichever command uses it first; a path that is not an intact goldset project
    is refused with one line, exit 2 (an input error), before anything is written.
    """
    from labeler.store import DEFAULT_DB, ProjectError, Store

    try:
        if db is None or Path(db).resolve() == DEFAULT_DB:
            # The default project is the demo set, made on first use by whichever command
            # comes first (`goldset status` on a fresh install included).
            if create or not DEFAULT_DB.exists():
                Store.open_default().close()
            return Store.open_project(DEFAULT_DB, write=write)
        return Store.open_project(db, write=write, create=create)
    except ProjectError as error:
        failure = click.ClickException(str(error))
        failure.exit_code = 2
        raise failure from None


@cli.command("import")
@click.argument("tasks_file", type=click.Path(exists=True, dir_okay=False), required=False)
@click.option(
    "--corpus",
    type=click.Path(exists=True, dir_okay=False),
    help="A BEIR corpus.jsonl (_id, title, text) to search for missed answers.",
)
@_db_option
@_fail_on_bad_input
def import_command(tasks_file, corpus, db):
    """Import queries with their candidates (JSONL or CSV) into the project.

    \b
    Example:
        goldset import tasks.jsonl --db project.db
        goldset import --corpus corpus.jsonl --db project.db

    All-or-nothing: any problem is reported with its file, line and field, and nothing is
    written. Importing the same file again changes nothing. --corpus adds documents that
    are no query's candidate, so that annotators can find (with "/" on the label page) and
    attach the answer a system missed.
    """
    if tasks_file is None and corpus is None:
        raise click.UsageError("give a TASKS_FILE, --corpus FILE, or both")
    with _open_store(db, write=True, create=True) as store:
        if tasks_file is not None:
            counts = store.import_tasks(tasks_file)
            click.echo(
                f"{counts['queries_added']} queries added ({counts['candidates_added']} "
                f"candidates, {counts['documents_added']} new documents), "
                f"{counts['queries_unchanged']} already there"
            )
        if corpus is not None:
            click.echo(f"{store.add_corpus(corpus)} corpus documents added (searchable)")


@cli.command()
@click.option("--mode", type=click.Choice(["first_hit", "full"]), help="How queries are judged.")
@click.option("--depth", type=click.IntRange(min=0), help="Candidates judged per query (0 = all).")
@click.option("--max-grade", type=click.IntRange(min=1), help="Top of the grade scale 0..N.")
@click.option("--binary", is_flag=True, help="Grades 0/1 only (the same as --max-grade 1).")
@click.option("--threshold", type=click.IntRange(min=1), help="Lowest grade that is relevant.")
@click.option("--by", default="cli", show_default=True, help="Who makes the change (logged).")
@click.option("--json", "as_json", is_flag=True, help="Print the protocol as JSON.")
@_db_option
@_fail_on_bad_input
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
    with _open_store(db, write=True, create=True) as store:
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


@cli.command()
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
@click.option("--depth", type=click.IntRange(min=1), default=10, show_default=True)
@_db_option
@_fail_on_bad_input
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
    with _open_store(db, write=True, create=True) as store:
        counts = store.pool(corpus, queries, runs, depth)
    click.echo(
        f"pooled {', '.join(counts['runs'])} at depth {depth}: "
        f"{counts['candidates_added']} new candidates over {counts['queries_touched']} queries "
        f"({counts['queries_added']} queries, {counts['documents_added']} documents added)"
    )
    if counts["run_queries_ignored"]:
        click.echo(f"{counts['run_queries_ignored']} run queries are not in the project: ignored")


@cli.command()
@_db_option
@click.option(
    "--format",
    "export_format",
    type=click.Choice(["jsonl", "qrels"]),
    default="jsonl",
    show_default=True,
)
@click.option("--out", type=click.Path(dir_okay=False, writable=True), required=True)
@_labels_options
@_fail_on_bad_input
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
        from labeler.golden import write_jsonl

        with _open_store(db) as store:
            identity, machine = _machine_labels(store, judge_name)
            records = _with_machine_judgments(
                store.iter_golden_records(), identity, machine, labels
            )
            count = write_jsonl(records, out)
        click.echo(f"wrote {count} queries to {out}")
        return
    with _open_store(db) as store:
        count = store.write_jsonl(out) if export_format == "jsonl" else store.write_qrels(out)
    unit = "queries" if export_format == "jsonl" else "judgements"
    click.echo(f"wrote {count} {unit} to {out}")


# The measured work figures that `goldset status --json` adds, as `goldset cost --db` has them.
STATUS_WORK_FIGURES = (
    "current_labels", "judgements_made", "seconds_per_judgement", "judgements_per_query",
    "queries_remaining",
)  # fmt: skip


@cli.command()
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def status(db, as_json):
    """Show the project: queries done / pending / skipped / unanswerable per slice, and the
    work figures as the app's dashboard and cost planner word them (current labels,
    judgements made, median seconds per judgement, mean judged depth, queries left).

    \b
    Example:
        goldset status --db project.db
    """
    import pandas as pd

    from labeler import live

    with _open_store(db) as store:
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


@cli.command()
@_db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8501, show_default=True)
@click.option(
    "--open/--no-open",
    "open_browser",
    default=None,
    help="Open the app in the browser once it is up [default: when a display exists].",
)
@_fail_on_bad_input
def app(db, host, port, open_browser):
    """Start the labelling app and open it in the browser.

    \b
    Example:
        goldset app --db project.db --port 8501

    Without --db the default project is used (created from the demo set on first use):
    data/goldset.db in a clone of the repository, else goldset/goldset.db in the user's data
    folder (~/.local/share on Linux). The app's settings (theme, toolbar, address) ship with
    the package, so it behaves the same from any directory. With no users in the project the
    app serves one local annotator and listens on loopback only; once users exist
    (goldset user add NAME) everyone logs in.
    """
    from labeler.launch import app_url, has_display, serve

    with _open_store(db, write=True, create=db is None) as store:
        has_users = bool(store.annotators())
        path = store.path
    click.echo(f"goldset: serving {path} on {app_url(host, port)}", err=True)
    serve(db, host, port, has_users, has_display() if open_browser is None else open_browser)


@cli.group()
def user():
    """Manage the people who log in to the app."""


ROLE_CHOICE = click.Choice(ROLES)


def _password_option(command):
    """``--password``, asked for (twice, hidden) when not given."""
    return click.option("--password", help="Asked for (twice, hidden) when not given.")(command)


def _ask_password(password: str | None) -> str:
    if password is None:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    return password


@user.command("add")
@click.argument("name")
@click.option(
    "--role",
    type=ROLE_CHOICE,
    default="annotator",
    show_default=True,
    help="Annotators label; reviewers also adjudicate; admins also manage the project.",
)
@_db_option
@_password_option
@click.option(
    "--no-password",
    is_flag=True,
    help="Signs in through the identity provider only (st.login, see the README).",
)
@_fail_on_bad_input
def user_add(name, role, db, password, no_password):
    """Add a user who logs in with a password (stored as a salted scrypt hash).

    \b
    Example:
        goldset user add ana --db project.db
        goldset user add rita --role reviewer --db project.db
        goldset user add ana@example.com --no-password --db project.db

    Once a project has a user, the app asks everyone to log in.
    """
    from labeler.auth import hash_password, validate_user_name

    validate_user_name(name)
    password_hash = None if no_password else hash_password(_ask_password(password))
    with _open_store(db, write=True) as store:
        store.add_annotator(name, role=role, password_hash=password_hash)
        _warn_without_admin(store)
    click.echo(f"added {role} {name}: the app now asks for a login")


@user.command("list")
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def user_list(db, as_json):
    """List the users: role, sign-in, lock, and their assigned and open queries.

    \b
    Example:
        goldset user list --db project.db
    """
    import pandas as pd

    from labeler.team import user_rows

    with _open_store(db) as store:
        rows = user_rows(store)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif rows:
        click.echo(pd.DataFrame(rows).set_index("name").to_string())
    else:
        click.echo("no users: the app runs as one local annotator")


@user.command("remove")
@click.argument("name")
@_db_option
@_fail_on_bad_input
def user_remove(name, db):
    """Remove a user's account; their labels stay in the project.

    \b
    Example:
        goldset user remove ana --db project.db
    """
    with _open_store(db, write=True) as store:
        store.remove_annotator(name)
        _warn_without_admin(store)
    click.echo(f"removed {name} (their labels are kept; their browser sessions ended)")


@user.command("passwd")
@click.argument("name")
@_db_option
@_password_option
@click.option("--role", type=ROLE_CHOICE, help="Also change the user's role.")
@_fail_on_bad_input
def user_passwd(name, db, password, role):
    """Set a user's password (this also lifts a lock after failed sign-ins), and role if given.

    \b
    Example:
        goldset user passwd ana --db project.db
        goldset user passwd rita --role admin --db project.db
    """
    from labeler.auth import hash_password

    password_hash = hash_password(_ask_password(password))
    with _open_store(db, write=True) as store:
        store.update_annotator(name, role=role, password_hash=password_hash)
        _warn_without_admin(store)
    click.echo(
        f"new password set for {name}"
        + (f", now {role}" if role else "")
        + " (their browser sessions ended)"
    )


def _warn_without_admin(store) -> None:
    from labeler.team import admin_warning

    warning = admin_warning(store)
    if warning:
        click.echo(warning, err=True)


# --- team labelling: assignment, agreement, adjudication ----------------------------------------


@cli.command()
@click.option(
    "--to",
    "annotators",
    multiple=True,
    help="A user to deal queries to (repeatable) [default: every user with the annotator role].",
)
@click.option(
    "--slice", "slices", multiple=True, help="Deal only this slice's queries (repeatable)."
)
@click.option(
    "--overlap",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Share of the queries judged by several annotators, blind to each other.",
)
@_count_option("--judges", 2, 2, "Annotators per overlapping query.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the overlap sample.")
@_db_option
@_fail_on_bad_input
def assign(annotators, slices, overlap, judges, seed, db):
    """Deal the queries nobody has yet to annotators, with a blind overlap.

    \b
    Example:
        goldset assign --to ana --to bob --to cy --overlap 0.1 --db project.db
        goldset assign --to dan --slice tail --overlap 0 --db project.db

    Queries not done and not yet assigned are dealt evenly; a share --overlap of them
    (spread over the slices) goes to --judges annotators each, for agreement figures.
    Nobody gets the same query twice, and each annotator sees only their own labels.
    """
    from labeler.team import deal

    with _open_store(db, write=True) as store:
        names = list(annotators) or [
            row["name"] for row in store.annotators() if row["role"] == "annotator"
        ]
        result = deal(
            store,
            names,
            overlap=overlap,
            judges=judges,
            slices=list(slices) or None,
            seed=seed,
        )
    shares = ", ".join(f"{name} {len(ids)}" for name, ids in result.plan.items())
    click.echo(
        f"dealt {result.queries} queries ({len(result.overlapping)} to several annotators, "
        f"blind): {shares}"
    )


@cli.command("agreement")
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_count_option("--bootstrap", 0, 1000, "Bootstrap resamples (of queries) for the 95% CIs.")
@click.option("--seed", type=int, default=0, show_default=True, help="Resampling seed.")
def agreement_command(db, as_json, bootstrap, seed):
    """Agreement between annotators on the doubly judged queries.

    \b
    Example:
        goldset agreement --db project.db
        goldset agreement --db project.db --json

    Cohen's kappa (relevant or not), Krippendorff's alpha (ordinal, grades), and the
    share of agreement on the first relevant rank and on unanswerable vs miss: overall,
    per annotator pair and per slice, each with its number of items and queries and a
    bootstrap 95% CI over queries. n/a: undefined (no items, or one category only).
    """
    from labeler.team import agreement_report

    with _open_store(db) as store:
        report = agreement_report(store, n_resamples=bootstrap, seed=seed)
    click.echo(json.dumps(report, indent=2) if as_json else _agreement_text(report))


def _agreement_text(report: dict) -> str:
    import pandas as pd

    from labeler.team import figure_table

    if not report["queries"]:
        return "no doubly judged queries yet: deal some with goldset assign --overlap"
    table = pd.DataFrame(figure_table(report)).set_index("group")
    return f"{report['queries']} doubly judged queries\n" + table.to_string()


@cli.command()
@click.argument("query_id", required=False)
@click.option("--accept", "annotator", help="Decide for this annotator's label as it stands.")
@click.option("--reviewer", help="Who decides (a reviewer or admin).")
@click.option("--note", default="", help="Why, for the record.")
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print the queue as JSON.")
@_fail_on_bad_input
def adjudicate(query_id, annotator, reviewer, note, db, as_json):
    """Show the adjudication queue, or decide a disagreement.

    \b
    Example:
        goldset adjudicate --db project.db
        goldset adjudicate q17 --accept ana --reviewer rita --db project.db

    Without QUERY_ID: the doubly judged queries whose annotators disagree, most
    consequential first (by the effect on MRR@10). With it: the reviewer's decision, one
    annotator's label, becomes the golden label; the export keeps every label beside it.
    """
    from labeler.team import adjudication_queue, adopt

    with _open_store(db, write=query_id is not None) as store:
        if query_id is None:
            queue = adjudication_queue(store)
            click.echo(json.dumps(queue, indent=2) if as_json else _queue_text(queue))
            return
        if not annotator or not reviewer:
            raise click.UsageError("deciding a query needs --accept ANNOTATOR and --reviewer NAME")
        adopt(store, query_id, reviewer, annotator, note)
    click.echo(f"{query_id}: {reviewer} decided for {annotator}'s label")


def _queue_text(queue: list[dict]) -> str:
    if not queue:
        return "no disagreements waiting"
    lines = [f"{len(queue)} disagreements, most consequential first:"]
    for item in queue:
        ranks = ", ".join(
            f"{name} {label['first_relevant_rank'] or ('none' if label['answerable'] else 'U')}"
            for name, label in item["labels"].items()
        )
        lines.append(
            f"  {item['query_id']}  RR@10 gap {item['rr_gap']:.3f}  {', '.join(item['kinds'])}"
            f"  ({ranks})"
        )
    return "\n".join(lines)


# --- machine judges -----------------------------------------------------------------------------


@cli.command()
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
    help="Environment variable holding the API key (unset: no key, for a local server).",
)
@click.option(
    "--prompt",
    "prompt_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Prompt template [default: labeler/judge_prompt.md].",
)
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds per request.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=4,
    show_default=True,
    help="Retries on 429/5xx/timeouts, with exponential backoff.",
)
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
@click.option("--depth", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--limit", type=click.IntRange(min=0), help="Judge at most N pairs this time.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_fail_on_bad_input
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
    labelled are skipped. Every call's model, prompt hash, tokens and seconds are kept.
    """
    from labeler import judges
    from labeler.pooling import read_pooled_run

    if run_name and holes_run:
        raise click.UsageError("give --run NAME or --holes RUN_FILE, not both")
    identity = judges.judge_identity(name or model)
    endpoint = judges.Endpoint.from_env(
        base_url,
        model,
        api_key_env,
        timeout=timeout,
        retries=retries,
        response_format=response_format,
    )
    pairs = None
    if holes_run:
        rankings = read_pooled_run(holes_run, depth).rankings
        pairs = [(query_id, doc_id) for query_id, docs in rankings.items() for doc_id, _ in docs]
    with _open_store(db, write=True) as store:
        prompt = judges.Prompt.from_template(prompt_path, store.settings()["max_grade"])
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


def _judging_text(summary) -> str:
    failed = ", ".join(f"{outcome} {count}" for outcome, count in sorted(summary.failed.items()))
    lines = [
        f"{summary.judge}: {summary.labelled} of {summary.pairs} pairs labelled"
        + (f"; failed: {failed}" if failed else ""),
        f"{summary.calls} calls, {summary.prompt_tokens:,} prompt + "
        f"{summary.completion_tokens:,} completion tokens, {summary.seconds:.1f} s",
    ]
    if summary.stopped:
        lines.append(f"stopped ({summary.stopped}): run the same command again to resume")
    return "\n".join(lines)


def _labelled(golden_set: Golden, db: str | None, labels: str, judge_name: str | None) -> Golden:
    """The golden set under ``labels`` (machine labels come from the project ``db``)."""
    if labels == "human":
        return golden_set
    if not db:
        raise click.UsageError("--labels machine|both reads a machine judge's labels: give --db")
    from eval.calibration import with_labels

    with _open_store(db) as store:
        _, machine = _machine_labels(store, judge_name)
    return with_labels(golden_set, machine, labels)


def _judged_by(human: Golden, both: Golden, run: Run, scoring: dict) -> dict:
    """judged@10 of the run by humans, and the share of its top 10 only the machine labelled."""
    from eval.metrics import evaluate

    options = {name: scoring[name] for name in ("rel_threshold", "depth", "keep_order")}
    by_human, by_either = (
        evaluate(golden_set, run, ["judged@10"], **options)["judged@10"].mean()
        for golden_set in (human, both)
    )
    return {"human": by_human, "machine": by_either - by_human}


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


def _machine_labels(store, judge_name: str | None) -> tuple[str, pd.DataFrame]:
    """The judge's identity and labels; with no name, the project's only machine judge."""
    from labeler.judges import judge_identity

    if judge_name is None:
        known = [row["judge"] for row in store.machine_judges()]
        if len(known) != 1:
            raise click.UsageError(
                f"name the judge with --judge (the project has {', '.join(known) or 'none'})"
            )
        identity = known[0]
    else:
        identity = judge_identity(judge_name)
    labels = store.machine_judgments_frame(identity)
    if labels.empty:
        raise click.UsageError(f"{identity} has labelled nothing in this project")
    return identity, labels


@cli.command()
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
    "--send-disagreements-to",
    "second_annotator",
    help="Assign the queries where the machine and the first human disagree to this "
    "annotator (a second opinion).",
)
@click.option(
    "--price-in",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Dollars per million prompt tokens (0: a local server).",
)
@click.option(
    "--price-out",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Dollars per million completion tokens.",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Annotators' hourly rate, in dollars: prices the human hours saved.",
)
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_fail_on_bad_input
def calibrate(
    db,
    judge_name,
    runs,
    baseline,
    candidate,
    min_kappa,
    max_mrr_delta,
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
        goldset calibrate --db project.db --send-disagreements-to rita

    Per slice: Cohen's kappa on relevance (bootstrap CI over queries), the machine's
    true-positive and true-negative rates (Wilson 95% intervals), the confusion matrix;
    each run's MRR@10, hit@1 and miss@10 under machine vs human labels (paired bootstrap
    CI), whether the release gate decides the same, and a verdict: usable for
    hole-filling where kappa >= --min-kappa and every ΔMRR@10 CI is within
    ±--max-mrr-delta. --baseline and --candidate are compared too. The cost: the judge's
    tokens at --price-in/--price-out and its call time, beside the human hours its labels
    of unlabelled pairs (filled holes) saved at the median human seconds per judgement.
    """
    from eval.calibration import calibration_report
    from eval.readers import golden_from_records, read_run

    if bool(baseline) != bool(candidate):
        raise click.UsageError("give both --baseline and --candidate, or neither")
    with _open_store(db, write=bool(second_annotator)) as store:
        identity, machine = _machine_labels(store, judge_name)
        golden_set = golden_from_records(store.golden_records(), source=db)
        settings = store.settings()
        cost = _machine_cost(store, identity, golden_set, machine, price_in, price_out, rate)
        if second_annotator:
            from eval.calibration import disagreeing_queries

            queries = disagreeing_queries(
                store.first_human_frame(), machine, settings["rel_threshold"]
            )
            sent = store.assign(second_annotator, queries)
    paths = list(dict.fromkeys([*runs, *filter(None, (baseline, candidate))]))
    readers = [lambda path=path: read_run(path) for path in paths]
    loaded = dict(zip(paths, _read_concurrently(*readers) if readers else [], strict=True))
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
    if second_annotator:
        report["sent_to_second_annotator"] = {"annotator": second_annotator, "queries": sent}
    click.echo(json.dumps(report, indent=2) if as_json else _calibration_text(report))


def _machine_cost(store, identity, golden_set, machine, price_in, price_out, rate) -> dict:
    """The judge's cost so far, and the human time its filled holes saved (see calibrate)."""
    from eval.calibration import with_labels
    from eval.cost import machine_judging_cost

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
        human_seconds_per_judgement=float(human_seconds.median()) if len(human_seconds) else 0.0,
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
                    "human": _fixed(figure["human"]),
                    "machine": _fixed(figure["machine"]),
                    "Δ (95% CI)": _interval(figure["delta"], figure["ci95"], signed=True),
                    "machine judged@10": _fixed(entry["machine_judged@10"]),
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
    lines.append(
        f"cost: {cost['pairs']} machine labels, {cost['prompt_tokens']:,} + "
        f"{cost['completion_tokens']:,} tokens = ${cost['dollars']:.4f}, "
        f"{cost['wall_seconds']:.0f} s of calls; {cost['holes_filled']} holes filled "
        f"= {saved['hours'] or 0:.2f} human hours (${saved['dollars'] or 0:.2f}) saved"
    )
    if "sent_to_second_annotator" in report:
        sent = report["sent_to_second_annotator"]
        lines.append(f"{sent['queries']} disagreeing queries sent to {sent['annotator']}")
    return "\n".join(lines)


def _interval(value: float | None, ci: list | None, signed: bool = False) -> str:
    shown = (_signed if signed else _fixed)(value)
    if not ci or None in ci:
        return shown
    return f"{shown} [{ci[0]:.3f}, {ci[1]:.3f}]"


if __name__ == "__main__":  # python -m labeler.cli, as the benchmarks and -X importtime run it
    cli()
