"""Benchmark `goldset eval` against pytrec_eval and ranx, end to end from files on disk.

Generates a seeded TREC qrels file and a TREC run (default 100,000 queries x 100 results =
10M run lines, scores rounded to 2 decimals so that ties are common), then runs each tool in
its own child process: read both files, rank, score, average. Each child's wall time, CPU
time and peak RSS are measured (see `_common.measure`); each tool runs three times (taking
turns) and its median run is kept. The tools' means are cross-checked so that a fast but
wrong figure can never pass unnoticed.

    python bench/eval_speed.py                      # the full benchmark, about ten minutes
    python bench/eval_speed.py --queries 2000       # smoke test, seconds
    python bench/eval_speed.py --skip-generate      # reuse the files in --out
    python bench/eval_speed.py --repeat 1           # one run per tool

Prints a table and writes bench/out/eval_speed.json. Exits 1 when goldset's means disagree
with pytrec_eval's (the trec_eval oracle).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sys
import sysconfig
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
from _common import Measurement, format_table, measure, write_json

METRICS = ("mrr@10", "hit@1", "hit@10", "recall@10", "precision@10", "ndcg@10")
RANX_METRICS = {
    "mrr@10": "mrr@10",
    "hit@1": "hit_rate@1",
    "hit@10": "hit_rate@10",
    "recall@10": "recall@10",
    "precision@10": "precision@10",
    "ndcg@10": "ndcg@10",
}
PYTREC_MEASURES = {"recip_rank", "success.1,10", "P.10", "recall.10", "ndcg_cut.10"}
PYTREC_NAMES = {
    "hit@1": "success_1",
    "hit@10": "success_10",
    "recall@10": "recall_10",
    "precision@10": "P_10",
    "ndcg@10": "ndcg_cut_10",
}
TOOLS = ("goldset", "pytrec_eval", "ranx")
TOLERANCE = 1e-6
TARGET_SPEEDUP = {"pytrec_eval": 5.0, "ranx": 20.0}

DOC_SPACE = 5_000_000  # run docs are doc0..doc4999999; unretrieved judged docs lie above
JUDGMENTS_PER_QUERY = (5, 20)
RETRIEVED_SHARE = 0.8  # share of a query's judged docs that the run retrieved
GRADE_SHARES = (0.45, 0.30, 0.15, 0.10)  # grades 0, 1, 2, 3
RESULT_PREFIX = "RESULT "
WARM_PREFIX = "WARM "
DEFAULT_OUT = Path(__file__).parent / "out"


# --- data generation -------------------------------------------------------------------------


def distinct_doc_numbers(rng: np.random.Generator, queries: int, results: int) -> np.ndarray:
    """A (queries, results) matrix of doc numbers, distinct within each row."""
    docs = rng.integers(0, DOC_SPACE, size=(queries, results))
    while True:
        clashing = (np.diff(np.sort(docs, axis=1), axis=1) == 0).any(axis=1)
        if not clashing.any():
            return docs
        docs[clashing] = rng.integers(0, DOC_SPACE, size=(int(clashing.sum()), results))


def tied_scores(rng: np.random.Generator, queries: int, results: int) -> np.ndarray:
    """Descending scores per row, rounded to 2 decimals: about a third of them tie a neighbour."""
    return -np.sort(-np.round(rng.random((queries, results)), 2), axis=1)


def judgments(rng: np.random.Generator, docs: np.ndarray) -> pd.DataFrame:
    """Graded judgements (query, doc, grade): 5-20 per query, mostly of docs the run retrieved.

    Retrieved docs are drawn without replacement with top ranks more likely (an exponential
    race weighted by rank), as a pool of systems would favour them. Every query gets at least
    one relevant doc, so that every tool averages over the same queries.
    """
    queries, results = docs.shape
    per_query = rng.integers(JUDGMENTS_PER_QUERY[0], JUDGMENTS_PER_QUERY[1] + 1, size=queries)
    retrieved = np.minimum(rng.binomial(per_query, RETRIEVED_SHARE), results)
    race = rng.exponential(size=(queries, results)) * np.arange(1, results + 1) ** 0.7
    chosen = np.arange(results) < retrieved[:, None]
    positions = np.argsort(race, axis=1)
    retrieved_query = np.nonzero(chosen)[0]
    retrieved_doc = docs[retrieved_query, positions[chosen]]
    unretrieved_query = np.repeat(np.arange(queries), per_query - retrieved)
    unretrieved_doc = DOC_SPACE + rng.integers(0, DOC_SPACE, size=len(unretrieved_query))
    frame = pd.DataFrame(
        {
            "query": np.concatenate([retrieved_query, unretrieved_query]),
            "doc": np.concatenate([retrieved_doc, unretrieved_doc]),
        }
    ).drop_duplicates()
    frame["grade"] = rng.choice(len(GRADE_SHARES), p=GRADE_SHARES, size=len(frame))
    without_relevant = frame.groupby("query")["grade"].transform("max") == 0
    first_of_query = ~frame.duplicated("query")
    frame.loc[without_relevant & first_of_query, "grade"] = 1
    return frame.sort_values("query", kind="stable")


def write_run(path: Path, docs: np.ndarray, scores: np.ndarray) -> None:
    """Write a TREC run in score order; tied docs stay in random order, not trec_eval's."""
    with path.open("w") as run:
        for query, (doc_row, score_row) in enumerate(
            zip(docs.tolist(), scores.tolist(), strict=True)
        ):
            run.write(
                "".join(
                    f"q{query} Q0 doc{doc} {rank} {score:.2f} bench\n"
                    for rank, (doc, score) in enumerate(
                        zip(doc_row, score_row, strict=True), start=1
                    )
                )
            )


