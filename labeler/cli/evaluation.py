"""``goldset eval`` and ``goldset compare``: a run's report, and two runs compared with paired
CIs and a release gate, printed as text or JSON (the gate also as JUnit XML or Markdown).

The path of a CI gate: it loads eval's readers and report, never pandas, Streamlit or the
store unless ``--db`` asks for a project (tests/test_import_set.py).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from goldset.labeler.cli import gate_output
from goldset.labeler.cli.common import (
    FiniteFloat,
    count_option,
    fail_on_bad_input,
    json_option,
    labels_options,
    machine_labels,
    open_store,
    seed_option,
)
from goldset.labeler.cli.exactness import exactness_text, orders_text
from goldset.labeler.cli.ppi_output import ppi_figures, ppi_text
from goldset.labeler.cli.text import fixed, percent, signed, text_table

if TYPE_CHECKING:
    from goldset.eval.readers import Golden, Run


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
            "--ties",
            type=click.Choice(["trec_eval10", "trec_eval9"]),
            default="trec_eval10",
            show_default=True,
            help="Compare scores in double precision (trec_eval 10.0) or in single precision "
            "(trec_eval 9, pytrec_eval).",
        ),
        click.option(
            "--abstain-below",
            type=FiniteFloat(),
            help="A query whose best score is below this counts as abstained (no results).",
        ),
        count_option(
            "--bootstrap",
            0,
            1000,
            "Resamples for the gate's CIs and the randomization test; 0: no CIs at all (the "
            "95% CIs of the figures are score intervals, not resampled).",
        ),
        seed_option("Resampling seed."),
        json_option,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _load_golden(golden: str | None, db: str | None) -> Golden:
    """The golden set from a file or the project."""
    from goldset.eval.readers import golden_from_records, read_golden

    if bool(golden) == bool(db):
        raise click.UsageError("give exactly one of --golden FILE or --db PATH")
    if golden:
        golden_set = read_golden(golden)
    else:
        with open_store(db) as store:
            golden_set = golden_from_records(store.golden_records(), source=db)
    return golden_set


def _golden_sets(
    golden: str | None, db: str | None, labels: str, judge_name: str | None
) -> tuple[Golden, Golden]:
    """The humans' golden set, and the one scored under ``labels`` (see :func:`_labelled`),
    the latter prepared for ranking (:func:`goldset.eval.ranking.prepare`): on the thread that read
    it, while the runs are still being read: its time comes off the wall time (measured:
    bench/README.md, "Figures behind design choices")."""
    from goldset.eval.ranking import prepare

    human_set = _load_golden(golden, db)
    return human_set, prepare(_labelled(human_set, db, labels, judge_name))


def _worth_threads(db: str | None, *paths: str | None) -> bool:
    """Whether the inputs are read on threads at once: a project (SQLite releases the GIL)
    or a file large enough for Arrow's readers."""
    from goldset.eval.readers import worth_reading_together

    return db is not None or worth_reading_together(*filter(None, paths))


def _load_run(path: str | None, db: str | None) -> Run:
    """A run file, or (with --db and no file) the candidate lists stored in the project."""
    from goldset.eval.readers import read_run

    if path:
        return read_run(path)
    if not db:
        raise click.UsageError("give a run file (or --db to evaluate the stored candidates)")
    from goldset.labeler.live.project import project_run

    with open_store(db) as store:
        return project_run(store, depth=None)


def _scoring(options: dict) -> dict:
    """The keyword arguments of ``build_report`` taken from the command's options."""
    names = ("rel_threshold", "depth", "keep_order", "gain", "abstain_below")
    return {
        **{name: options[name] for name in names},
        "single_precision": options["ties"] == "trec_eval9",
    }


def _metrics(metrics: tuple[str, ...]) -> list[str]:
    from goldset.eval.metrics import DEFAULT_METRICS, parse_metric

    chosen = list(metrics) or list(DEFAULT_METRICS)
    for spec in chosen:
        try:
            parse_metric(spec)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--metric") from None
    return chosen


