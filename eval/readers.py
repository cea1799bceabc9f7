"""Readers for golden sets (golden JSONL, TREC qrels, BEIR qrels.tsv) and runs (TREC, JSONL).

Everything is read into two plain shapes, :class:`Golden` and :class:`Run`, so that the
metrics never care where their input came from. Bad input raises :class:`InputError`,
whose message names the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from eval.columns import arrow_strings, factorize_runs, fingerprints, first_repeat

GOLDEN_STATUSES = ("done", "skipped", "pending")
TREC_RUN_FIELDS = ["query_id", "iter", "doc_id", "rank", "score", "tag"]
TREC_QRELS_FIELDS = ["query_id", "iter", "doc_id", "grade"]
QUERY_COLUMNS = ("query_id", "query", "slice", "status", "answerable", "mode")


class InputError(ValueError):
    """Bad input; the message names the file, the line (1-based) and the field."""

    def __init__(self, source: str, line: int | None, field: str | None, problem: str):
        self.source, self.line, self.field, self.problem = source, line, field, problem
        where = source if line is None else f"{source}:{line}"
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {problem}")


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


def read_golden(path: str | Path) -> Golden:
    """Read a golden set from golden-set JSONL, TREC qrels or BEIR ``qrels.tsv`` (sniffed)."""
    path = Path(path)
    first = _first_content_line(path)
    if first.startswith("{"):
        return golden_from_records(json_lines(path), source=str(path))
    if first.split("\t")[0].strip().lower() in ("query-id", "query_id", "qid"):
        return _read_beir_qrels(path)
    return _read_trec_qrels(path)


def golden_from_records(records: Iterable[dict], source: str = "<records>") -> Golden:
    """Build a :class:`Golden` from golden-set JSONL objects (see DESIGN.md, "Golden set").

    ``records`` may also yield ``(line_number, record)`` pairs, so that errors name the line.
    """
    query_rows, judgment_rows = [], []
    seen: set[str] = set()
    for position, item in enumerate(records, start=1):
        line, record = item if isinstance(item, tuple) else (position, item)
        query_row = _golden_query_row(record, source, line)
        if query_row["query_id"] in seen:
            raise InputError(source, line, "query_id", f"duplicate query {query_row['query_id']!r}")
        seen.add(query_row["query_id"])
        query_rows.append(query_row)
        for doc_id, grade in _golden_judgments(record, source, line):
            judgment_rows.append((query_row["query_id"], doc_id, grade))
    queries = pd.DataFrame(query_rows, columns=list(QUERY_COLUMNS))
    queries["answerable"] = queries["answerable"].astype(bool)
    judgments = pd.DataFrame(judgment_rows, columns=["query_id", "doc_id", "grade"])
    return Golden(queries, judgments.astype({"grade": "int64"}))


def _golden_query_row(record: object, source: str, line: int) -> dict:
    if not isinstance(record, dict):
        raise InputError(source, line, None, "expected a JSON object")
    query_id = _required_text(record, "query_id", source, line)
    status = record.get("status", "done")
    if status not in GOLDEN_STATUSES:
        raise InputError(
            source, line, "status", f"must be one of {GOLDEN_STATUSES}, got {status!r}"
        )
    answerable = record.get("answerable", True)
    if not isinstance(answerable, bool):
        raise InputError(source, line, "answerable", "must be true or false")
    slice_name = record.get("slice") or ""
    if not isinstance(slice_name, str):
        raise InputError(source, line, "slice", "must be a string")
    query = record.get("query", "")
    return {
        "query_id": query_id,
        "query": query if isinstance(query, str) else str(query),
        "slice": slice_name,
        "status": status,
        "answerable": answerable,
        "mode": record.get("mode") or "",
    }


def _golden_judgments(record: dict, source: str, line: int) -> Iterator[tuple[str, int]]:
    judgments = record.get("judgments", {})
    if not isinstance(judgments, dict):
        raise InputError(source, line, "judgments", "must be an object of doc_id: grade")
    for doc_id, grade in judgments.items():
        if isinstance(grade, bool) or not isinstance(grade, int):
            raise InputError(source, line, f"judgments.{doc_id}", "grade must be an integer")
        yield doc_id, grade


def _read_trec_qrels(path: Path) -> Golden:
    """TREC qrels: ``qid iter docno rel``; ``#`` in column 0 starts a comment (trec_eval 10)."""
    rows = _read_fields_fast(path, TREC_QRELS_FIELDS, "grade", pa.int64())
    if rows is None:
        frame = _read_whitespace_table(path, TREC_QRELS_FIELDS, usecols=[0, 2, 3])
        rows = _Rows.from_frame(frame, _numbers(frame["grade"], path, "grade", int))
    return _golden_from_rows(rows, str(path))


