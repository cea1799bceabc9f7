"""A Cranfield project for calibrating a machine judge: a pool labelled by a simulated human.

    python bench/judge_cranfield.py --db bench/out/cranfield-judge.db

Pools bm25 and tfidf-title (``datasets/cranfield/runs`` in the shared data folder beside the
repository) at depth 10 over the Cranfield corpus, grade scale 0-4 as the qrels, full mode; a
simulated annotator ("qrels") grades every pooled pair from the qrels (a pair the qrels do not
list is 0). The queries get a slice by their length in words, ``short`` (at most the median,
17) or ``long``, so that calibration has slices to report. Then judge and calibrate with the
commands this script prints.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from collections import defaultdict
from pathlib import Path

from goldset.labeler.store import Store

CRANFIELD = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "cranfield"
RUNS = ("bm25", "tfidf-title")
SHORT_WORDS = 17  # the median query length: queries up to it are "short"


def qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR qrels.tsv as {query_id: {doc_id: grade}}."""
    judged: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open() as handle:
        next(handle)
        for query_id, doc_id, grade in csv.reader(handle, delimiter="\t"):
            judged[query_id][doc_id] = int(grade)
    return judged


def sliced_queries(source: Path, target: Path, limit: int | None = None) -> None:
    """The queries file with a ``slice`` by length (its first ``limit`` queries)."""
    with source.open() as lines, target.open("w") as out:
        for number, line in enumerate(lines):
            if limit is not None and number >= limit:
                break
            query = json.loads(line)
            query["slice"] = "short" if len(query["text"].split()) <= SHORT_WORDS else "long"
            out.write(json.dumps(query) + "\n")


def build(db: Path, queries: int | None = None, depth: int = 10) -> int:
    """Pool (the first ``queries`` queries, every one by default, at ``depth``) and label the
    project; returns the human judgements made."""
    grades = qrels(CRANFIELD / "qrels.tsv")
    runs = [CRANFIELD / "runs" / f"{name}.trec" for name in RUNS]
    judgements = 0
    with tempfile.TemporaryDirectory() as folder, Store(db) as store:
        query_file = Path(folder) / "queries.jsonl"
        sliced_queries(CRANFIELD / "queries.jsonl", query_file, queries)
        store.configure(max_grade=4, mode="full")
        store.pool(CRANFIELD / "corpus.jsonl", query_file, runs, depth)
        query_id = store.next_query("qrels")
        while query_id is not None:
            while (candidate := store.next_candidate(query_id, "qrels", mode="full")) is not None:
                grade = grades.get(query_id, {}).get(candidate["doc_id"], 0)
                store.judge(query_id, candidate["doc_id"], grade, "qrels", seconds=5.0, mode="full")
                judgements += 1
            if store.query_state(query_id, "qrels")["needs_verdict"]:
                store.mark(query_id, "miss", "qrels")  # relevant docs exist, not in the pool
            query_id = store.next_query("qrels")
    return judgements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("bench/out/cranfield-judge.db"))
    args = parser.parse_args()
    if args.db.exists():
        raise SystemExit(f"{args.db} exists: remove it or give another --db")
    args.db.parent.mkdir(parents=True, exist_ok=True)
    print(f"{build(args.db)} pooled pairs labelled from the qrels in {args.db}")
    runs = " ".join(f"--run {CRANFIELD / 'runs' / name}.trec" for name in RUNS)
    print(
        "next:\n"
        f"  goldset judge --db {args.db} --base-url http://127.0.0.1:8080/v1 "
        "--model gemma-3-270m --limit 300\n"
        f"  goldset calibrate --db {args.db} {runs} "
        f"--baseline {CRANFIELD / 'runs' / RUNS[0]}.trec "
        f"--candidate {CRANFIELD / 'runs' / RUNS[1]}.trec"
    )


if __name__ == "__main__":
    main()
