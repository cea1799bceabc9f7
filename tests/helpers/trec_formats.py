"""trec_eval's measure names and files, read independently of goldset's own readers.

The oracles (trec_eval's expected outputs, pytrec_eval) name measures ``P_10``,
``success_1``...; goldset names the same numbers ``precision@10``, ``hit@1``... These helpers
translate between the two and list every disagreement, so a failing test names the query,
the metric and both values.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

SHARED_MEASURE = re.compile(r"^(?:recip_rank|(?P<family>success|P|recall|ndcg_cut)_(?P<k>\d+))$")
GOLDSET_FAMILY = {"success": "hit", "P": "precision", "recall": "recall", "ndcg_cut": "ndcg"}


def goldset_metric(measure: str) -> str | None:
    """goldset's name for a trec_eval measure (``P_10`` -> ``precision@10``), None if not shared.

    trec_eval's ``recip_rank`` has no cutoff, so it is goldset's ``mrr`` (not ``mrr@k``).
    """
    match = SHARED_MEASURE.match(measure)
    if match is None:
        return None
    if match["family"] is None:
        return "mrr"
    return f"{GOLDSET_FAMILY[match['family']]}@{match['k']}"


def measure_family(measure: str) -> str | None:
    """The family of a shared measure (``ndcg_cut_10`` -> ``ndcg_cut``), None if not shared."""
    match = SHARED_MEASURE.match(measure)
    if match is None:
        return None
    return match["family"] or "recip_rank"


def read_trec_eval_output(path: Path) -> pd.DataFrame:
    """trec_eval's printed values as text: one row per query id (``all`` = the summary line).

    Lines are ``measure<TAB>qid<TAB>value``; values stay text so that they can be compared
    exactly as trec_eval printed them (``%6.4f``).
    """
    rows = [line.split("\t") for line in path.read_text().splitlines() if line.strip()]
    table = pd.DataFrame(rows, columns=["measure", "query_id", "value"])
    table["measure"] = table["measure"].str.strip()
    table["value"] = table["value"].str.strip()
    return table.pivot(index="query_id", columns="measure", values="value")


def printed_like_trec_eval(printed: str, value: float) -> bool:
    """True when ``value`` prints as trec_eval printed it (``%6.4f``: 4 decimals)."""
    return f"{value:.4f}" == printed


def read_qrels_dict(path: Path) -> dict[str, dict[str, int]]:
    """TREC qrels (``qid iter docno rel``) or BEIR qrels.tsv as {query: {doc: grade}}.

    A plain split-based parser, independent of goldset's readers, to feed pytrec_eval.
    """
    qrels: dict[str, dict[str, int]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    is_beir = lines[0].startswith("query-id")
    for line in lines[1:] if is_beir else lines:
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        query_id, doc_id, grade = fields if is_beir else (fields[0], fields[2], fields[3])
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return qrels


def read_run_dict(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run (``qid iter docno rank score tag [extra...]``) as {query: {doc: score}}."""
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            query_id, _, doc_id, _, score = line.split()[:5]
            run.setdefault(query_id, {})[doc_id] = float(score)
    return run


def mismatches(
    expected: pd.DataFrame, got: pd.DataFrame, same: Callable[[object, float], bool]
) -> list[str]:
    """One line per cell of ``expected`` that ``got`` lacks or that ``same`` rejects.

    Both tables are indexed by query id with goldset metric names as columns.
    """
    found = []
    for query_id, row in expected.iterrows():
        for metric, want in row.items():
            if query_id not in got.index or metric not in got.columns:
                found.append(f"query {query_id} {metric}: expected {want}, missing")
            elif not same(want, got.at[query_id, metric]):
                found.append(
                    f"query {query_id} {metric}: expected {want}, got {got.at[query_id, metric]!r}"
                )
    return found
