"""Readers for golden sets (golden JSONL, TREC qrels, BEIR qrels.tsv) and runs (TREC, JSONL).

Everything is read into two plain shapes, :class:`Golden` and :class:`Run`, so that the
metrics never care where their input came from. Bad input raises :class:`InputError`,
whose message names the file, the line and the field. How TREC text is read (blank lines,
comments, whitespace, numbers) is set out once in :mod:`goldset.eval.trec`; the rules for JSON
values and the golden-set record in :mod:`goldset.eval.validation`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np

from goldset.eval import trec, validation
from goldset.eval.arrow import arrow_loaded, pa, pc
from goldset.eval.columns import (
    PairIndex,
    arrow_array,
    arrow_strings,
    as_strings,
    factorize_runs,
    fingerprints,
    lookup,
    strings_column,
)
from goldset.eval.errors import InputError
from goldset.eval.threads import THREADED_ROWS, before_threads
from goldset.eval.trec import Layout, Rows
from goldset.eval.validation import GOLDEN_STATUSES, decoded_lines, json_lines

if TYPE_CHECKING:  # pandas only where a caller asks for a frame: a small eval never does
    import pandas as pd

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
    "run_from_records",
]

QUERY_COLUMNS = ("query_id", "query", "slice", "status", "answerable", "mode")
# Files of up to about this many lines are read by the plain parser (into numpy: pyarrow is
# never imported), longer ones by Arrow's fast path or general parser; every parser gives the
# same reading (eval/trec.py). Below this size the plain parser wins, since it spares Arrow's
# import; above it Arrow does (the crossover is measured in bench/README.md, "Figures behind
# design choices"). The count of lines is estimated from the file's size and its first line.
# The same figure bounds eval's threads: the plain parser holds the GIL, so threads over the
# files it reads would only take turns.
PLAIN_MAX_LINES = THREADED_ROWS
Parser = Literal["auto", "fast", "general", "plain"]


class Digests(NamedTuple):
    """The two sums of row hashes behind :attr:`Golden.version` (modulo 2**64): of the queries
    (id, slice, status, answerable) and of the judgements (query id, doc id, grade)."""

    queries: int
    judgments: int


class Golden:
    """A golden set: one row per query in ``queries``, one row per judged doc in ``judgments``.

    ``queries`` columns: query_id, query, slice ("" when none), status ("done", "skipped" or
    "pending"), answerable (bool) and mode ("first_hit", "full", or "" when unknown).
    ``judgments`` columns: query_id, doc_id, grade (int64); unjudged documents are absent.

    Built from those two DataFrames, or (as the readers build it) from their columns as
    arrays: a mapping of column name to numpy array for the queries, and for the judgments
    Arrow strings for the ids and a numpy int64 array for the grades. Eval reads the
    columns (:meth:`query_column`, :meth:`judgment_column`); the DataFrames are built on
    first use, so that an evaluation never imports pandas. Neither is to be changed after.
    With ``pairs`` (the judgements indexed, see :attr:`pairs`) the judgements' query_id
    column may be left out: it is built from the index when asked for.
    """

    def __init__(
        self,
        queries: pd.DataFrame | Columns,
        judgments: pd.DataFrame | Columns,
        pairs: PairIndex | None = None,
    ):
        self._given = {"queries": queries, "judgments": judgments}
        if pairs is not None:  # a reader indexed them (to find a repeated doc)
            self.pairs = pairs

    @cached_property
    def pairs(self) -> PairIndex:
        """The judgements' (query, doc) pairs indexed (:class:`~eval.columns.PairIndex`):
        per judgement, the position of its query in ``queries`` and its doc id."""
        positions = lookup(self.judgment_column("query_id"), self.query_column("query_id"))
        return PairIndex(positions, self.judgment_column("doc_id"))

    @cached_property
    def judgments_of_listed_queries(self) -> bool:
        """Whether every judgement is of a query in ``queries`` (then :attr:`pairs`' groups
        are positions there, and stand for the judgements' query ids)."""
        return bool(self.pairs.groups.min(initial=0) >= 0)

    @cached_property
    def _judged_query_ids(self) -> np.ndarray | pa.Array:
        """Each judgement's query id, from :attr:`pairs` (when the column was left out: 4M
        ids that an evaluation never needs), in the form of the doc ids."""
        query_ids, positions = self.query_column("query_id"), self.pairs.groups
        if isinstance(self.pairs.values, np.ndarray):
            return query_ids[positions]
        return arrow_array(query_ids).take(arrow_array(positions))

    @cached_property
    def queries(self) -> pd.DataFrame:
        """The queries as a DataFrame (built on first use when given as columns)."""
        return self._frame("queries")

    @cached_property
    def judgments(self) -> pd.DataFrame:
        """The judgements as a DataFrame (built on first use when given as columns)."""
        return self._frame("judgments")

    def _frame(self, part: str) -> pd.DataFrame:
        given = self._given[part]
        if not isinstance(given, Mapping):
            return given
        import pandas as pd  # only a caller that asks for a frame pays for pandas

        if part == "queries":
            return pd.DataFrame(dict(given), columns=list(QUERY_COLUMNS))
        columns = {name: self._column(part, name) for name in ("query_id", "doc_id", "grade")}
        return pa.table({name: _arrow_or_numpy(v) for name, v in columns.items()}).to_pandas()

    def query_column(self, name: str) -> np.ndarray:
        """One column of ``queries`` as a numpy array (str columns as objects)."""
        return self._column("queries", name)

    def judgment_column(self, name: str) -> np.ndarray | pa.Array | pa.ChunkedArray:
        """One column of ``judgments``: the grades as int64, the ids as strings (as the
        reader gave them: Arrow, or numpy for a small file; Arrow from a DataFrame)."""
        values = self._column("judgments", name)
        if name == "grade":
            return values.astype(np.int64, copy=False)
        return values if isinstance(self._given["judgments"], Mapping) else arrow_strings(values)

    def _column(self, part: str, name: str) -> np.ndarray | pa.Array | pa.ChunkedArray:
        given = self._given[part]
        if isinstance(given, Mapping):
            if name == "query_id" and name not in given:  # left out (see the class)
                return self._judged_query_ids
            return given[name]
        column = given[name]
        return column.to_numpy(dtype=object) if column.dtype == object else column.to_numpy()

    def query_values(self, name: str, query_ids: np.ndarray) -> np.ndarray:
        """The ``name`` column's value for each of ``query_ids`` (ids of this golden set).

        The positions of the last few arrays of ids asked about are kept (by identity: the
        arrays themselves, held here, not equal ones), and those of
        :meth:`scored_query_ids` are known without looking them up: a report asks about
        the same ids for each figure, and a lookup of 100,000 ids is not free.
        """
        kept = self.__dict__.setdefault("_kept_positions", {})
        if id(query_ids) not in kept or kept[id(query_ids)][0] is not query_ids:
            if len(kept) >= KEPT_POSITIONS:
                kept.clear()
            if query_ids is self.scored_query_ids():
                positions = np.flatnonzero(self._scored)
            else:
                ids = as_strings(np.asarray(query_ids, dtype=object))
                positions = lookup(ids, self.query_column("query_id"))
            kept[id(query_ids)] = (query_ids, positions)
        return self.query_column(name)[kept[id(query_ids)][1]]

    @cached_property
    def answerable(self) -> np.ndarray:
        """Per query (in ``queries`` order), whether it is answerable."""
        return self.query_column("answerable").astype(bool)

    @cached_property
    def version(self) -> str:
        """A content hash of the labels: which queries count how, and every judgement.

        Row hashes are summed, so the order in which the labels were read does not matter.
        Computed once, on first use: the labels are not to be changed afterwards.
        """
        return version_of(self.digests)

    @cached_property
    def digests(self) -> Digests:
        """The sums of row hashes behind :attr:`version`. Being sums, they can be brought up
        to date query by query (:func:`goldset.eval.splice.updated_digests`)."""
        queries = [self.query_column(name) for name in ("query_id", "slice", "status")]
        queries.append(self.query_column("answerable"))
        query_hashes = [_text_fingerprints(column) for column in queries]
        # The judgements' query ids and doc ids hashed once: as their queries' ids were, and
        # as the doc ids were to index the pairs (not a hash of 4M strings each, again).
        pairs = self.pairs
        if self.judgments_of_listed_queries:
            judged_queries = query_hashes[0][pairs.groups]
        else:
            judged_queries = _text_fingerprints(self.judgment_column("query_id"))
        grades = _text_fingerprints(self.judgment_column("grade"))
        judgments = [judged_queries, pairs.hashes, grades]
        return Digests(_rows_digest(query_hashes), _rows_digest(judgments))

    def scored_query_ids(self) -> np.ndarray:
        """Ids of the queries that metrics are averaged over: answerable and done (the same
        read-only array at every call)."""
        return self._scored_ids

    @cached_property
    def _scored(self) -> np.ndarray:
        return (self.query_column("status") == "done") & self.answerable

    @cached_property
    def _scored_ids(self) -> np.ndarray:
        ids = self.query_column("query_id")[self._scored].astype(object)
        ids.flags.writeable = False
        return ids


Columns = Mapping[str, "np.ndarray | pa.Array | pa.ChunkedArray"]
KEPT_POSITIONS = 4  # arrays of query ids whose positions a golden set keeps (query_values)


@dataclass(frozen=True, eq=False)
class Run:
    """A system's results, one row per retrieved doc, in file order.

    Per row: ``query_index`` (position in ``query_ids``), ``doc_ids`` (Arrow strings) and
    ``scores``. ``query_ids`` lists every query the run answered, including those where it
    returned nothing (an empty JSONL ``results`` list: the system abstained).
    """

    query_ids: np.ndarray
    query_index: np.ndarray
    doc_ids: pa.Array | pa.ChunkedArray | np.ndarray
    scores: np.ndarray
    name: str

    @cached_property
    def results(self) -> pd.DataFrame:
        """The rows as a DataFrame of query_id, doc_id and score (built on first use)."""
        query_id = arrow_array(self.query_ids).take(arrow_array(self.query_index))
        return pa.table(
            {
                "query_id": query_id,
                "doc_id": arrow_array(self.doc_ids, pa.large_string()),
                "score": self.scores,
            }
        ).to_pandas()


def version_of(digests: Digests) -> str:
    """The :attr:`Golden.version` of a golden set whose :attr:`Golden.digests` are these."""
    return _sha256_module().sha256(repr(list(digests)).encode()).hexdigest()[:16]


@cache
def _sha256_module() -> ModuleType:
    """SHA-256 by CPython's own module where it has one: hashlib loads OpenSSL first, a
    noticeable part of a small eval's start-up (the same digests either way)."""
    for name in ("_sha2", "_sha256"):  # Python 3.12+, 3.11
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    import hashlib

    return hashlib


before_threads(_sha256_module)  # a golden set's version is hashed on a thread of its own


@before_threads
def _arrow_parsers() -> None:
    """Import the Arrow parsers, which the threads that read a large file load on first use."""
    from goldset.eval import trec_arrow  # noqa: F401 - imported for the threads that read with it


def _rows_digest(columns: list[np.ndarray]) -> int:
    """Sum over rows of a 64-bit hash of the row's values, given as each column's
    :func:`_text_fingerprints`: independent of the rows' order."""
    row = np.zeros(len(columns[0]), dtype=np.uint64)
    for hashes in columns:  # in place: fresh arrays of 4M rows cost more than the arithmetic
        row ^= hashes
        row *= np.uint64(0x9E3779B97F4A7C15)
    row ^= row >> np.uint64(29)  # mix the high bits down before summing
    row *= np.uint64(0xBF58476D1CE4E5B9)
    return int(row.sum(dtype=np.uint64))


def _text_fingerprints(column: np.ndarray | pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``fingerprints(_as_text(column))``; for integers in a narrow range (grades), the
    text of each value in the range is hashed once, not the text of every row."""
    if isinstance(column, np.ndarray) and column.dtype.kind in "iu" and len(column):
        low, high = int(column.min()), int(column.max())
        if high - low < min(len(column), 1 << 16):
            by_value = fingerprints(_as_text(np.arange(low, high + 1)))
            return by_value[column - low]
    return fingerprints(_as_text(column))


def _as_text(column: np.ndarray | pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The column's values as Arrow strings, spelled as Python's ``str`` spells them."""
    if not isinstance(column, np.ndarray):
        return column
    if column.dtype == bool:
        return np.where(column, "True", "False").astype(object)
    if np.issubdtype(column.dtype, np.integer) and arrow_loaded():
        # Arrow writes integers as str() does, and much faster than Python.
        return pc.cast(arrow_array(column), pa.large_string())
    if column.dtype == object and set(map(type, column.tolist())) <= {str}:
        return column
    return np.array([str(value) for value in column.tolist()], dtype=object)


def _large_strings(column: np.ndarray | pa.Array | pa.ChunkedArray) -> np.ndarray | pa.Array:
    """Arrow strings as large strings (as the other readers give them); numpy as it is."""
    return column if isinstance(column, np.ndarray) else column.cast(pa.large_string())


def _arrow_or_numpy(values: np.ndarray | pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Ids as large Arrow strings (as pandas reads them back), numbers as they are."""
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values.cast(pa.large_string())
    return arrow_array(values)


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
        if len(golden.query_column("query_id")) == 0:
            raise InputError(str(path), None, None, "no queries in the file")
        return golden
    beir = first.split("\t")[0].strip().lower() in ("query-id", "query_id", "qid")
    rows = read_rows(path, trec.BEIR_QRELS if beir else trec.QRELS, parser)
    if len(rows.values) == 0:
        raise InputError(str(path), None, None, "no judgements in the file")
    return _golden_from_rows(rows, str(path))


def golden_from_records(records: Iterable[dict], source: str = "<records>") -> Golden:
    """Build a :class:`Golden` from golden-set JSONL objects (docs/formats.md, "The golden set"),
    each checked by :func:`goldset.eval.validation.golden_record` (as the importer checks them).

    ``records`` may also yield ``(line_number, record)`` pairs, so that errors name the line.
    """
    queries: dict[str, list] = {name: [] for name in QUERY_COLUMNS}
    judged_queries, doc_ids, grades = [], [], []
    seen: set[str] = set()
    for position, item in enumerate(records, start=1):
        line, record = item if isinstance(item, tuple) else (position, item)
        checked = validation.golden_record(record, (source, line))
        if checked.query_id in seen:
            raise InputError(source, line, "query_id", f"duplicate query {checked.query_id!r}")
        seen.add(checked.query_id)
        for name in QUERY_COLUMNS:
            queries[name].append(getattr(checked, name))
        judged_queries += [checked.query_id] * len(checked.judgments)
        doc_ids += checked.judgments
        grades += checked.judgments.values()
    queries["mode"] = [mode or "" for mode in queries["mode"]]
    columns = {name: np.array(values, dtype=object) for name, values in queries.items()}
    columns["answerable"] = np.array(queries["answerable"], dtype=bool)
    judgments = {
        "query_id": strings_column(judged_queries),
        "doc_id": strings_column(doc_ids),
        "grade": np.array(grades, dtype=np.int64),
    }
    return Golden(columns, judgments)


def _golden_from_rows(rows: Rows, source: str) -> Golden:
    """A golden set from plain judgements: every query is done and answerable, no slice."""
    rows.check_no_repeated_docs(source)
    judgments = {  # each judgement's query id comes from the index when asked for
        # The ids as the index holds them (its chunks joined): the same bytes, not a copy.
        "doc_id": _large_strings(rows.pairs.values),
        "grade": rows.values.astype(np.int64, copy=False),
    }
    count = len(rows.query_ids)
    blank = np.full(count, "", dtype=object)
    queries = {
        "query_id": rows.query_ids,
        "query": blank,
        "slice": blank,
        "status": np.full(count, "done", dtype=object),
        "answerable": np.ones(count, dtype=bool),
        "mode": blank,
    }
    return Golden(queries, judgments, rows.pairs)  # indexed as the rows were read


# --- runs --------------------------------------------------------------------------------


def read_run(path: str | Path, name: str | None = None, parser: Parser = "auto") -> Run:
    """Read a run: TREC (``qid Q0 docno rank score tag``, extra fields ignored) or JSONL.

    JSONL lines look like ``{"query_id": "q1", "results": [{"doc_id": "d", "score": 1.5}]}``;
    an empty ``results`` list means the system abstained on that query. The TREC rank
    column is ignored, as in trec_eval. A doc repeated within one query is an error.

    ``parser`` picks how TREC text is parsed: ``"plain"`` (pure Python), ``"general"``
    (Arrow, any layout), ``"fast"`` (Arrow's CSV reader where the layout is clean, else the
    general parser) or ``"auto"`` (plain up to ``PLAIN_MAX_LINES``, fast beyond). They give
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
        parser = "plain" if _read_plainly(path) else "fast"
    if parser == "plain":
        return trec.read_plain(path, layout)
    from goldset.eval import trec_arrow  # a file for Arrow: its parsers are loaded only for one

    if parser == "fast":
        rows = trec_arrow.read_fast(path, layout, _first_content_line(path))
        if rows is not None:
            return rows
    elif parser != "general":
        raise ValueError(f"unknown parser {parser!r}: auto, fast, general or plain")
    return trec_arrow.read_general(path, layout)


def worth_reading_together(*paths: str | Path) -> bool:
    """Whether these files are worth reading on threads at once
    (:func:`goldset.eval.threads.concurrently`):
    only when one of them is large enough for Arrow, whose readers release the GIL; the
    plain parser holds it, and two threads of it would only take turns."""
    return any(not _read_plainly(Path(path)) for path in paths if Path(path).is_file())


def _read_plainly(path: Path) -> bool:
    """Whether the "auto" parser reads this file with the plain parser: up to about
    ``PLAIN_MAX_LINES`` lines, judged by the length of its first line."""
    return path.stat().st_size <= PLAIN_MAX_LINES * (len(_first_content_line(path)) + 1)


def run_from_frame(
    frame: pd.DataFrame, name: str, query_ids: Iterable[str] | None = None, source: str = "<frame>"
) -> Run:
    """Wrap a DataFrame of query_id, doc_id, score as a :class:`Run`, checking duplicates.

    ``query_ids`` may name queries the run answered with no results (it abstained).
    """
    lines = np.arange(1, len(frame) + 1)
    ids = frame[["query_id", "doc_id"]].astype(str).set_axis(lines)
    import pandas as pd

    # A score that is not a number becomes NaN, refused below with its line, as in a file.
    scores = pd.to_numeric(frame["score"], errors="coerce").astype("float64")
    rows = Rows.from_frame(ids, scores)
    return _run_from_rows(rows, name, source, query_ids)


def _run_from_rows(
    rows: Rows, name: str, source: str, query_ids: Iterable[str] | None = None
) -> Run:
    """Check the rows: every score a number, no doc repeated. ``query_ids`` (when given)
    come first in the run's query ids, the rows' other queries after them."""
    scores = rows.values.astype(np.float64, copy=False)
    if len(scores) and np.isnan(scores.min()):  # a reduction first: no mask of 10M rows
        bad_score = np.isnan(scores)
        raise InputError(source, rows.line(int(np.argmax(bad_score))), "score", "not a number")
    rows.check_no_repeated_docs(source)
    known, query_index = rows.query_ids, rows.query_index
    if query_ids is not None:
        given = np.array(list(query_ids), dtype=object)
        row_queries = rows.query_ids
        unlisted = rows.query_ids[lookup(row_queries, given) < 0]
        known = np.concatenate([given, unlisted])
        query_index = lookup(row_queries, known)[query_index]
    return Run(np.asarray(known, dtype=object), query_index, rows.doc_ids, scores, name)


def _read_jsonl_run(path: Path, name: str) -> Run:
    return run_from_records(json_lines(path), name, str(path))


def run_from_records(
    records: Iterable[dict | tuple[int, dict]], name: str, source: str = "<records>"
) -> Run:
    """Build a :class:`Run` from JSONL run objects (``{"query_id": ..., "results": [{"doc_id":
    ..., "score": ...}]}``), checked as :func:`read_run` checks a JSONL file's lines.

    ``records`` may also yield ``(line_number, record)`` pairs, so that errors name the line.
    """
    query_ids, rows, seen = [], [], set()
    for position, item in enumerate(records, start=1):
        line, record = item if isinstance(item, tuple) else (position, item)
        where = (source, line)
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
    row_queries, doc_ids, scores, lines = list(zip(*rows, strict=True)) or ([], [], [], [])
    query_index, known = factorize_runs(strings_column(list(row_queries)))
    read = Rows(
        known,
        query_index,
        strings_column(list(doc_ids)),
        np.array(scores, dtype=np.float64),
        np.array(lines, dtype=np.int64),
    )
    return _run_from_rows(read, name, source, query_ids)


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
