"""Readers for golden sets (golden JSONL, TREC qrels, BEIR qrels.tsv) and runs (TREC, JSONL).

Everything is read into two plain shapes, :class:`Golden` and :class:`Run`, so that the
metrics never care where their input came from. Bad input raises :class:`InputError`,
whose message names the file, the line and the field. How TREC text is read (blank lines,
comments, whitespace, numbers) is set out once in :mod:`eval.trec`; the rules for JSON
values and the golden-set record in :mod:`eval.validation`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from eval import trec, validation
from eval.columns import fingerprints
from eval.errors import InputError
from eval.trec import Layout, Rows
from eval.validation import GOLDEN_STATUSES, decoded_lines, json_lines

__all__ = [
    "GOLDEN_STATUSES",
    "Golden",
    "InputError",
    "Run",
    "decoded_lines",
    "golden_from_records",
    "json_lines",
    "read_golden",
    "read_run",
    "run_from_frame",
]

QUERY_COLUMNS = ("query_id", "query", "slice", "status", "answerable", "mode")
# Files up to this size are read by the plain parser, larger ones by Arrow's fast path or
# general parser; every parser gives the same reading (eval/trec.py). Measured with Arrow
# already imported: 4 KB, plain 0.38 ms, fast 0.42 ms; 16 KB, plain 1.1 ms, fast 0.47 ms.
PLAIN_MAX_BYTES = 1 << 12
Parser = Literal["auto", "fast", "general", "plain"]


@dataclass(frozen=True)
class Golden:
    """A golden set: one row per query in ``queries``, one row per judged doc in ``judgments``.

    ``queries`` columns: query_id, query, slice ("" when none), status ("done", "skipped" or
    "pending"), answerable (bool) and mode ("first_hit", "full", or "" when unknown).
    ``judgments`` columns: query_id, doc_id, grade (int64); unjudged documents are absent.
    """

    queries: pd.DataFrame
    judgments: pd.DataFrame

    @cached_property
    def version(self) -> str:
        """A content hash of the labels: which queries count how, and every judgement.

        Row hashes are summed, so the order in which the labels were read does not matter.
        Computed once, on first use: the frames are not to be changed afterwards.
        """
        queries = self.queries[["query_id", "slice", "status", "answerable"]]
        digests = [_rows_digest(frame) for frame in (queries, self.judgments)]
        return hashlib.sha256(repr(digests).encode()).hexdigest()[:16]

    def scored_query_ids(self) -> np.ndarray:
        """Ids of the queries that metrics are averaged over: answerable and done."""
        scored = (self.queries["status"] == "done") & self.queries["answerable"]
        return self.queries.loc[scored, "query_id"].to_numpy(dtype=object)


@dataclass(frozen=True)
class Run:
    """A system's results, one row per retrieved doc, in file order.

    Per row: ``query_index`` (position in ``query_ids``), ``doc_ids`` (Arrow strings) and
    ``scores``. ``query_ids`` lists every query the run answered, including those where it
    returned nothing (an empty JSONL ``results`` list: the system abstained).
    """

    query_ids: np.ndarray
    query_index: np.ndarray
    doc_ids: pa.Array | pa.ChunkedArray
    scores: np.ndarray
    name: str

    @cached_property
    def results(self) -> pd.DataFrame:
        """The rows as a DataFrame of query_id, doc_id and score (built on first use)."""
        query_id = pa.array(self.query_ids, pa.large_string()).take(pa.array(self.query_index))
        return pa.table(
            {
                "query_id": query_id,
                "doc_id": self.doc_ids.cast(pa.large_string()),
                "score": self.scores,
            }
        ).to_pandas()


def _rows_digest(frame: pd.DataFrame) -> int:
    """Sum over rows of a 64-bit hash of the row's values (as text): independent of order."""
    row = np.zeros(len(frame), dtype=np.uint64)
    for name in frame.columns:
        row = (row ^ fingerprints(_as_text(frame[name]))) * np.uint64(0x9E3779B97F4A7C15)
    row ^= row >> np.uint64(29)  # mix the high bits down before summing
    row *= np.uint64(0xBF58476D1CE4E5B9)
    return int(row.sum(dtype=np.uint64))