def _read_beir_qrels(path: Path) -> Golden:
    """BEIR ``qrels.tsv``: a header line, then ``query-id<TAB>corpus-id<TAB>score``."""
    frame = _read_whitespace_table(path, ["query_id", "doc_id", "grade"], [0, 1, 2], header=True)
    rows = _Rows.from_frame(frame, _numbers(frame["grade"], path, "score", int))
    return _golden_from_rows(rows, str(path))


def _golden_from_rows(rows: _Rows, source: str) -> Golden:
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


@dataclass(frozen=True)
class _Rows:
    """Rows of (query, doc, value) as read from a file, before they become a golden set or a run.

    ``query_index`` gives each row's position in ``query_ids`` (distinct, in order of first
    appearance); ``lines`` gives each row's line number (None: row i is on line i + 1).
    """

    query_ids: np.ndarray
    query_index: np.ndarray
    doc_ids: pa.Array | pa.ChunkedArray
    values: np.ndarray
    lines: np.ndarray | None = None

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, values: pd.Series) -> _Rows:
        """Rows from a DataFrame with query_id and doc_id columns, indexed by line number."""
        query_index, query_ids = factorize_runs(arrow_strings(frame["query_id"]))
        return cls(
            query_ids,
            query_index,
            arrow_strings(frame["doc_id"]),
            values.to_numpy(),
            frame.index.to_numpy(dtype=np.int64),
        )

    def line(self, row: int) -> int:
        """The line number of a row."""
        return row + 1 if self.lines is None else int(self.lines[row])

    def query_id_column(self) -> pa.Array:
        """The query id of each row, as Arrow strings."""
        return pa.array(self.query_ids, pa.large_string()).take(pa.array(self.query_index))

    def check_no_repeated_docs(self, source: str) -> None:
        """Raise an input error, naming the second line, if a doc is given twice for a query."""
        row = first_repeat(self.query_index, self.doc_ids)
        if row is not None:
            doc_id = self.doc_ids[row].as_py()
            query_id = self.query_ids[self.query_index[row]]
            problem = f"{doc_id!r} repeated within query {query_id!r}"
            raise InputError(source, self.line(row), "doc_id", problem)


# --- runs --------------------------------------------------------------------------------


def read_run(path: str | Path, name: str | None = None) -> Run:
    """Read a run: TREC (``qid Q0 docno rank score tag``, extra fields ignored) or JSONL.

    JSONL lines look like ``{"query_id": "q1", "results": [{"doc_id": "d", "score": 1.5}]}``;
    an empty ``results`` list means the system abstained on that query. The TREC rank
    column is ignored, as in trec_eval. A doc repeated within one query is an error.
    """
    path = Path(path)
    name = name or path.stem
    if _first_content_line(path).startswith("{"):
        return _read_jsonl_run(path, name)
    rows = _read_fields_fast(path, TREC_RUN_FIELDS, "score", pa.float64())
    if rows is None:
        frame = _read_whitespace_table(path, TREC_RUN_FIELDS, usecols=[0, 2, 4, 5])
        rows = _Rows.from_frame(frame, _numbers(frame["score"], path, "score", float))
    return _run_from_rows(rows, name, str(path))


