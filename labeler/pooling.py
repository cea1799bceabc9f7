"""Depth-k pooling of several systems' runs, fused display order, and the first-hit schedule.

Pure functions, no database: :class:`goldset.labeler.store.Store` reads the inputs with them and
keeps the results. A *ranking* is one system's list for one query, best first, as a list of doc ids.

The first-hit schedule is what makes labelling a pool cheap: a query is complete once, for
every pooled run, its first relevant doc within depth k is known (every doc above it judged
not relevant) or the run has none in its top k. Then MRR@k and hit@k (k' <= k) are exact for
every pooled run, although most of the pool stays unjudged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import numpy as np

from goldset.eval.columns import strings_column
from goldset.eval.ranking import run_order
from goldset.eval.readers import InputError, Run, json_lines, read_run
from goldset.eval.validation import checked_id, id_character, identifier, optional_text

RRF_K = 60  # the constant of Cormack et al.'s reciprocal-rank fusion


@dataclass(frozen=True)
class CorpusDoc:
    """One document of a BEIR ``corpus.jsonl``."""

    doc_id: str
    title: str
    text: str
    metadata: dict
    line: int


@dataclass(frozen=True)
class PoolQuery:
    """One query of a BEIR ``queries.jsonl``."""

    query_id: str
    query: str
    slice: str
    metadata: dict
    line: int


@dataclass(frozen=True)
class PooledRun:
    """A run cut to the pool depth: per query, its top ``depth`` docs as ``(doc_id, score)``."""

    name: str
    path: str
    sha256: str
    depth: int
    rankings: dict[str, list[tuple[str, float]]]


def fusion_scores(rankings: Mapping[str, Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal-rank fusion: ``score(d) = sum over rankings of 1 / (k + rank of d)``."""
    scores: dict[str, float] = {}
    for ranking in rankings.values():
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
    return scores


def fuse(
    pools: Mapping[str, Mapping[str, Sequence[str]]], k: int = RRF_K
) -> dict[str, list[tuple[str, float]]]:
    """Each query's candidates in fused order: the union of its runs' rankings (``pools``:
    query_id -> run -> ranking) by reciprocal-rank fusion, so no system is favoured, as
    (doc_id, fused score) best first.

    The fused scores are ordered as eval orders a run (:func:`goldset.eval.ranking.run_order`,
    every query at once): equal scores by doc id descending, so the order is deterministic.
    With one ranking the fused order is that ranking.
    """
    docs: list[str] = []
    scores: list[float] = []
    counts = []
    for rankings in pools.values():
        fused = fusion_scores(rankings, k)
        docs += fused
        scores += fused.values()
        counts.append(len(fused))
    run = Run(
        query_ids=np.array(list(pools), dtype=object),
        query_index=np.repeat(np.arange(len(counts), dtype=np.int64), counts),
        doc_ids=strings_column(docs),
        scores=np.array(scores, dtype=np.float64),
        name="fused",
    )
    # run_order keeps every row, query after query as given: each query's share in turn.
    ordered = [(docs[row], scores[row]) for row in run_order(run).row.tolist()]
    ends = accumulate(counts)
    return {
        query_id: ordered[end - count : end]
        for query_id, count, end in zip(pools, counts, ends, strict=True)
    }


def run_settled(ranking: Sequence[str], grades: Mapping[str, int], threshold: int) -> bool:
    """True when the ranking's first relevant doc is known, or it has none.

    Walking down the ranking: a relevant judgement settles it; an unjudged doc before any
    relevant one leaves it open; a ranking judged non-relevant to the end is settled (no hit).
    """
    for doc_id in ranking:
        grade = grades.get(doc_id)
        if grade is None:
            return False
        if grade >= threshold:
            return True
    return True


def holes(rankings: Mapping[str, Sequence[str]], grades: Mapping[str, int], threshold: int) -> int:
    """How many docs are left to judge before every ranking is settled (see :func:`run_settled`).

    A *hole* is an unjudged doc that an unsettled ranking puts above its first relevant
    judged doc (or anywhere in it, when none is judged relevant): until it is judged, that
    run's MRR@k and hit@k on the query are only lower bounds. A doc that several rankings
    leave open counts once (one judgement fills it for all).
    """
    open_docs: set[str] = set()
    for ranking in rankings.values():
        for doc_id in ranking:
            grade = grades.get(doc_id)
            if grade is not None and grade >= threshold:
                break
            if grade is None:
                open_docs.add(doc_id)
    return len(open_docs)


def next_to_judge(
    rankings: Mapping[str, Sequence[str]],
    grades: Mapping[str, int],
    threshold: int,
    display_order: Sequence[str] = (),
) -> str | None:
    """The doc to judge next in first-hit mode over a pool, or None when every run is settled.

    Each unsettled run's *frontier* is its first unjudged doc. The chosen doc is the frontier
    at the smallest rank (the cheapest way to settle a run: it may be relevant); ties go to
    the doc that is the frontier of the most runs, then to the earlier doc in ``display_order``.
    With one ranking this is simply the first unjudged doc from the top.
    """
    frontiers: dict[str, list[int]] = {}
    for ranking in rankings.values():
        if run_settled(ranking, grades, threshold):
            continue
        rank, doc_id = next((i, d) for i, d in enumerate(ranking) if d not in grades)
        frontiers.setdefault(doc_id, []).append(rank)
    if not frontiers:
        return None
    shown = {doc_id: position for position, doc_id in enumerate(display_order)}
    return min(
        frontiers,
        key=lambda d: (min(frontiers[d]), -len(frontiers[d]), shown.get(d, len(shown)), d),
    )


# --- reading the pooling inputs -------------------------------------------------------------------