def write_qrels(path: Path, frame: pd.DataFrame) -> None:
    """Write TREC qrels lines `qid 0 docno grade`."""
    with path.open("w") as qrels:
        qrels.writelines(
            f"q{query} 0 doc{doc} {grade}\n"
            for query, doc, grade in zip(
                frame["query"].tolist(), frame["doc"].tolist(), frame["grade"].tolist(), strict=True
            )
        )


def generate(out: Path, queries: int, results: int, seed: int) -> dict:
    """Write qrels.txt, run.trec and a manifest describing them into `out`; return the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    docs = distinct_doc_numbers(rng, queries, results)
    scores = tied_scores(rng, queries, results)
    qrels = judgments(rng, docs)
    write_qrels(out / "qrels.txt", qrels)
    write_run(out / "run.trec", docs, scores)
    manifest = {
        "queries": queries,
        "results_per_query": results,
        "run_lines": queries * results,
        "qrels_lines": len(qrels),
        "seed": seed,
        "scores_tied_with_a_neighbour": round(float((np.diff(scores, axis=1) == 0).mean()), 3),
    }
    write_json(out / "eval_speed_data.json", manifest)
    return manifest


# --- the legs, each run in its own child process ---------------------------------------------


def report_means(means: dict[str, float], phases: dict[str, float], queries: int) -> None:
    """Print a leg's result line; the parent stops the end-to-end clock when it reads it.

    The CPU time so far (all threads, interpreter start included) travels with it, so that
    work done after the result (ranx's warm call, teardown) is not charged to the tool.
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result = {
        "means": means,
        "queries_scored": queries,
        "phases": phases,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
    }
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def pytrec_eval_leg(qrels_path: Path, run_path: Path) -> None:
    """Read with pytrec_eval's own parsers, evaluate, average; print the result line."""
    import pytrec_eval  # imported here so that each child loads only the tool it measures

    started = time.perf_counter()
    with qrels_path.open() as qrels_file, run_path.open() as run_file:
        qrels = pytrec_eval.parse_qrel(qrels_file)
        run = pytrec_eval.parse_run(run_file)
    read = time.perf_counter()
    per_query = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)
    values = list(per_query.values())
    means = {name: float(np.mean([v[trec] for v in values])) for name, trec in PYTREC_NAMES.items()}
    # trec_eval's recip_rank has no cutoff; the first relevant doc is within 10 iff RR >= 1/10
    means["mrr@10"] = float(np.mean([v["recip_rank"] * (v["recip_rank"] >= 0.1) for v in values]))
    phases = {"read": read - started, "evaluate": time.perf_counter() - read}
    report_means(means, phases, len(per_query))


