"""Does a PPI++ CI (eval.ppi) hold the true figure, and how much narrower is it? A seeded study
on Cranfield's full relevance judgements.

The truth is each query's MRR@10 and hit@10 (and the paired MRR@10 delta bm25 − tfidf-title)
from eval on the full qrels (relevant: grade ≥ 1), averaged over all 225 queries. A simulated
machine judge labels every (query, doc) pair of the pool (the top 10 of both runs): each
pair's relevance is flipped with one error rate, chosen so that the expected Cohen's kappa
against the qrels on the pool is the cell's (0, 0.3, 0.6, 0.8; at 0 each label is flipped
with probability 1/2: a useless judge, its labels independent of the truth); its per-query
figures come from its own labels. The humans are the qrels on a uniform random sample of n
queries. Each draw takes a fresh judge and a fresh sample; per cell (metric, kappa, n) the
table gives how often the 95% CI held the truth, PPI's and the humans-only one on the same
sample, their mean widths, the mean power-tuning λ and effective number of human queries
(eval.ppi's guarded interval by default, ``--interval normal`` for PPI++'s).

The sample is drawn from the 225 queries whose mean is the truth, while the CIs are for
queries like them (no finite-population correction): with 100 of 225 drawn, a 95% CI holds
that truth about 99% of the time even when exact. Uniform samples only: the simulated judge
flips binary labels and has no grade at the edge of relevance, the uncertainty an active
sample is drawn by (labeler/store/sampling.py), so it would draw uniformly too.

    python bench/ppi_coverage.py                       # the README's table ("Label less")
    python bench/ppi_coverage.py --draws 2000 --kappas 0.8 --samples 50
    python bench/ppi_coverage.py --interval normal     # PPI++'s own interval, for comparison
"""

from __future__ import annotations

import argparse
import csv
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from goldset.eval.metrics import per_query_values, rank_run, reciprocal_of
from goldset.eval.ppi import INTERVALS, ppi_mean
from goldset.eval.ranking import NOT_RANKED
from goldset.eval.readers import golden_from_records, read_run

CRANFIELD = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "cranfield"
RUNS = ("bm25", "tfidf-title")
DEPTH = 10
METRICS = ("mrr@10", "hit@10", "Δmrr@10")  # Δ: bm25 − tfidf-title, paired per query
KAPPAS = (0.0, 0.3, 0.6, 0.8)
SAMPLES = (25, 50, 100)


@dataclass(frozen=True)
class Collection:
    """Cranfield as the study needs it: the pool of (query, doc) pairs, their true relevance,
    each run's top 10 as pool indices (−1: no doc), and the true per-query figures."""

    relevant: np.ndarray  # (pairs,) bool
    top: dict[str, np.ndarray]  # run → (queries, DEPTH) pool index
    truth: dict[str, np.ndarray]  # metric → (queries,) per-query value


def load(folder: Path = CRANFIELD) -> Collection:
    """Read the qrels and runs; the truth from eval, checked against the pool's top 10."""
    judged = _qrels(folder / "qrels.tsv")
    golden = golden_from_records(
        {"query_id": query_id, "status": "done", "answerable": True, "mode": "full",
         "judgments": grades}
        for query_id, grades in judged.items()
    )  # fmt: skip
    query_ids = list(judged)
    pool: dict[tuple[str, str], int] = {}
    top, per_run = {}, {}
    for name in RUNS:
        run = read_run(folder / "runs" / f"{name}.trec", name)
        ranking = rank_run(golden, run, ["mrr@10", "hit@10"])
        values = per_query_values(ranking, ["mrr@10", "hit@10"])
        order = {query_id: row for row, query_id in enumerate(values.query_ids)}
        per_run[name] = values.values[[order[query_id] for query_id in query_ids]]
        top[name] = _top_pairs(folder / "runs" / f"{name}.trec", query_ids, pool)
    relevant = np.zeros(len(pool), dtype=bool)
    for (query_id, doc_id), index in pool.items():
        relevant[index] = judged[query_id].get(doc_id, 0) >= 1
    truth = {
        "mrr@10": per_run["bm25"][:, 0],
        "hit@10": per_run["bm25"][:, 1],
        "Δmrr@10": per_run["bm25"][:, 0] - per_run["tfidf-title"][:, 0],
    }
    collection = Collection(relevant, top, truth)
    # The pool's top 10 must give eval's own figures, or the judge's would be off.
    from_pool = figures(collection, relevant[None, :])
    for metric, values in truth.items():
        assert np.allclose(from_pool[metric][0], values), metric
    return collection


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id → {doc id: grade} from a BEIR qrels file (with its header)."""
    judged: dict[str, dict[str, int]] = {}
    with path.open(newline="") as lines:
        for row in csv.DictReader(lines, delimiter="\t"):
            judged.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return judged


def _top_pairs(path: Path, query_ids: list[str], pool: dict[tuple[str, str], int]) -> np.ndarray:
    """The run's top DEPTH per query in trec_eval's order (score descending, ties by doc id
    descending) as pool indices, adding new pairs to ``pool``; −1 past a short list."""
    results: dict[str, list[tuple[float, str]]] = {}
    for line in path.read_text().splitlines():
        query_id, _, doc_id, _, score, _ = line.split()
        results.setdefault(query_id, []).append((float(score), doc_id))
    top = np.full((len(query_ids), DEPTH), -1, dtype=np.int64)
    for row, query_id in enumerate(query_ids):
        ranked = sorted(results.get(query_id, []), reverse=True)[:DEPTH]
        for column, (_, doc_id) in enumerate(ranked):
            top[row, column] = pool.setdefault((query_id, doc_id), len(pool))
    return top


def figures(collection: Collection, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Per-query figures under relevance ``labels`` (draws, pairs): metric → (draws, queries)."""
    rr = {}
    hits = None
    for name, top in collection.top.items():
        relevant = np.where(top >= 0, labels[:, np.maximum(top, 0)], False)  # (draws, q, DEPTH)
        found = relevant.any(axis=2)
        first = np.where(found, relevant.argmax(axis=2) + 1, NOT_RANKED)
        rr[name] = reciprocal_of(first)
        if name == "bm25":
            hits = found.astype(np.float64)
    return {"mrr@10": rr["bm25"], "hit@10": hits, "Δmrr@10": rr["bm25"] - rr["tfidf-title"]}