def _as_text(column: pd.Series) -> pa.Array:
    """The column's values as Arrow strings, spelled as Python's ``str`` spells them."""
    if pd.api.types.is_integer_dtype(column.dtype):
        # Arrow writes integers as str() does, and much faster than pandas.
        return pc.cast(pa.array(column), pa.large_string())
    return pa.array(column.astype(str)).cast(pa.large_string())


# --- golden sets -------------------------------------------------------------------------


def read_golden(path: str | Path, parser: Parser = "auto") -> Golden:
    """Read a golden set from golden-set JSONL, TREC qrels or BEIR ``qrels.tsv`` (sniffed).

    ``parser`` picks the TREC text parser (see :func:`read_run`); all give the same result.
    A file with no judgement (or no query) at all is refused: it would make every figure 0.
    """
    path = Path(path)
    first = _first_content_line(path)
    if first.startswith("{"):
        golden = golden_from_records(json_lines(path), source=str(path))
        if golden.queries.empty:
            raise InputError(str(path), None, None, "no queries in the file")
        return golden
    beir = first.split("\t")[0].strip().lower() in ("query-id", "query_id", "qid")
    rows = read_rows(path, trec.BEIR_QRELS if beir else trec.QRELS, parser)
    if len(rows.values) == 0:
        raise InputError(str(path), None, None, "no judgements in the file")
    return _golden_from_rows(rows, str(path))


def golden_from_records(records: Iterable[dict], source: str = "<records>") -> Golden:
    """Build a :class:`Golden` from golden-set JSONL objects (see DESIGN.md, "Golden set"),
    each checked by :func:`eval.validation.golden_record` (as the importer checks them).

    ``records`` may also yield ``(line_number, record)`` pairs, so that errors name the line.
    """
    query_rows, judgment_rows = [], []
    seen: set[str] = set()
    for position, item in enumerate(records, start=1):
        line, record = item if isinstance(item, tuple) else (position, item)
        checked = validation.golden_record(record, (source, line))
        if checked.query_id in seen:
            raise InputError(source, line, "query_id", f"duplicate query {checked.query_id!r}")
        seen.add(checked.query_id)
        query_rows.append(
            {
                "query_id": checked.query_id,
                "query": checked.query,
                "slice": checked.slice,
                "status": checked.status,
                "answerable": checked.answerable,
                "mode": checked.mode or "",
            }
        )
        for doc_id, grade in checked.judgments.items():
            judgment_rows.append((checked.query_id, doc_id, grade))
    queries = pd.DataFrame(query_rows, columns=list(QUERY_COLUMNS))
    queries["answerable"] = queries["answerable"].astype(bool)
    judgments = pd.DataFrame(judgment_rows, columns=["query_id", "doc_id", "grade"])
    return Golden(queries, judgments.astype({"grade": "int64"}))


def _golden_from_rows(rows: Rows, source: str) -> Golden:
    """A golden set from plain judgements: every query is done and answerable, no slice."""
    rows.check_no_repeated_docs(source)
    judgments = pa.table(
        {
            "query_id": rows.query_id_column(),
            "doc_id": rows.doc_ids.cast(pa.large_string()),
            "grade": rows.values.astype(np.int64, copy=False),
        }
    ).to_pandas()
    queries = pd.DataFrame(
        {
            "query_id": rows.query_ids,
            "query": "",
            "slice": "",
            "status": "done",
            "answerable": True,
            "mode": "",
        }
    )
    return Golden(queries, judgments)


# --- runs --------------------------------------------------------------------------------


def read_run(path: str | Path, name: str | None = None, parser: Parser = "auto") -> Run:
    """Read a run: TREC (``qid Q0 docno rank score tag``, extra fields ignored) or JSONL.

    JSONL lines look like ``{"query_id": "q1", "results": [{"doc_id": "d", "score": 1.5}]}``;
    an empty ``results`` list means the system abstained on that query. The TREC rank
    column is ignored, as in trec_eval. A doc repeated within one query is an error.

    ``parser`` picks how TREC text is parsed: ``"plain"`` (pure Python), ``"general"``
    (Arrow, any layout), ``"fast"`` (Arrow's CSV reader where the layout is clean, else the
    general parser) or ``"auto"`` (plain up to ``PLAIN_MAX_BYTES``, fast beyond). They give
    the same run, or the same refusal, on every file.
    """
    path = Path(path)
    name = name or path.stem
    if _first_content_line(path).startswith("{"):
        return _read_jsonl_run(path, name)
    return _run_from_rows(read_rows(path, trec.RUN, parser), name, str(path))