def ranx_leg(qrels_path: Path, run_path: Path) -> None:
    """Read with ranx's from_file, evaluate (JIT included), print; then time a warm evaluate."""
    from ranx import Qrels, Run, evaluate  # imported here: each child loads only its tool

    started = time.perf_counter()
    qrels = Qrels.from_file(str(qrels_path), kind="trec")
    run = Run.from_file(str(run_path), kind="trec")
    read = time.perf_counter()
    means = evaluate(qrels, run, list(RANX_METRICS.values()))
    evaluated = time.perf_counter()
    report_means(
        {name: float(means[ranx_name]) for name, ranx_name in RANX_METRICS.items()},
        {"read": read - started, "evaluate": evaluated - read},
        len(qrels),
    )
    evaluate(qrels, run, list(RANX_METRICS.values()))
    warm = {"evaluate_seconds": time.perf_counter() - evaluated}
    print(WARM_PREFIX + json.dumps(warm), flush=True)


LEGS = {"pytrec_eval": pytrec_eval_leg, "ranx": ranx_leg}


# --- measuring and reporting -----------------------------------------------------------------


def goldset_command(qrels_path: Path, run_path: Path) -> list[str]:
    """The `goldset eval` command line measured, with the bootstrap off to match the others."""
    # The console script installed beside this interpreter, not a version manager's shim
    # (pyenv's is a shell script that would add its own start-up time).
    executable = shutil.which("goldset", path=sysconfig.get_path("scripts"))
    if executable is None:
        raise ValueError("no `goldset` console script: run pip install -e '.[test]' first")
    files = ["--golden", str(qrels_path), "--run", str(run_path)]
    metric_options = [option for name in METRICS for option in ("-m", name)]
    return [executable, "eval", *files, "--json", *metric_options, "--bootstrap", "0"]


def leg_command(tool: str, qrels_path: Path, run_path: Path) -> list[str]:
    """The command line that runs one leg of this script in a fresh interpreter."""
    return [sys.executable, __file__, "--leg", tool, str(qrels_path), str(run_path)]


def time_goldset(qrels_path: Path, run_path: Path) -> dict:
    """Measure `goldset eval`; like the Python legs, its end-to-end time runs until its
    result is out (the last line of its JSON), and the time until it exits is kept beside.

    Its CPU time and peak RSS are those of the whole process, teardown included.
    """
    command = goldset_command(qrels_path, run_path)
    measurement = measure(command)
    report = json.loads(measurement.stdout())
    return {
        "tool": "goldset",
        "command": " ".join(command),
        "wall_seconds": measurement.stdout_lines[-1][0],
        "exit_seconds": measurement.wall_seconds,
        "cpu_seconds": measurement.cpu_seconds,
        "peak_rss_mib": measurement.peak_rss_mib,
        "queries_scored": report["queries"]["answerable"],
        "means": {name: report["metrics"][name]["mean"] for name in METRICS},
    }


def time_leg(tool: str, qrels_path: Path, run_path: Path) -> dict:
    """Measure a Python leg; its end-to-end time runs until it prints its result line."""
    command = leg_command(tool, qrels_path, run_path)
    measurement = measure(command)
    result = parsed_line(measurement, RESULT_PREFIX)
    timing = {
        "tool": tool,
        "command": " ".join(command),
        "wall_seconds": measurement.seconds_until(RESULT_PREFIX),
        "cpu_seconds": result["cpu_seconds"],
        "peak_rss_mib": measurement.peak_rss_mib,
        "phases": result["phases"],
        "queries_scored": result["queries_scored"],
        "means": result["means"],
    }
    if tool == "ranx":
        timing["warm_evaluate_seconds"] = parsed_line(measurement, WARM_PREFIX)["evaluate_seconds"]
    return timing


def parsed_line(measurement: Measurement, prefix: str) -> dict:
    """The JSON payload of the child's line that starts with `prefix`."""
    for _, line in measurement.stdout_lines:
        if line.startswith(prefix):
            return json.loads(line[len(prefix) :])
    raise ValueError(f"the child printed no line starting with {prefix!r}")


