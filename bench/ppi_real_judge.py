"""PPI with a real machine judge: Gemma 3 270M under llama.cpp on a Cranfield pool.

    python bench/ppi_real_judge.py [--queries 40] [--depth 5] [--sample 15] [--draws 300]

Builds a Cranfield project (bench/judge_cranfield.py: the first ``--queries`` queries, bm25 and
tfidf-title pooled at ``--depth``, every pair graded from the qrels by a simulated human),
starts llama-cpp-python's server with the Gemma GGUF (``GOLDSET_LLAMA_PYTHON`` names an
interpreter that has ``llama-cpp-python[server]``; .ci/run builds one), has ``goldset judge``
grade every pooled pair, then:

- end to end, as a user would: ``goldset sample --random --budget N``, ``goldset eval --labels
  ppi`` on bm25 and ``goldset compare --labels ppi --gate`` from bm25 to tfidf-title;
- the spread, over ``--draws`` seeded samples of the same size: PPI's λ, the effective number
  of human queries, the mean CI width beside the humans' alone on the same sample, and how
  often each CI holds the truth (the figure on every query's human labels).

A judge whose labels say little earns a λ near 0: PPI then falls back on the humans' sample,
and its CI is no narrower (and no wider, bar the guarded interval's one extra query).
The judge's grades are kept in the project (``--db``), so a second run skips the judging.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import format_table
from judge_cranfield import CRANFIELD, RUNS, build

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the llama server

from helpers.llama import MODEL, llama_server  # noqa: E402

from goldset.eval.readers import golden_from_records, read_run  # noqa: E402
from goldset.eval.report import build_report  # noqa: E402
from goldset.labeler.live.ppi import ppi_report  # noqa: E402
from goldset.labeler.store import Store  # noqa: E402

METRICS = ("mrr@10", "hit@10")


def goldset(*args: str) -> subprocess.CompletedProcess:
    """A ``goldset`` command, as a user runs it (its output kept)."""
    return subprocess.run(
        [sys.executable, "-m", "goldset", *args], capture_output=True, text=True, check=False
    )


def judge_every_pair(db: Path, port: int) -> dict:
    """``goldset judge`` on every pooled pair; its summary (a resumed run judges what is left)."""
    with (
        tempfile.TemporaryDirectory() as folder,
        llama_server(port, Path(folder) / "log") as base_url,
    ):
        started = time.monotonic()
        done = goldset(
            "judge", "--db", str(db), "--base-url", base_url, "--model", MODEL,
            "--response-format", "json-object-schema", "--concurrency", "1",
            "--timeout", "300", "--json",
        )  # fmt: skip
        if done.returncode not in (0, 1):
            raise SystemExit(done.stderr)
        return {**json.loads(done.stdout), "wall_seconds": round(time.monotonic() - started)}


def end_to_end(db: Path, sample: int) -> dict:
    """The commands a user runs: draw the sample, eval and compare with --labels ppi."""
    bm25, tfidf = (str(CRANFIELD / "runs" / f"{name}.trec") for name in RUNS)
    drawn = goldset("sample", "--db", str(db), "--random", "--budget", str(sample), "--json")
    evaluated = goldset(
        "eval", "--db", str(db), "--run", bm25, "--labels", "ppi", "--judge", MODEL, "--json"
    )
    compared = goldset(
        "compare", "--db", str(db), "--baseline", bm25, "--candidate", tfidf,
        "--labels", "ppi", "--judge", MODEL, "--gate", "--json",
    )  # fmt: skip
    for step in (drawn, evaluated):
        if step.returncode != 0:
            raise SystemExit(step.stderr)
    return {
        "eval": json.loads(evaluated.stdout)["ppi"],
        "compare": json.loads(compared.stdout)["ppi"],
        "gate": json.loads(compared.stdout)["gate"]["verdict"],
        "gate_exit": compared.returncode,
    }


def spread(db: Path, sample: int, draws: int) -> list[list[object]]:
    """Per metric of bm25: coverage, widths, λ and effective n over ``draws`` samples."""
    run = read_run(CRANFIELD / "runs" / f"{RUNS[0]}.trec")
    rows = []
    with Store(db) as store:
        truth = build_report(golden_from_records(store.golden_records()), run, METRICS, bootstrap=0)
        judge = store.machine_judgments_frame(MODEL)
        figures = []
        for seed in range(draws):
            store.draw_sample("random", seed=seed, budget=sample)
            figures.append(ppi_report(store, run, judge, METRICS)["all"])
    for metric in METRICS:
        true_mean = truth["metrics"][metric]["mean"]
        each = [figure[metric] for figure in figures]

        def share(low: str, high: str, each: list[dict] = each, true_mean: float = true_mean):
            return np.mean([f[low] <= true_mean <= f[high] for f in each])

        width = np.mean([f["high"] - f["low"] for f in each])
        human_width = np.mean([f["human_high"] - f["human_low"] for f in each])
        rows.append(
            [
                metric,
                f"{true_mean:.3f}",
                f"{share('low', 'high'):.3f}",
                f"{share('human_low', 'human_high'):.3f}",
                f"{width:.3f}",
                f"{human_width:.3f}",
                f"{width / human_width:.2f}",
                f"{np.mean([f['weight'] for f in each]):.2f}",
                f"{np.mean([f['effective_n'] or 0 for f in each]):.1f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("bench/out/ppi-real-judge.db"))
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--sample", type=int, default=15)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--port", type=int, default=8089)
    args = parser.parse_args()
    if not args.db.exists():
        args.db.parent.mkdir(parents=True, exist_ok=True)
        pairs = build(args.db, queries=args.queries, depth=args.depth)
        print(f"{pairs} pooled pairs of {args.queries} queries graded from the qrels")
    judged = judge_every_pair(args.db, args.port)
    print(json.dumps({k: judged[k] for k in judged if k != "failures"}, indent=1))
    print(json.dumps(end_to_end(args.db, args.sample), indent=1))
    headers = ["metric", "truth", "coverage PPI", "coverage humans", "width PPI"]
    headers += ["width humans", "ratio", "mean λ", "effective n"]
    print(f"bm25, {args.sample} of {args.queries} queries sampled, {args.draws} draws:")
    print(format_table(headers, spread(args.db, args.sample, args.draws)))


if __name__ == "__main__":
    main()
