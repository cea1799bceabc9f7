"""The plain pytrec_eval script that bench/eval_speed.py times: what a user would write.

It imports pytrec_eval and the standard library only (no numpy, no pandas), so that its
start-up is pytrec_eval's own. Usage: ``python bench/pytrec_eval_script.py QRELS RUN``; it
prints one ``RESULT {...}`` line in eval_speed.py's format.
"""

import json
import resource
import sys
import time
from statistics import fmean

import pytrec_eval

MEASURES = {"recip_rank", "success.1,10", "P.10", "recall.10", "ndcg_cut.10"}
NAMES = {
    "hit@1": "success_1",
    "hit@10": "success_10",
    "recall@10": "recall_10",
    "precision@10": "P_10",
    "ndcg@10": "ndcg_cut_10",
}


def main(qrels_path: str, run_path: str) -> None:
    """Read with pytrec_eval's own parsers, evaluate, average; print the result line."""
    started = time.perf_counter()
    with open(qrels_path) as qrels_file, open(run_path) as run_file:
        qrels = pytrec_eval.parse_qrel(qrels_file)
        run = pytrec_eval.parse_run(run_file)
    read = time.perf_counter()
    per_query = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)
    values = list(per_query.values())
    means = {name: fmean(v[trec] for v in values) for name, trec in NAMES.items()}
    # trec_eval's recip_rank has no cutoff; the first relevant doc is within 10 iff RR >= 1/10
    means["mrr@10"] = fmean(v["recip_rank"] * (v["recip_rank"] >= 0.1) for v in values)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result = {
        "means": means,
        "queries_scored": len(per_query),
        "phases": {"read": read - started, "evaluate": time.perf_counter() - read},
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
