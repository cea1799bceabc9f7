"""Benchmark `goldset eval` against pytrec_eval, ir_measures and ranx at every size a user meets.

For each size (queries x 100 results) and shape of file it generates a seeded TREC qrels file
and TREC run, then runs each tool in its own child process on the same files: read both,
rank, score, average. Each child's wall time, CPU time and peak RSS are measured (see
`_common.measure`); the tools take turns, several rounds (5, or 3 at 100,000 queries), and each
tool's median run is kept. The tools' means are cross-checked so that a fast but wrong figure
can never pass unnoticed.

    python bench/eval_speed.py                                    # everything, ~25 minutes
    python bench/eval_speed.py --sizes 50,200,2000 --shapes short # a subset, a minute or two
    python bench/eval_speed.py --sizes 2000 --tools goldset pytrec_eval --repeat 1  # smoke test

Prints a markdown table per size and shape and writes bench/out/eval_speed.md (the tables)
and bench/out/eval_speed.json (every run's raw figures). Exits 1 when goldset's means
disagree with pytrec_eval's (the trec_eval oracle). See bench/README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import sys
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
from _common import Measurement, measure, write_json

METRICS = ("mrr@10", "hit@1", "hit@10", "recall@10", "precision@10", "ndcg@10")
RANX_METRICS = {
    "mrr@10": "mrr@10",
    "hit@1": "hit_rate@1",
    "hit@10": "hit_rate@10",
    "recall@10": "recall@10",
    "precision@10": "precision@10",
    "ndcg@10": "ndcg@10",
}
IR_MEASURES = {
    "mrr@10": "RR@10",
    "hit@1": "Success@1",
    "hit@10": "Success@10",
    "recall@10": "R@10",
    "precision@10": "P@10",
    "ndcg@10": "nDCG@10",
}
TOOLS = ("goldset", "pytrec_eval", "ir_measures", "ranx")
TOOL_LABELS = {
    "goldset": "`goldset eval --bootstrap 0`",
    "pytrec_eval": "pytrec_eval script (`parse_qrel`/`parse_run` + `evaluate`)",
    "ir_measures": "ir_measures (`read_trec_*` + `calc_aggregate`)",
    "ranx": "ranx (`from_file` + `evaluate`)",
}
# Why a tool's means may differ from trec_eval's on these files, whose scores tie often.
TIE_BREAKS = {
    "ranx": " (ranx breaks score ties in its sort's order: bench/README.md)",
    "ir_measures": " (its RR@10, from the msmarco provider, breaks ties by doc_id ascending)",
}
REFERENCE = "pytrec_eval"  # trec_eval itself: goldset must agree with it
TOLERANCE = 1e-6
SIZES = (50, 200, 2_000, 20_000, 100_000)
WARM_UP_QUERIES = 50
LARGE = 100_000  # from this size on: 3 rounds, and the large-file targets

GRADE_SHARES = (0.45, 0.30, 0.15, 0.10)  # grades 0, 1, 2, 3
RETRIEVED_SHARE = 0.8  # share of a query's judged docs that the run retrieved
RESULT_PREFIX = "RESULT "
WARM_PREFIX = "WARM "
DEFAULT_OUT = Path(__file__).parent / "out"
PYTREC_EVAL_SCRIPT = Path(__file__).parent / "pytrec_eval_script.py"
GENERATOR_VERSION = 2  # bump when the files a seed gives change, so old ones are rewritten


# --- shapes of file ----------------------------------------------------------------------------


def few_judged(rng: np.random.Generator, queries: int) -> np.ndarray:
    """About 2.8 judged docs per query, and 10% of queries with none (as in issue 15)."""
    counts = 1 + rng.poisson(2.1, size=queries)
    counts[rng.random(queries) < 0.1] = 0
    return counts


def many_judged(rng: np.random.Generator, queries: int) -> np.ndarray:
    """20-60 judged docs per query."""
    return rng.integers(20, 61, size=queries)


def pool_judged(rng: np.random.Generator, queries: int) -> np.ndarray:
    """5-20 judged docs per query (the benchmark's original data)."""
    return rng.integers(5, 21, size=queries)


# Separators and line ends that every tool accepts (each was checked on all four): tabs, runs
# of spaces, leading and trailing blanks, CRLF. A line of the messy files takes one at random.
CLEAN_RUN = ("{q} Q0 {d} {r} {s:.2f} bench\n",)
MESSY_RUN = (
    "{q} Q0 {d} {r} {s:.2f} bench\n",
    "{q}\tQ0\t{d}\t{r}\t{s:.2f}\tbench\r\n",
    "  {q}   Q0 {d}\t {r}  {s:.2f} bench \t\r\n",
    "{q} \tQ0  {d} {r}\t{s:.2f}\tbench   \n",
)
CLEAN_QRELS = ("{q} 0 {d} {g}\n",)
MESSY_QRELS = ("{q} 0 {d} {g}\n", "{q}\t0\t{d}\t{g}\r\n", "  {q}  0 {d}\t{g} \t\n")


@dataclass(frozen=True)
class Shape:
    """How the generated files look: ids, judged docs per query, whitespace."""

    description: str
    query_id: Callable[[int], str]
    doc_id: Callable[[int], str]
    doc_space: int  # retrieved docs are numbered below this; unretrieved judged docs above
    judged: Callable[[np.random.Generator, int], np.ndarray]
    run_lines: tuple[str, ...] = CLEAN_RUN
    qrels_lines: tuple[str, ...] = CLEAN_QRELS


SHAPES = {
    "short": Shape(
        "short ids (`q17`, `d4875`), ~2.8 judged docs per query, 10% of queries unjudged",
        "q{}".format,
        "d{}".format,
        50_000,
        few_judged,
    ),
    "long": Shape(
        "long ids (`topic-00000017-en`, 48-char doc paths), 20-60 judged docs per query",
        "topic-{:08d}-en".format,
        "corpus/en/wiki-2026-11/articles/{:010d}#passage".format,
        5_000_000,
        many_judged,
    ),
    "messy": Shape(
        "the `short` files' content, with tabs, runs of spaces, leading/trailing blanks, CRLF",
        "q{}".format,
        "d{}".format,
        50_000,
        few_judged,
        MESSY_RUN,
        MESSY_QRELS,
    ),
    "pooled": Shape(
        "ids like `doc1234567`, 5-20 judged docs per query, every query judged (the old default)",
        "q{}".format,
        "doc{}".format,
        5_000_000,
        pool_judged,
    ),
}
DEFAULT_SHAPES = ("short", "long", "messy")


# --- data generation -------------------------------------------------------------------------


def distinct_doc_numbers(
    rng: np.random.Generator, queries: int, results: int, space: int
) -> np.ndarray:
    """A (queries, results) matrix of doc numbers below `space`, distinct within each row."""
    docs = rng.integers(0, space, size=(queries, results))
    while True:
        clashing = (np.diff(np.sort(docs, axis=1), axis=1) == 0).any(axis=1)
        if not clashing.any():
            return docs
        docs[clashing] = rng.integers(0, space, size=(int(clashing.sum()), results))


def tied_scores(rng: np.random.Generator, queries: int, results: int) -> np.ndarray:
    """Descending scores per row, rounded to 2 decimals: about a third of them tie a neighbour."""
    return -np.sort(-np.round(rng.random((queries, results)), 2), axis=1)


def judgments(
    rng: np.random.Generator, docs: np.ndarray, per_query: np.ndarray, space: int
) -> pd.DataFrame:
    """Graded judgements (query, doc, grade), `per_query` of them, mostly of retrieved docs.

    Retrieved docs are drawn without replacement with top ranks more likely (an exponential
    race weighted by rank), as a pool of systems would favour them. Every judged query gets
    at least one relevant doc, so that every tool averages over the same queries.
    """
    queries, results = docs.shape
    retrieved = np.minimum(rng.binomial(per_query, RETRIEVED_SHARE), results)
    race = rng.exponential(size=(queries, results)) * np.arange(1, results + 1) ** 0.7
    chosen = np.arange(results) < retrieved[:, None]
    positions = np.argsort(race, axis=1)
    retrieved_query = np.nonzero(chosen)[0]
    retrieved_doc = docs[retrieved_query, positions[chosen]]
    unretrieved_query = np.repeat(np.arange(queries), per_query - retrieved)
    unretrieved_doc = space + rng.integers(0, space, size=len(unretrieved_query))
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


def write_run(path: Path, shape: Shape, docs: np.ndarray, scores: np.ndarray, picks) -> None:
    """Write a TREC run in score order; tied docs stay in random order, not trec_eval's."""
    templates = shape.run_lines
    with path.open("w", newline="") as run:
        for query, (doc_row, score_row, pick_row) in enumerate(
            zip(docs.tolist(), scores.tolist(), picks(docs.shape, len(templates)), strict=True)
        ):
            query_id = shape.query_id(query)
            run.write(
                "".join(
                    templates[pick].format(q=query_id, d=shape.doc_id(doc), r=rank, s=score)
                    for rank, (doc, score, pick) in enumerate(
                        zip(doc_row, score_row, pick_row, strict=True), start=1
                    )
                )
            )


def write_qrels(path: Path, shape: Shape, frame: pd.DataFrame, picks) -> None:
    """Write TREC qrels lines `qid 0 docno grade`."""
    templates = shape.qrels_lines
    columns = (frame["query"].tolist(), frame["doc"].tolist(), frame["grade"].tolist())
    with path.open("w", newline="") as qrels:
        qrels.writelines(
            templates[pick].format(q=shape.query_id(query), d=shape.doc_id(doc), g=grade)
            for query, doc, grade, pick in zip(
                *columns, picks((len(frame),), len(templates)), strict=True
            )
        )


def generate(out: Path, shape_name: str, queries: int, results: int, seed: int) -> dict:
    """Write qrels.txt, run.trec and data.json (their description) into `out`, unless the
    files there already came from the same parameters; return the description."""
    shape = SHAPES[shape_name]
    wanted = {
        "shape": shape_name,
        "description": shape.description,
        "queries": queries,
        "results_per_query": results,
        "seed": seed,
        "generator_version": GENERATOR_VERSION,
    }
    manifest_path = out / "data.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if {key: manifest.get(key) for key in wanted} == wanted:
            return manifest
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    # The content depends on the seed alone, so `messy` holds `short`'s data; the whitespace
    # comes from a second generator.
    rng = np.random.default_rng(seed)
    layout = np.random.default_rng([seed, 1])

    def picks(size: tuple[int, ...], choices: int) -> list:
        return layout.integers(0, choices, size=size).tolist()

    docs = distinct_doc_numbers(rng, queries, results, shape.doc_space)
    scores = tied_scores(rng, queries, results)
    qrels = judgments(rng, docs, shape.judged(rng, queries), shape.doc_space)
    write_qrels(out / "qrels.txt", shape, qrels, picks)
    write_run(out / "run.trec", shape, docs, scores, picks)
    manifest = {
        **wanted,
        "run_lines": queries * results,
        "qrels_lines": len(qrels),
        "judged_queries": int(qrels["query"].nunique()),
        "judged_docs_per_query": round(len(qrels) / queries, 2),
        "scores_tied_with_a_neighbour": round(float((np.diff(scores, axis=1) == 0).mean()), 3),
        "run_mib": round((out / "run.trec").stat().st_size / 2**20, 1),
    }
    write_json(manifest_path, manifest)
    print(f"generated {out} in {time.perf_counter() - started:.1f} s", flush=True)
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


def ir_measures_leg(qrels_path: Path, run_path: Path) -> None:
    """Read with ir_measures' TREC readers, compute the means with calc_aggregate; print."""
    import ir_measures  # imported here: each child loads only its tool

    judged: set[str] = set()

    def counted(qrels):  # notes the judged queries as calc_aggregate reads the qrels
        for qrel in qrels:
            judged.add(qrel.query_id)
            yield qrel

    started = time.perf_counter()
    measures = {name: ir_measures.parse_measure(spec) for name, spec in IR_MEASURES.items()}
    # The readers are generators: calc_aggregate reads the files as it evaluates.
    means = ir_measures.calc_aggregate(
        list(measures.values()),
        counted(ir_measures.read_trec_qrels(str(qrels_path))),
        ir_measures.read_trec_run(str(run_path)),
    )
    phases = {"read_and_evaluate": time.perf_counter() - started}
    report_means({name: float(means[m]) for name, m in measures.items()}, phases, len(judged))


def ranx_leg(qrels_path: Path, run_path: Path) -> None:
    """Read with ranx's from_file, evaluate (JIT included), print; then time a warm evaluate."""
    from ranx import Qrels, Run, evaluate  # imported here: each child loads only its tool

    started = time.perf_counter()
    qrels = Qrels.from_file(str(qrels_path), kind="trec")
    run = Run.from_file(str(run_path), kind="trec")
    read = time.perf_counter()
    # make_comparable: ranx refuses run queries that have no judgements (the `short` files'
    # unjudged 10%) unless told to drop them, as trec_eval does.
    means = evaluate(qrels, run, list(RANX_METRICS.values()), make_comparable=True)
    evaluated = time.perf_counter()
    report_means(
        {name: float(means[ranx_name]) for name, ranx_name in RANX_METRICS.items()},
        {"read": read - started, "evaluate": evaluated - read},
        len(qrels),
    )
    evaluate(qrels, run, list(RANX_METRICS.values()), make_comparable=True)
    warm = {"evaluate_seconds": time.perf_counter() - evaluated}
    print(WARM_PREFIX + json.dumps(warm), flush=True)


LEGS = {"ir_measures": ir_measures_leg, "ranx": ranx_leg}


# --- measuring -------------------------------------------------------------------------------


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
    """The command line that runs one leg in a fresh interpreter: the plain pytrec_eval
    script (standard library and pytrec_eval only, as a user would write it), or one leg of
    this script."""
    if tool == "pytrec_eval":
        return [sys.executable, str(PYTREC_EVAL_SCRIPT), str(qrels_path), str(run_path)]
    return [sys.executable, __file__, "--leg", tool, str(qrels_path), str(run_path)]


def child_environment() -> dict[str, str]:
    """The environment of every timed child: Python's bytecode kept in bench/out/pycache.

    An installed package's modules are compiled once, when it is installed; where
    PYTHONDONTWRITEBYTECODE is set (as on this project's machines), goldset's own modules,
    imported from the source tree, would instead be compiled again in every run (40 ms of a
    0.3 s evaluation). With the cache, every tool's modules are compiled at the untimed
    warm-up and read back in the timed runs, as from an installed package.
    """
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(DEFAULT_OUT / "pycache")
    return env


def time_goldset(qrels_path: Path, run_path: Path) -> dict:
    """Measure `goldset eval`; like the Python legs, its end-to-end time runs until its
    result is out (the last line of its JSON), and the time until it exits is kept beside.

    Its CPU time and peak RSS are those of the whole process, teardown included.
    """
    command = goldset_command(qrels_path, run_path)
    measurement = measure(command, env=child_environment())
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
    measurement = measure(command, env=child_environment())
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


def time_tool(tool: str, qrels_path: Path, run_path: Path) -> dict:
    """One timed run of `tool`; a tool that cannot read the files gets its error instead."""
    try:
        if tool == "goldset":
            return time_goldset(qrels_path, run_path)
        return time_leg(tool, qrels_path, run_path)
    except RuntimeError as error:  # the child failed: say why in the table, measure the rest
        return {"tool": tool, "failed": str(error).strip().splitlines()[-1]}


def parsed_line(measurement: Measurement, prefix: str) -> dict:
    """The JSON payload of the child's line that starts with `prefix`."""
    for _, line in measurement.stdout_lines:
        if line.startswith(prefix):
            return json.loads(line[len(prefix) :])
    raise ValueError(f"the child printed no line starting with {prefix!r}")


def measure_tools(rounds: dict[str, int], qrels_path: Path, run_path: Path) -> dict:
    """Every run of each tool, ``rounds[tool]`` of them; a tool that failed is not run again.

    The tools take turns (A, B, C, A, B, C, ...), so that a slow spell of a shared machine
    falls on every tool alike rather than on whichever ran then.
    """
    runs: dict[str, list[dict]] = {tool: [] for tool in rounds}
    for turn in range(1, max(rounds.values()) + 1):
        for tool, count in rounds.items():
            if turn > count or (runs[tool] and "failed" in runs[tool][-1]):
                continue
            print(f"  {tool} ({turn}/{count}) ...", flush=True)
            runs[tool].append(time_tool(tool, qrels_path, run_path))
    return runs


def median_run(timings: list[dict]) -> dict:
    """The run with the median wall time (the lower one of the middle two for an even
    count), with every run's wall time beside it; a failure as it is."""
    if "failed" in timings[-1]:
        return timings[-1]
    ordered = sorted(timings, key=lambda timing: timing["wall_seconds"])
    median = dict(ordered[(len(ordered) - 1) // 2])
    median["all_wall_seconds"] = [round(timing["wall_seconds"], 3) for timing in timings]
    return median


def target(queries: int, tool: str) -> float | None:
    """The speed-up over `tool` that goldset aims at at this size (bench/README.md, targets)."""
    if queries >= LARGE:
        return {"pytrec_eval": 5.0, "ranx": 15.0}.get(tool)
    if queries <= 2_000 and tool == "pytrec_eval":
        return 1.0  # a CI gate's golden set: no slower than the pytrec_eval script
    return None


def comparison(goldset: dict, other: dict, queries: int) -> dict:
    """Speed-up and memory ratio of goldset over another tool, and whether the target holds
    (at 100,000 queries the target includes less peak memory than the other tool)."""
    speedup = other["wall_seconds"] / goldset["wall_seconds"]
    memory_ratio = other["peak_rss_mib"] / goldset["peak_rss_mib"]
    wanted = target(queries, other["tool"])
    leaner = memory_ratio > 1 or queries < LARGE
    return {
        "speedup": round(speedup, 2),
        "cpu_speedup": round(other["cpu_seconds"] / goldset["cpu_seconds"], 2),
        "memory_ratio": round(memory_ratio, 2),
        "target_speedup": wanted,
        "target_met": None if wanted is None else bool(speedup >= wanted and leaner),
    }


def agreement(medians: list[dict]) -> dict[str, dict[str, float]]:
    """Absolute difference of each tool's means (and query count) from the reference's."""
    measured = [timing for timing in medians if "means" in timing]
    reference = next((t for t in measured if t["tool"] == REFERENCE), measured[0])
    differences = {}
    for timing in measured:
        if timing is reference:
            continue
        by_metric = {
            name: abs(timing["means"][name] - reference["means"][name]) for name in METRICS
        }
        by_metric["queries_scored"] = abs(timing["queries_scored"] - reference["queries_scored"])
        differences[timing["tool"]] = by_metric
    return differences


def measure_case(args: argparse.Namespace, shape: str, queries: int) -> dict:
    """Generate (or reuse) one size and shape of file and measure every tool on it."""
    out = args.out / f"{shape}-{queries}x{args.results}"
    manifest = generate(out, shape, queries, args.results, args.seed)
    rounds = args.repeat or (3 if queries >= LARGE else 5)
    # ranx spends seconds loading numba at every size, 10-80x goldset's time: fewer of its
    # runs tell as much and keep the whole benchmark within half an hour.
    per_tool = {
        tool: min(rounds, args.ranx_rounds) if tool == "ranx" else rounds for tool in args.tools
    }
    load = os.getloadavg()[0]
    print(f"{queries:,} queries, shape {shape}: {per_tool} rounds (load {load:.2f})", flush=True)
    runs = measure_tools(per_tool, out / "qrels.txt", out / "run.trec")
    medians = [median_run(runs[tool]) for tool in args.tools]
    goldset = next((t for t in medians if t["tool"] == "goldset" and "failed" not in t), None)
    versus = {
        t["tool"]: comparison(goldset, t, queries)
        for t in medians
        if goldset is not None and t["tool"] != "goldset" and "failed" not in t
    }
    return {
        "queries": queries,
        "shape": shape,
        "data": manifest,
        "files": {"qrels": str(out / "qrels.txt"), "run": str(out / "run.trec")},
        "load_average_1m_at_start": load,
        "load_average_1m_at_end": os.getloadavg()[0],
        "rounds": rounds,
        "runs": runs,
        "medians": medians,
        "goldset_versus": versus,
        "difference_from_reference": agreement(medians),
    }


# --- reporting -------------------------------------------------------------------------------


def ratio_text(ratio: float, faster: str, slower: str) -> str:
    """`3.2× faster` for a ratio above 1, `1.05× slower` below (two decimals under 2×, where
    one would round 0.96 and 1.04 alike)."""
    shown = ratio if ratio >= 1 else 1 / ratio
    return f"{shown:.{2 if shown < 2 else 1}f}× {faster if ratio >= 1 else slower}"


def seconds_text(seconds: float) -> str:
    """Seconds to the millisecond below 1 s (a small eval's differences are that size)."""
    return f"{seconds:.3f}" if seconds < 1 else f"{seconds:.2f}"


def markdown(case: dict, cpus: int) -> str:
    """One size and shape: a heading with the data and the machine's load, then the table."""
    data = case["data"]
    ranx_rounds = f"ranx {len(case['runs']['ranx'])}" if "ranx" in case["runs"] else "no ranx"
    command = (
        f"python bench/eval_speed.py --sizes {case['queries']} --shapes {case['shape']}"
        f" --results {data['results_per_query']}"
    )
    lines = [
        f"#### {case['queries']:,} queries × {data['results_per_query']} results, "
        f"shape `{case['shape']}`",
        "",
        f"{data['description']}: {data['run_lines']:,} run lines ({data['run_mib']} MiB), "
        f"{data['qrels_lines']:,} qrels lines, {data['judged_queries']:,} judged queries. "
        f"Median of {case['rounds']} interleaved rounds ({ranx_rounds}); load average "
        f"{case['load_average_1m_at_start']:.2f} at the start, "
        f"{case['load_average_1m_at_end']:.2f} at the end, {cpus} CPUs. `{command}`",
        "",
        "| tool | wall s | CPU s | peak RSS MiB | goldset is | goldset's memory | target "
        "| every run, wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for timing in case["medians"]:
        label = TOOL_LABELS[timing["tool"]]
        if "failed" in timing:
            lines.append(f"| {label} | skipped: cannot read these files ({timing['failed']}) |")
            continue
        versus = case["goldset_versus"].get(timing["tool"])
        speed = memory = goal = ""
        if versus:
            speed = ratio_text(versus["speedup"], "faster", "slower")
            memory = ratio_text(versus["memory_ratio"], "leaner", "heavier")
            if versus["target_met"] is not None:
                met = "met" if versus["target_met"] else "**NOT met**"
                goal = f"≥ {versus['target_speedup']:g}×: {met}"
        every = " ".join(seconds_text(wall) for wall in timing["all_wall_seconds"])
        lines.append(
            f"| {label} | {seconds_text(timing['wall_seconds'])} "
            f"| {seconds_text(timing['cpu_seconds'])} "
            f"| {timing['peak_rss_mib']:.0f} | {speed} | {memory} | {goal} | {every} |"
        )
    ranx = next((t for t in case["medians"] if t["tool"] == "ranx" and "phases" in t), None)
    if ranx:
        lines += [
            "",
            f"ranx `evaluate()`: first call {ranx['phases']['evaluate']:.2f} s (numba's compiled "
            f"code loaded from its cache), a second call {ranx['warm_evaluate_seconds']:.2f} s.",
        ]
    return "\n".join(lines)


def environment() -> dict:
    """Versions and machine facts that the figures depend on."""
    packages = ("goldset", "numpy", "pandas", "pyarrow", "pytrec-eval-terrier", "ir-measures")
    versions = {}
    for package in (*packages, "ranx", "numba"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "versions": versions,
    }


def disagreement_status(case: dict) -> int:
    """Print every mean that differs beyond the tolerance; 1 if goldset and pytrec_eval differ."""
    status = 0
    for tool, by_metric in case["difference_from_reference"].items():
        for name, difference in by_metric.items():
            if difference > TOLERANCE:
                why = TIE_BREAKS.get(tool, "")
                print(f"DIFFERS: {tool} vs {REFERENCE} on {name}: {difference:.3g}{why}")
                status = max(status, int(tool == "goldset"))
    return status


def warm_up(args: argparse.Namespace, shape: str) -> None:
    """One untimed run of every tool on small files: fills one-off caches (ranx's numba
    cache took minutes on its first use here) before anything is timed."""
    out = args.out / f"{shape}-{WARM_UP_QUERIES}x{args.results}"
    generate(out, shape, WARM_UP_QUERIES, args.results, args.seed)
    print("warming up (untimed) ...", flush=True)
    for tool in args.tools:
        time_tool(tool, out / "qrels.txt", out / "run.trec")


def benchmark(args: argparse.Namespace) -> int:
    """Measure every chosen size and shape, print the tables, save them and the raw runs."""
    machine = environment()
    warm_up(args, args.shapes[0])
    cases, tables, status = [], [], 0
    for queries in args.sizes:
        for shape in args.shapes:
            case = measure_case(args, shape, queries)
            cases.append(case)
            tables.append(markdown(case, machine["cpus"]))
            print("\n" + tables[-1] + "\n", flush=True)
            status = max(status, disagreement_status(case))
            write_json(args.out / "eval_speed.json", {"environment": machine, "cases": cases})
    versions = ", ".join(f"{name} {version}" for name, version in machine["versions"].items())
    header = f"Python {machine['python']} on {machine['machine']}; {versions}."
    (args.out / "eval_speed.md").write_text("\n\n".join([header, *tables]) + "\n")
    print(f"written to {args.out / 'eval_speed.md'} and {args.out / 'eval_speed.json'}")
    return status


def available_tools(tools: list[str]) -> list[str]:
    """The tools asked for that are installed (ir_measures is optional); say which are not."""
    installed = []
    for tool in tools:
        if importlib.util.find_spec("labeler" if tool == "goldset" else tool) is None:
            print(f"{tool} is not installed: left out (pip install {tool.replace('_', '-')})")
            continue
        installed.append(tool)
    return installed


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """The command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",")],
        default=list(SIZES),
        help="queries, comma-separated (50,200,2000,20000,100000)",
    )
    parser.add_argument(
        "--shapes",
        type=lambda text: text.split(","),
        default=list(DEFAULT_SHAPES),
        help=f"shapes of file, comma-separated, of {','.join(SHAPES)} (short,long,messy)",
    )
    parser.add_argument("--results", type=int, default=100, help="results per query (100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data (0)")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="directory for data and results (bench/out)"
    )
    parser.add_argument(
        "--repeat", type=int, help="rounds per size, tools taking turns (5; 3 at 100,000)"
    )
    parser.add_argument(
        "--ranx-rounds", type=int, default=3, help="at most this many runs of ranx per size (3)"
    )
    parser.add_argument(
        "--tools", nargs="+", choices=TOOLS, default=list(TOOLS), help="tools to measure, in order"
    )
    parser.add_argument("--leg", nargs=3, metavar=("TOOL", "QRELS", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.shapes) - set(SHAPES))
    if unknown:
        parser.error(f"unknown shape {', '.join(unknown)}: choose from {', '.join(SHAPES)}")
    if min(*args.sizes, args.results, args.repeat or 1) < 1:
        parser.error("--sizes, --results and --repeat must be at least 1")
    return args


def main(argv: list[str]) -> int:
    """Run the benchmark, or one leg of it when called with the internal --leg option."""
    args = parse_arguments(argv)
    if args.leg:
        tool, qrels_path, run_path = args.leg
        LEGS[tool](Path(qrels_path), Path(run_path))
        return 0
    args.tools = available_tools(args.tools)
    return benchmark(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