@click.command("eval")
@click.option("--run", "run_path", type=click.Path(exists=True, dir_okay=False), help="Run file.")
@_scoring_options
@click.option("--per-query", type=click.Path(dir_okay=False), help="Write per-query JSONL here.")
@count_option("--worst", 0, 10)
@click.option("--record", is_flag=True, help="Keep the results in the project's run history.")
@click.option("--tag", "tags", multiple=True, help="KEY=VALUE kept with --record (repeatable).")
@labels_options
@fail_on_bad_input
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
    --labels ppi (with --db and a labelled random sample, `goldset sample`) adds the judge's
    figures on every query corrected by the humans' on the sample, beside the humans' own.
    """
    from goldset.eval import report as reports
    from goldset.eval.threads import concurrently

    if record and not db:
        raise click.UsageError("--record keeps the results in a project: give --db PATH")
    run, (human_set, golden_set) = concurrently(
        lambda: _load_run(run_path, db),
        lambda: _golden_sets(golden, db, labels, judge_name),
        threads=_worth_threads(db, run_path, golden),
    )
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
    if labels == "ppi":
        from goldset.labeler.live.ppi import ppi_report

        result["ppi"] = ppi_figures(
            db,
            judge_name,
            lambda store, judge: ppi_report(
                store, run, judge, _metrics(metrics), **_scoring(options)
            ),
        )
    if per_query:
        with open(per_query, "w", encoding="utf-8") as handle:
            for query_id, row in zip(values.query_ids, values.values.tolist(), strict=True):
                # A figure not measured on a query (recall, nDCG on first-hit labels) is NaN: null.
                figures = {
                    spec: None if v != v else v for spec, v in zip(values.metrics, row, strict=True)
                }
                handle.write(json.dumps({"query_id": query_id, **figures}) + "\n")
    if record:
        from goldset.labeler.live import history

        try:
            parsed_tags = history.parse_tags(tags)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--tag") from None
        run_hash = history.run_sha256(run_path or run.results)
        with open_store(db, write=True) as store:
            result["record_id"] = history.record_report(store, result, run_hash, parsed_tags)
    click.echo(json.dumps(result, indent=2) if as_json else _eval_text(result))


GATE_EXIT = {"pass": 0, "fail": 1, "inconclusive": 3}  # 2 is a usage or input error


@click.command()
@click.option("--baseline", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--candidate", type=click.Path(exists=True, dir_okay=False), required=True)
@_scoring_options
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "junit", "markdown"]),
    help="Output: text (default), json (as --json), junit (XML) or markdown.",
)
@click.option("--gate", is_flag=True, help="Release gate: exit 0 pass, 1 fail, 3 inconclusive.")
@click.option(
    "--max-miss-rise", type=FiniteFloat(min=0), default=1.0, show_default=True, help="In points."
)
@click.option("--max-mrr-drop", type=FiniteFloat(min=0), default=0.0, show_default=True)
@click.option("--max-slice-drop", type=FiniteFloat(min=0), default=0.05, show_default=True)
@click.option(
    "--inconclusive",
    type=click.Choice(["exit-3", "pass", "fail"]),
    default="exit-3",
    show_default=True,
    help="With --gate, an inconclusive verdict exits 3, or as a pass (0) or a fail (1).",
)
@labels_options
@fail_on_bad_input
def compare(
    baseline,
    candidate,
    golden,
    db,
    metrics,
    bootstrap,
    seed,
    as_json,
    output_format,
    gate,
    inconclusive,
    labels,
    judge_name,
    **options,
):
    """Compare two runs on the same golden queries, with paired CIs and a release gate.

    \b
    Example:
        goldset compare --golden golden.jsonl --baseline old.trec --candidate new.trec --gate
        goldset compare --golden golden.jsonl --baseline old.trec --candidate new.trec \\
            --gate --format markdown >> "$GITHUB_STEP_SUMMARY"
        goldset compare --db project.db --baseline old.trec --candidate new.trec --labels both

    The gate judges three rules on a 95% CI of each paired delta (docs/gate.md): miss@10 may not
    rise by more than --max-miss-rise points, MRR@10 may not fall by more than
    --max-mrr-drop, no slice's MRR@10 by more than --max-slice-drop. A rule is violated when
    its whole CI is beyond the allowance, kept when it is wholly within, undecided otherwise
    (with about how many more queries would decide it). With --gate the command exits 1 when
    any rule is violated (fail), 0 when all are kept (pass), else 3 (inconclusive; see
    --inconclusive). --bootstrap 0 judges the means alone. --labels machine|both (with
    --db) compares under a machine judge's labels instead of, or filling the holes beside,
    the humans', as eval does; both reports each run's judged@10 by humans and by the machine.
    --labels ppi adds the PPI deltas (as eval's) and judges the gate on their CIs.
    """
    from goldset.eval.compare import compare_runs
    from goldset.eval.readers import read_run
    from goldset.eval.threads import concurrently

    output_format = _output_format(output_format, as_json)
    thresholds = {
        name: options.pop(name) for name in ("max_miss_rise", "max_mrr_drop", "max_slice_drop")
    }
    (human_set, golden_set), baseline_run, candidate_run = concurrently(
        lambda: _golden_sets(golden, db, labels, judge_name),
        lambda: read_run(baseline),
        lambda: read_run(candidate),
        threads=_worth_threads(db, baseline, candidate, golden),
    )
    result = compare_runs(
        golden_set,
        baseline_run,
        candidate_run,
        _metrics(metrics),
        bootstrap=bootstrap,
        seed=seed,
        thresholds=thresholds,
        **_scoring(options),
    )
    if labels == "both":
        result["judged@10"] = {
            name: _judged_by(human_set, golden_set, run, _scoring(options))
            for name, run in (("baseline", baseline_run), ("candidate", candidate_run))
        }
    if labels == "ppi":
        from goldset.labeler.live.ppi import ppi_comparison

        def deltas_and_gate(store, judge) -> dict:
            runs = (store, baseline_run, candidate_run, judge)
            compared = ppi_comparison(*runs, thresholds, **_scoring(options))
            # The gate judged on the PPI deltas' CIs replaces the one on the humans' sample.
            result["gate"] = compared.gate.as_json()
            return compared.deltas

        result["ppi"] = ppi_figures(db, judge_name, deltas_and_gate)
    click.echo(_compare_output(result, output_format, gate, inconclusive), nl=False)
    if gate:
        sys.exit(_gate_exit(result["gate"]["verdict"], inconclusive))


def _output_format(output_format: str | None, as_json: bool) -> str:
    """--format, with --json its alias."""
    if as_json and output_format not in (None, "json"):
        raise click.UsageError(f"--json and --format {output_format} ask for two formats")
    return "json" if as_json else output_format or "text"


def _compare_output(result: dict, output_format: str, gate: bool, inconclusive: str) -> str:
    """The comparison as printed in ``output_format``, ending with a newline."""
    if output_format == "json":
        return json.dumps(result, indent=2) + "\n"
    if output_format == "junit":
        return gate_output.junit(result, undecided_fails=inconclusive == "fail")
    if output_format == "markdown":
        return gate_output.markdown(result)
    return _compare_text(result, gate) + "\n"


def _gate_exit(verdict: str, inconclusive: str) -> int:
    """The exit status of a gate's verdict; --inconclusive pass|fail maps inconclusive."""
    if verdict == "inconclusive" and inconclusive != "exit-3":
        verdict = inconclusive
    return GATE_EXIT[verdict]


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
            _table(per_slice, lambda entry: _figure(entry, fixed(entry["mean"]))),
        ]
    if result["worst"]:
        lines += ["", "worst queries (misses first):", _worst_table(result["worst"])]
    abstention = result["abstention"]
    if abstention["unanswerable_queries"]:
        lines += [
            "",
            f"unanswerable: {abstention['unanswerable_queries']} queries, correct abstention "
            f"{percent(abstention['correct_abstention_rate'])}; wrong abstention on answerable "
            f"{percent(abstention['wrong_abstention_rate'])}",
        ]
    if "judged@10" in result:
        lines += ["", _judged_text("judged@10", result["judged@10"])]
    lines += ppi_text(result["ppi"]) if "ppi" in result else []
    lines += exactness_text(result.get("exactness")) + orders_text(result.get("orders"))
    lines += ["", *result["notes"]] if result["notes"] else []
    return "\n".join(lines)


