"""Seeded random qrels and runs full of the cases where metric code goes wrong.

Scores are rounded to one decimal (many ties, so the doc_id tie-break decides ranks), doc
ids differ only in byte order or case (``d9`` > ``d10``, ``Doc7`` < ``doc7``, ``9`` vs
``09``), lists are often shorter than the cutoffs, some golden queries are missing from
the run, some have only grade-0 judgements, and the run answers queries nobody labelled.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

# Ids whose order as numbers, as case-folded text, or as bytes all differ.
DOC_IDS = [f"d{number}" for number in range(1, 25)] + [
    "D9", "d09", "9", "10", "09", "Doc7", "doc7", "dé", "dz", "d-1", "d_1",
]  # fmt: skip
QUERY_IDS = [f"q{number}" for number in range(1, 40)] + ["7", "07", "10", "9"]
GRADES = [0, 0, 0, 1, 2, 3]
MAX_LIST_LENGTH = 15


@dataclass(frozen=True)
class TrecCollection:
    """A golden set and a run as dicts (for pytrec_eval) that can be written as TREC files.

    ``qrels`` holds every golden query and its judgements; ``run`` holds each answered query's
    docs in file order (deliberately not the ranking), with scores that survive a text round trip.
    """

    qrels: dict[str, dict[str, int]]
    run: dict[str, dict[str, float]]

    def write(self, folder: Path) -> tuple[Path, Path]:
        """Write ``qrels.txt`` (TREC qrels) and ``run.trec`` (TREC run); return both paths.

        The rank column is the line's position, which disagrees with the scores: readers
        must ignore it, as trec_eval does.
        """
        qrels_path, run_path = folder / "qrels.txt", folder / "run.trec"
        qrels_lines = [
            f"{query_id} 0 {doc_id} {grade}\n"
            for query_id, judgements in self.qrels.items()
            for doc_id, grade in judgements.items()
        ]
        run_lines = [
            f"{query_id} Q0 {doc_id} {position} {score!r} random\n"
            for query_id, scores in self.run.items()
            for position, (doc_id, score) in enumerate(scores.items(), start=1)
        ]
        qrels_path.write_text("".join(qrels_lines), encoding="utf-8")
        run_path.write_text("".join(run_lines), encoding="utf-8")
        return qrels_path, run_path

    def missing_from_run(self) -> set[str]:
        """Golden queries the run does not answer."""
        return set(self.qrels) - set(self.run)


def random_collection(seed: int) -> TrecCollection:
    """A reproducible collection: the same seed always gives the same qrels and run."""
    rng = random.Random(seed)
    golden_ids = rng.sample(QUERY_IDS, 30)
    # The first golden queries are the edge cases, so every seed has each of them.
    missing, all_zero, all_tied = golden_ids[:3], golden_ids[3:6], golden_ids[6:9]
    unlabelled = [query_id for query_id in QUERY_IDS if query_id not in golden_ids][:4]
    qrels, run = {}, {}
    for query_id in golden_ids + unlabelled:
        ranked = rng.sample(DOC_IDS, rng.randint(1, MAX_LIST_LENGTH))
        if query_id not in missing:
            run[query_id] = _scores(rng, ranked, tied=query_id in all_tied)
        if query_id in golden_ids:
            grades = [0] if query_id in all_zero else GRADES
            qrels[query_id] = _judgements(rng, ranked, grades)
    return TrecCollection(qrels, run)


def _scores(rng: random.Random, doc_ids: list[str], tied: bool) -> dict[str, float]:
    """Scores rounded to one decimal (or one score for all): ties everywhere."""
    if tied:
        return dict.fromkeys(doc_ids, 1.5)
    return {doc_id: round(rng.uniform(-0.5, 2.0), 1) for doc_id in doc_ids}


def _judgements(rng: random.Random, ranked: list[str], grades: list[int]) -> dict[str, int]:
    """Judge some retrieved docs and some the run missed; at least one (qrels need a line)."""
    unretrieved = [doc_id for doc_id in DOC_IDS if doc_id not in ranked]
    candidates = ranked + rng.sample(unretrieved, min(3, len(unretrieved)))
    judged = [doc_id for doc_id in candidates if rng.random() < 0.6] or candidates[:1]
    return {doc_id: rng.choice(grades) for doc_id in judged}