def read_rows(path: Path, layout: Layout, parser: Parser = "auto") -> Rows:
    """The rows of a TREC text file, read by the chosen parser (see :func:`read_run`)."""
    if parser == "auto":
        parser = "plain" if path.stat().st_size <= PLAIN_MAX_BYTES else "fast"
    if parser == "plain":
        return trec.read_plain(path, layout)
    if parser == "fast":
        rows = trec.read_fast(path, layout, _first_content_line(path))
        if rows is not None:
            return rows
    elif parser != "general":
        raise ValueError(f"unknown parser {parser!r}: auto, fast, general or plain")
    return trec.read_general(path, layout)


def run_from_frame(
    frame: pd.DataFrame, name: str, query_ids: Iterable[str] | None = None, source: str = "<frame>"
) -> Run:
    """Wrap a DataFrame of query_id, doc_id, score as a :class:`Run`, checking duplicates.

    ``query_ids`` may name queries the run answered with no results (it abstained).
    """
    lines = np.arange(1, len(frame) + 1)
    ids = frame[["query_id", "doc_id"]].astype(str).set_axis(lines)
    rows = Rows.from_frame(ids, frame["score"].astype("float64"))
    return _run_from_rows(rows, name, source, query_ids)


def _run_from_rows(
    rows: Rows, name: str, source: str, query_ids: Iterable[str] | None = None
) -> Run:
    """Check the rows: every score a number, no doc repeated. ``query_ids`` (when given)
    come first in the run's query ids, the rows' other queries after them."""
    scores = rows.values.astype(np.float64, copy=False)
    bad_score = np.isnan(scores)
    if bad_score.any():
        raise InputError(source, rows.line(int(np.argmax(bad_score))), "score", "not a number")
    rows.check_no_repeated_docs(source)
    known, query_index = rows.query_ids, rows.query_index
    if query_ids is not None:
        given = pd.Index(list(query_ids), dtype=object)
        unlisted = rows.query_ids[given.get_indexer(rows.query_ids) < 0]
        known = np.concatenate([given.to_numpy(dtype=object), unlisted])
        query_index = pd.Index(known).get_indexer(rows.query_ids)[query_index]
    return Run(np.asarray(known, dtype=object), query_index, rows.doc_ids, scores, name)


def _read_jsonl_run(path: Path, name: str) -> Run:
    query_ids, rows, seen = [], [], set()
    for line, record in json_lines(path):
        where = (str(path), line)
        if not isinstance(record, dict):
            raise InputError(*where, None, "expected a JSON object")
        query_id = validation.identifier(record.get("query_id"), "query_id", where)
        results = record.get("results")
        if not isinstance(results, list):
            raise InputError(*where, "results", "must be a list (empty = abstained)")
        if query_id in seen:
            raise InputError(*where, "query_id", f"query {query_id!r} given twice")
        seen.add(query_id)
        query_ids.append(query_id)
        rows.extend(_jsonl_results(query_id, results, where))
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "line"])
    frame = frame.set_index("line").astype({"query_id": str, "doc_id": str, "score": "float64"})
    return _run_from_rows(Rows.from_frame(frame, frame["score"]), name, str(path), query_ids)


def _jsonl_results(query_id: str, results: list, where: tuple[str, int]) -> Iterator[tuple]:
    """Rows for one JSONL query; without scores, the list order is the ranking. A score may
    be ±inf (as in a TREC run), never NaN."""
    has_score = [isinstance(result, dict) and "score" in result for result in results]
    if any(has_score) and not all(has_score):
        raise InputError(*where, "results.score", "give a score for all results or none")
    for position, result in enumerate(results):
        field = f"results[{position}]"
        if not isinstance(result, dict):
            raise InputError(*where, field, "expected an object")
        doc_id = validation.identifier(result.get("doc_id"), f"{field}.doc_id", where)
        if has_score[position]:
            score = validation.number(result["score"], f"{field}.score", where, finite=False)
        else:
            score = float(len(results) - position)
        yield query_id, doc_id, score, where[1]


def _first_content_line(path: Path) -> str:
    with path.open("rb") as handle:
        for raw in handle:
            line = raw.decode("utf-8", errors="replace").strip().lstrip("\ufeff")
            if line and not line.startswith("#"):
                return line
    return ""