def run_from_frame(
    frame: pd.DataFrame, name: str, query_ids: Iterable[str] | None = None, source: str = "<frame>"
) -> Run:
    """Wrap a DataFrame of query_id, doc_id, score as a :class:`Run`, checking duplicates.

    ``query_ids`` may name queries the run answered with no results (it abstained).
    """
    lines = np.arange(1, len(frame) + 1)
    ids = frame[["query_id", "doc_id"]].astype(str).set_axis(lines)
    rows = _Rows.from_frame(ids, frame["score"].astype("float64"))
    return _run_from_rows(rows, name, source, query_ids)


def _run_from_rows(
    rows: _Rows, name: str, source: str, query_ids: Iterable[str] | None = None
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


def _read_fields_fast(
    path: Path, names: list[str], value_field: str, value_type: pa.DataType
) -> _Rows | None:
    """Parse the common clean layout (one space or one tab between exactly ``len(names)``
    fields) with Arrow's multi-threaded CSV reader; None when the file needs the general
    parser (other spacing, extra fields, comments, blank lines, a bad value).

    Rows map one to one to lines (nothing is skipped). Query ids are dictionary-encoded as
    they are parsed, which gives each row's query index without hashing 10M strings again.
    """
    delimiter = "\t" if "\t" in _first_content_line(path) else " "
    types = {
        "query_id": pa.dictionary(pa.int32(), pa.string()),
        "doc_id": pa.string(),
        value_field: value_type,
    }
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=names),
            parse_options=pcsv.ParseOptions(
                delimiter=delimiter, quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pcsv.ConvertOptions(include_columns=list(types), column_types=types),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    # Each parsed block has its own dictionary: one shared dictionary gives global indices.
    query_column = table["query_id"].unify_dictionaries()
    chunks = query_column.chunks
    query_ids = chunks[0].dictionary if chunks else pa.array([], pa.string())
    # A comment line with the right number of fields parses, its query id starting with '#'.
    if pc.any(pc.starts_with(query_ids, "#")).as_py():
        return None
    query_index = [chunk.indices.to_numpy(zero_copy_only=False) for chunk in chunks]
    return _Rows(
        query_ids.to_numpy(zero_copy_only=False).astype(object),
        np.concatenate(query_index) if chunks else np.zeros(0, dtype=np.int32),
        table["doc_id"],
        table[value_field].to_numpy(),
    )


def _read_jsonl_run(path: Path, name: str) -> Run:
    query_ids, rows, seen = [], [], set()
    for line, record in json_lines(path):
        if not isinstance(record, dict):
            raise InputError(str(path), line, None, "expected a JSON object")
        query_id = _required_text(record, "query_id", str(path), line)
        results = record.get("results")
        if not isinstance(results, list):
            raise InputError(str(path), line, "results", "must be a list (empty = abstained)")
        if query_id in seen:
            raise InputError(str(path), line, "query_id", f"query {query_id!r} given twice")
        seen.add(query_id)
        query_ids.append(query_id)
        rows.extend(_jsonl_results(query_id, results, str(path), line))
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "line"])
    frame = frame.set_index("line").astype({"query_id": str, "doc_id": str, "score": "float64"})
    return _run_from_rows(_Rows.from_frame(frame, frame["score"]), name, str(path), query_ids)


def _jsonl_results(query_id: str, results: list, source: str, line: int) -> Iterator[tuple]:
    """Rows for one JSONL query; without scores, the list order is the ranking."""
    has_score = [isinstance(result, dict) and "score" in result for result in results]
    if any(has_score) and not all(has_score):
        raise InputError(source, line, "results.score", "give a score for all results or none")
    for position, result in enumerate(results):
        if not isinstance(result, dict):
            raise InputError(source, line, f"results[{position}]", "expected an object")
        doc_id = _required_text(result, "doc_id", source, line, prefix=f"results[{position}].")
        score = result["score"] if has_score[position] else float(len(results) - position)
        if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
            raise InputError(source, line, f"results[{position}].score", "must be a number")
        yield query_id, doc_id, float(score), line


# --- shared parsing helpers --------------------------------------------------------------