def measure_tools(tools: list[str], repeat: int, qrels_path: Path, run_path: Path) -> list[dict]:
    """Measure each tool ``repeat`` times and keep its median run (by wall time).

    The tools take turns (A, B, C, A, B, C, ...), so that a slow spell of a shared machine
    falls on every tool alike rather than on whichever ran then.
    """
    runs: dict[str, list[dict]] = {tool: [] for tool in tools}
    for turn in range(1, repeat + 1):
        for tool in tools:
            print(f"measuring {tool} ({turn}/{repeat}) ...", flush=True)
            if tool == "goldset":
                runs[tool].append(time_goldset(qrels_path, run_path))
            else:
                runs[tool].append(time_leg(tool, qrels_path, run_path))
    return [median_run(runs[tool]) for tool in tools]


def median_run(timings: list[dict]) -> dict:
    """The run with the median wall time (the lower one of the middle two for an even
    count), with every run's wall time beside it."""
    ordered = sorted(timings, key=lambda timing: timing["wall_seconds"])
    median = dict(ordered[(len(ordered) - 1) // 2])
    median["all_wall_seconds"] = [round(timing["wall_seconds"], 3) for timing in timings]
    return median


def ranx_without_jit(ranx: dict) -> dict:
    """A derived row: ranx's end-to-end time with the warm evaluate() in place of the first."""
    saved = ranx["phases"]["evaluate"] - ranx["warm_evaluate_seconds"]
    return {
        "tool": "ranx, warm evaluate (derived)",
        "wall_seconds": ranx["wall_seconds"] - saved,
        "cpu_seconds": None,  # the phases are timed on the wall clock only
        "peak_rss_mib": ranx["peak_rss_mib"],
        "derived": True,
    }


def agreement(timings: list[dict]) -> dict[str, dict[str, float]]:
    """Absolute difference of each tool's means (and query count) from the first tool's."""
    reference, *others = [timing for timing in timings if "means" in timing]
    differences = {}
    for timing in others:
        by_metric = {
            name: abs(timing["means"][name] - reference["means"][name]) for name in METRICS
        }
        by_metric["queries_scored"] = abs(timing["queries_scored"] - reference["queries_scored"])
        differences[timing["tool"]] = by_metric
    return differences


def comparison(goldset: dict, other: dict) -> dict:
    """Speed-up and memory ratio of goldset over another tool, and whether the targets hold."""
    speedup = other["wall_seconds"] / goldset["wall_seconds"]
    memory_ratio = other["peak_rss_mib"] / goldset["peak_rss_mib"]
    target = TARGET_SPEEDUP.get(other["tool"])
    cpu_speedup = None
    if other["cpu_seconds"] is not None:
        cpu_speedup = round(other["cpu_seconds"] / goldset["cpu_seconds"], 2)
    return {
        "speedup": round(speedup, 2),
        "cpu_speedup": cpu_speedup,
        "memory_ratio": round(memory_ratio, 2),
        "target_speedup": target,
        "target_met": None if target is None else bool(speedup >= target and memory_ratio > 1),
    }


def table(timings: list[dict], comparisons: dict[str, dict]) -> str:
    """The printed results table."""
    rows = []
    for timing in timings:
        compared = comparisons.get(timing["tool"], {})
        rows.append(
            [
                timing["tool"],
                f"{timing['wall_seconds']:.2f}",
                "-" if timing["cpu_seconds"] is None else f"{timing['cpu_seconds']:.2f}",
                f"{timing['peak_rss_mib']:.0f}",
                f"{compared['speedup']:.1f}x" if compared else "",
                f"{compared['memory_ratio']:.1f}x" if compared else "",
                {True: "met", False: "NOT met", None: ""}[compared.get("target_met")],
                " ".join(f"{wall:.2f}" for wall in timing.get("all_wall_seconds", [])),
            ]
        )
    headers = ["tool", "wall s (median)", "CPU s", "peak RSS MiB", "goldset faster"]
    return format_table(headers + ["goldset leaner", "target", "every run, wall s"], rows)


def agreement_table(timings: list[dict]) -> str:
    """Each tool's mean per metric, side by side."""
    measured = [timing for timing in timings if "means" in timing]
    rows = [[name] + [f"{timing['means'][name]:.9f}" for timing in measured] for name in METRICS]
    return format_table(["metric"] + [timing["tool"] for timing in measured], rows)


def environment() -> dict:
    """Versions and machine facts that the figures depend on."""
    packages = ("goldset", "numpy", "pandas", "pytrec-eval-terrier", "ranx", "numba")
    versions = {}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "versions": versions,
    }


def benchmark(args: argparse.Namespace) -> int:
    """Generate (unless skipped), measure the chosen tools, print and save the results."""
    qrels_path, run_path = args.out / "qrels.txt", args.out / "run.trec"
    if args.skip_generate:
        manifest = json.loads((args.out / "eval_speed_data.json").read_text())
    else:
        started = time.perf_counter()
        manifest = generate(args.out, args.queries, args.results, args.seed)
        print(f"generated {manifest} in {time.perf_counter() - started:.1f} s", flush=True)
    machine = environment()
    timings = measure_tools(args.tools, args.repeat, qrels_path, run_path)
    if "ranx" in args.tools:
        timings.append(ranx_without_jit(next(t for t in timings if t["tool"] == "ranx")))
    goldset = next((t for t in timings if t["tool"] == "goldset"), None)
    comparisons = {} if goldset is None else {t["tool"]: comparison(goldset, t) for t in timings}
    comparisons.pop("goldset", None)
    differences = agreement(timings)
    payload = {
        "data": manifest,
        "files": {"qrels": str(qrels_path), "run": str(run_path)},
        "environment": machine,
        "tools": timings,
        "goldset_versus": comparisons,
        "largest_mean_difference_from_first_tool": differences,
        "tolerance": TOLERANCE,
    }
    write_json(args.out / "eval_speed.json", payload)
    print()
    print(table(timings, comparisons))
    print()
    print(agreement_table(timings))
    print(f"\nload average at start: {machine['load_average_1m']:.2f} on {machine['cpus']} CPUs")
    if "ranx" in args.tools:
        ranx = next(t for t in timings if t["tool"] == "ranx")
        print(
            f"ranx evaluate(): first call {ranx['phases']['evaluate']:.2f} s (numba JIT or cache "
            f"load included), second call {ranx['warm_evaluate_seconds']:.2f} s"
        )
    print(f"written to {args.out / 'eval_speed.json'}")
    return disagreement_status(differences, args.tools[0])


def disagreement_status(differences: dict[str, dict[str, float]], reference: str) -> int:
    """Print every mean that differs beyond the tolerance; 1 if goldset and pytrec_eval differ."""
    status = 0
    for tool, by_metric in differences.items():
        for name, difference in by_metric.items():
            if difference > TOLERANCE:
                why = " (ranx breaks score ties its own way: bench/README.md)" * (tool == "ranx")
                print(f"DIFFERS: {tool} vs {reference} on {name}: {difference:.3g}{why}")
                if {tool, reference} == {"goldset", "pytrec_eval"}:
                    status = 1
    return status


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """The command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000, help="queries (100,000)")
    parser.add_argument("--results", type=int, default=100, help="results per query (100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data (0)")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="directory for the data and results (bench/out)",
    )
    parser.add_argument("--skip-generate", action="store_true", help="reuse the files in --out")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per tool, taking turns; the median is kept (3)"
    )
    parser.add_argument(
        "--tools", nargs="+", choices=TOOLS, default=list(TOOLS), help="tools to measure, in order"
    )
    parser.add_argument("--leg", nargs=3, metavar=("TOOL", "QRELS", "RUN"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """Run the benchmark, or one leg of it when called with the internal --leg option."""
    args = parse_arguments(argv)
    if args.leg:
        tool, qrels_path, run_path = args.leg
        LEGS[tool](Path(qrels_path), Path(run_path))
        return 0
    if min(args.queries, args.results, args.repeat) < 1:
        raise ValueError("--queries, --results and --repeat must be at least 1")
    return benchmark(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