def _worst_table(worst: list[dict]) -> str:
    cells = [
        {
            "query": entry["query"][:40],
            "slice": entry["slice"],
            "first_relevant_rank": gate_output.rank_text(entry["first_relevant_rank"]),
            **{
                spec: fixed(entry[spec]) for spec in ("mrr@10", "hit@1", "miss@10") if spec in entry
            },
        }
        for entry in worst
    ]
    shown = [name for name in cells[0] if name not in ("query", "slice")]
    text = [name for name in ("query", "slice") if any(row[name] for row in cells)]
    rows = {entry["query_id"]: row for entry, row in zip(worst, cells, strict=True)}
    return text_table(rows, [*text, *shown], index_name="query_id")


def _compare_text(result: dict, gate: bool) -> str:
    lines = [
        f"{result['candidate']} vs {result['baseline']} on golden set {result['golden_version']}"
    ]
    rows = {spec: _compared_row(entry) for spec, entry in result["metrics"].items()}
    lines.append(text_table(rows, list(next(iter(rows.values())))))
    for name, entry in result["slices"].items():
        deltas = ", ".join(
            f"{spec} {m['reason'] if m.get('reason') else signed(m['delta'])}"
            for spec, m in entry["metrics"].items()
        )
        lines.append(f"  slice {name} ({entry['queries']} queries): {deltas}")
    changed = gate_output.changed_lines(result["changed_queries"])
    lines += [*changed, ""] if changed else []
    verdict = result["gate"]
    if gate:
        lines.append(f"gate: {GATE_TITLES[verdict['verdict']]}")
        lines += [f"  - {reason}" for reason in verdict["reasons"]]
    lines += [f"warning: {warning}" for warning in verdict["warnings"]]
    for name, shares in result.get("judged@10", {}).items():
        lines.append(_judged_text(f"judged@10 of the {name}", shares))
    lines += ppi_text(result["ppi"], paired=True) if "ppi" in result else []
    lines += ["", *result["notes"]] if result["notes"] else []
    return "\n".join(lines)