def _read_whitespace_table(
    path: Path, names: list[str], usecols: list[int], header: bool = False
) -> pd.DataFrame:
    """Read any whitespace-separated file, indexed by line number (all columns as text).

    Fields may be separated by any run of spaces and tabs, extra fields are ignored, blank
    lines and trec_eval comment lines (``#`` in column 0) are skipped. A line with fewer
    than ``max(usecols) + 1`` fields is an error naming that line. ``header`` skips line 1.
    """
    lines = _text_lines(path)
    number = np.arange(1, len(lines) + 1)
    content = pc.invert(
        pc.or_(pc.starts_with(lines, "#"), pc.equal(pc.utf8_trim_whitespace(lines), ""))
    )
    if header:
        content = pc.and_(content, pa.array(number > 1))
    lines, number = lines.filter(content), number[content.to_numpy(zero_copy_only=False)]
    fields = pc.utf8_split_whitespace(pc.utf8_trim_whitespace(lines))
    needed = max(usecols) + 1
    short = pc.list_value_length(fields).to_numpy(zero_copy_only=False) < needed
    if short.any():
        line = int(number[np.argmax(short)])
        problem = f"a line needs at least {needed} fields"
        raise InputError(str(path), line, names[needed - 1], problem)
    columns = {names[i]: pc.list_element(fields, i) for i in usecols}
    return pd.DataFrame(columns, index=number).astype("str")


def _text_lines(path: Path) -> pa.Array:
    """Every line of the file as an Arrow string array, blank ones included."""
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=["line"]),
            # No real delimiter: a unit separator (0x1F) has no business in these files.
            parse_options=pcsv.ParseOptions(
                delimiter="\x1f", quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pcsv.ConvertOptions(column_types={"line": pa.binary()}),
        )
    except pa.ArrowInvalid as error:
        raise InputError(str(path), None, None, f"cannot be read as lines ({error})") from None
    lines = table["line"].combine_chunks()
    try:
        return lines.cast(pa.string())
    except pa.ArrowInvalid:
        line = _first_undecodable_line(path)
        raise InputError(str(path), line, None, "not valid UTF-8") from None


def _first_undecodable_line(path: Path) -> int | None:
    """The first line that is not valid UTF-8 (only read when decoding already failed)."""
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return line
    return None


def _numbers(column: pd.Series, path: Path, field: str, kind: type[int] | type[float]) -> pd.Series:
    """The column's text as numbers: int64 for ``int``, float64 for ``float``.

    The first value that is not one (or, for ``int``, not a whole number) is an input error
    naming its line (``column`` is indexed by line number).
    """
    values = pd.to_numeric(column, errors="coerce").astype("float64")
    bad = values.isna().to_numpy()
    if kind is int:
        bad = bad | (values.to_numpy(na_value=0.5) % 1 != 0)
    if bad.any():
        position = int(np.argmax(bad))
        what = "an integer" if kind is int else "a number"
        value = column.iloc[position]
        raise InputError(str(path), int(column.index[position]), field, f"not {what}: {value!r}")
    return values.astype("int64" if kind is int else "float64")


def _first_content_line(path: Path) -> str:
    with path.open("rb") as handle:
        for raw in handle:
            line = raw.decode("utf-8", errors="replace").strip().lstrip("\ufeff")
            if line and not line.startswith("#"):
                return line
    return ""


def decoded_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each line of a UTF-8 file; invalid UTF-8 is an input
    error naming its line. A byte-order mark (files saved on Windows) is not part of the data."""
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, start=1):
            try:
                yield line, raw.decode("utf-8-sig" if line == 1 else "utf-8")
            except UnicodeDecodeError as error:
                problem = f"not valid UTF-8 (byte {error.start + 1} of the line: {error.reason})"
                raise InputError(str(path), line, None, problem) from None


def json_lines(path: Path) -> Iterator[tuple[int, object]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file."""
    for line, text in decoded_lines(path):
        if not text.strip():
            continue
        try:
            yield line, json.loads(text)
        except json.JSONDecodeError as error:
            problem = f"not valid JSON ({error.msg} at column {error.colno})"
            raise InputError(str(path), line, None, problem) from None


def _required_text(record: dict, field: str, source: str, line: int, prefix: str = "") -> str:
    value = record.get(field)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise InputError(source, line, prefix + field, "required, a non-empty string")
    return value