def error_rate(relevant: np.ndarray, kappa: float) -> float:
    """The flip rate e (both ways) whose expected Cohen's kappa against ``relevant`` is
    ``kappa``: observed agreement 1 − e against chance agreement from the two label rates."""

    def expected_kappa(rate: float) -> float:
        share = relevant.mean()
        judged = share * (1 - rate) + (1 - share) * rate
        chance = share * judged + (1 - share) * (1 - judged)
        return (1 - rate - chance) / (1 - chance)

    low, high = 0.0, 0.5  # kappa falls from 1 to 0 over this range
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if expected_kappa(middle) > kappa else (low, middle)
    return (low + high) / 2


def study(
    collection: Collection,
    *,
    draws: int = 500,
    kappas: tuple[float, ...] = KAPPAS,
    samples: tuple[int, ...] = SAMPLES,
    metrics: tuple[str, ...] = METRICS,
    seed: int = 0,
    interval: str = "guarded",
) -> list[dict]:
    """One row per (metric, kappa, n): coverage and mean widths of PPI and humans-only CIs."""
    rng = np.random.default_rng(seed)
    queries = len(collection.truth["mrr@10"])
    rows = []
    for kappa in kappas:
        rate = error_rate(collection.relevant, kappa)
        flips = rng.random((draws, len(collection.relevant))) < rate
        judge = figures(collection, collection.relevant[None, :] ^ flips)
        for n in samples:
            sampled = rng.random((draws, queries)).argsort(axis=1)[:, :n]
            for metric in metrics:
                truth = collection.truth[metric]
                estimates = [
                    ppi_mean(
                        truth[rows_],
                        judge[metric][draw, rows_],
                        judge[metric][draw],
                        interval=interval,
                    )
                    for draw, rows_ in enumerate(sampled)
                ]
                rows.append(_cell(metric, kappa, n, float(truth.mean()), estimates))
    return rows


def _cell(metric: str, kappa: float, n: int, truth: float, estimates: list) -> dict:
    """A cell's row: how often each CI held ``truth``, and the CIs' mean widths."""
    ppi = np.array([(e.low, e.high) for e in estimates])
    human = np.array([(e.human_low, e.human_high) for e in estimates])
    return {
        "metric": metric,
        "kappa": kappa,
        "n": n,
        "draws": len(estimates),
        "coverage": float(((ppi[:, 0] <= truth) & (truth <= ppi[:, 1])).mean()),
        "human_coverage": float(((human[:, 0] <= truth) & (truth <= human[:, 1])).mean()),
        "width": float((ppi[:, 1] - ppi[:, 0]).mean()),
        "human_width": float((human[:, 1] - human[:, 0]).mean()),
        "weight": float(np.mean([e.weight for e in estimates])),
        "effective_n": float(np.mean([e.effective_n for e in estimates])),
    }


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| metric | kappa | n | coverage PPI | coverage humans | width PPI | width humans "
        "| mean λ | effective n |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['metric']} | {row['kappa']} | {row['n']} | {row['coverage']:.3f} "
            f"| {row['human_coverage']:.3f} | {row['width']:.3f} | {row['human_width']:.3f} "
            f"| {row['weight']:.2f} | {row['effective_n']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Run the study and print its table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--kappas", default=",".join(map(str, KAPPAS)))
    parser.add_argument("--samples", default=",".join(map(str, SAMPLES)))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interval", choices=INTERVALS, default="guarded")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = study(
        load(),
        draws=args.draws,
        kappas=tuple(float(kappa) for kappa in args.kappas.split(",")),
        samples=tuple(int(n) for n in args.samples.split(",")),
        seed=args.seed,
        interval=args.interval,
    )
    print(json.dumps(rows, indent=1) if args.json else table(rows))


if __name__ == "__main__":
    main()