def read_corpus(path: str | Path) -> Iterator[CorpusDoc]:
    """Yield the documents of a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``; extra keys
    are kept as metadata). A repeated ``_id`` is an error."""
    for line, doc_id, record in _records_by_id(path):
        where = (str(path), line)
        title = optional_text(record.get("title"), "title", where)
        text = optional_text(record.get("text"), "text", where)
        extra = {key: value for key, value in record.items() if key not in ("_id", "title", "text")}
        yield CorpusDoc(doc_id, title, text, extra, line)


def read_queries(path: str | Path) -> list[PoolQuery]:
    """Read a BEIR ``queries.jsonl`` (``_id``, ``text``, optional ``slice``; extra keys are
    kept as metadata). A repeated ``_id`` is an error."""
    queries: list[PoolQuery] = []
    for line, query_id, record in _records_by_id(path):
        where = (str(path), line)
        text = optional_text(record.get("text"), "text", where)
        if not text:
            raise InputError(str(path), line, "text", "required, a non-empty string")
        slice_name = optional_text(record.get("slice"), "slice", where)
        extra = {k: v for k, v in record.items() if k not in ("_id", "text", "slice")}
        queries.append(PoolQuery(query_id, text, slice_name, extra, line))
    return queries


def read_pooled_run(path: str | Path, depth: int) -> PooledRun:
    """Read a TREC (or JSONL) run and keep each query's top ``depth`` docs, queries in the
    run's order.

    The top is eval's (:func:`goldset.eval.ranking.run_order`: score descending, ties by doc
    id descending, as trec_eval); the rank column is ignored. So the pool holds exactly the
    docs that eval's ``@depth`` metrics see.
    """
    if depth < 1:
        raise ValueError(f"pool depth must be a positive integer, got {depth}")
    run = read_run(path)
    top = run.results.iloc[run_order(run, depth).row]
    rankings: dict[str, list[tuple[str, float]]] = {}
    for query_id, doc_id, score in top[["query_id", "doc_id", "score"]].itertuples(index=False):
        rankings.setdefault(query_id, []).append((doc_id, float(score)))
    _check_project_ids(path, rankings)
    return PooledRun(run.name, str(path), file_sha256(path), depth, rankings)


def _check_project_ids(path: str | Path, rankings: Mapping[str, list[tuple[str, float]]]) -> None:
    """Refuse a pooled id that a project cannot hold (eval.validation.checked_id), naming its
    line: a TREC run read as trec_eval reads it may hold a Unicode space inside an id."""
    for query_id, ranking in rankings.items():
        for doc_id, _ in ranking:
            for field, value in (("query_id", query_id), ("doc_id", doc_id)):
                if id_character(value) is not None:
                    checked_id(value, field, (str(path), line_of_doc(path, query_id, doc_id)))


def corpus_documents(docs: Iterable[CorpusDoc]) -> dict[str, tuple[int, str, dict]]:
    """A corpus's documents as the store's import takes documents (as
    :func:`goldset.labeler.importing.collect_documents` gives a tasks file's): doc_id -> (line, "",
    {title, text, metadata}), an empty title or text meaning none given."""
    return {
        doc.doc_id: (doc.line, "", {"title": doc.title, "text": doc.text, "metadata": doc.metadata})
        for doc in docs
    }


def corpus_beyond_tasks(
    corpus: Mapping[str, tuple[int, str, dict]],
    documents: dict[str, tuple[int, str, dict]],
    source: str,
) -> dict[str, tuple[int, str, dict]]:
    """The corpus documents that the tasks' ``documents`` do not name. One they name must agree
    with them (an InputError names its corpus line); its title or text fills what they left
    (their entry in ``documents`` is replaced, never changed: entries may share a dict)."""
    beyond = {}
    for doc_id, (line, _, doc) in corpus.items():
        if doc_id not in documents:
            beyond[doc_id] = (line, "", doc)
            continue
        named_line, prefix, named = documents[doc_id]
        for name in ("title", "text"):
            if doc[name] and named[name] and doc[name] != named[name]:
                problem = f"doc {doc_id!r} has a different {name} in the tasks file"
                raise InputError(source, line, name, problem)
        filled = {name: named[name] or doc[name] or None for name in ("title", "text")}
        documents[doc_id] = (named_line, prefix, {**named, **filled})
    return beyond


def line_of_doc(path: str | Path, query_id: str, doc_id: str) -> int | None:
    """The line of a run file that gives ``doc_id`` for ``query_id`` (for error messages)."""
    with Path(path).open("rb") as handle:
        for line, raw in enumerate(handle, start=1):
            # Split as the TREC readers do: on ASCII whitespace only (eval/trec.py).
            fields = [field.decode("utf-8", errors="replace") for field in raw.split()]
            if len(fields) >= 3 and fields[0] == query_id and fields[2] == doc_id:
                return line
    return None


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, to recognise a run that is pooled again."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _records_by_id(path: str | Path) -> Iterator[tuple[int, str, dict]]:
    """(line, ``_id``, record) of a BEIR JSONL file; a repeated ``_id`` is an error."""
    seen: dict[str, int] = {}
    for line, record in _records(path):
        record_id = identifier(record.get("_id"), "_id", (str(path), line))
        if record_id in seen:
            raise InputError(
                str(path), line, "_id", f"{record_id!r} repeats line {seen[record_id]}"
            )
        seen[record_id] = line
        yield line, record_id, record


def _records(path: str | Path) -> Iterator[tuple[int, dict]]:
    for line, record in json_lines(Path(path)):
        if not isinstance(record, dict):
            raise InputError(str(path), line, None, "expected a JSON object")
        yield line, record