def _compared_row(entry: dict) -> dict[str, str]:
    """One metric's paired figures as printed; nothing beside a figure that is not measured."""
    ci = entry["ci95"]
    return {
        "baseline": _figure(entry, fixed(entry["baseline"])),
        "candidate": _figure(entry, fixed(entry["candidate"])),
        "delta": "" if entry.get("reason") else signed(entry["delta"]),
        "ci95": f"[{fixed(ci[0])}, {fixed(ci[1])}]" if ci else "",
        "p_value": gate_output.p_text(entry["p_value"], entry.get("p_value_floor")),
        "p_randomization": gate_output.p_text(
            entry["p_randomization"], entry.get("p_randomization_floor")
        ),
    }


GATE_TITLES = {"pass": "PASSED", "fail": "FAILED", "inconclusive": "INCONCLUSIVE"}


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
    return text_table(rows, list(columns))


def _with_ci(entry: dict) -> str:
    ci = entry["ci95"]
    text = fixed(entry["mean"])
    return f"{text}  [{fixed(ci[0])}, {fixed(ci[1])}]" if ci else text


def _labelled(golden_set: Golden, db: str | None, labels: str, judge_name: str | None) -> Golden:
    """The golden set under ``labels`` (machine labels come from the project ``db``)."""
    if labels in ("human", "ppi"):  # ppi's report is the humans', its figures come beside
        return golden_set
    if not db:
        raise click.UsageError("--labels machine|both reads a machine judge's labels: give --db")
    from goldset.eval.calibration import with_labels

    with open_store(db) as store:
        _, machine = machine_labels(store, judge_name)
    return with_labels(golden_set, machine, labels)


def _judged_text(title: str, shares: dict[str, float]) -> str:
    """The share of a run's top 10 labelled by humans, and by the machine alone (--labels both)."""
    return f"{title}: {fixed(shares['human'])} by humans, {fixed(shares['machine'])} by the machine"


def _judged_by(human: Golden, both: Golden, run: Run, scoring: dict) -> dict:
    """judged@10 of the run by humans, and the share of its top 10 only the machine labelled."""
    from goldset.eval.metrics import evaluate

    names = ("rel_threshold", "depth", "keep_order", "single_precision")
    options = {name: scoring[name] for name in names}
    by_human, by_either = (
        evaluate(golden_set, run, ["judged@10"], **options)["judged@10"].mean()
        for golden_set in (human, both)
    )
    return {"human": by_human, "machine": by_either - by_human}
