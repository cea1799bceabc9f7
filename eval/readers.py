"""Readers for golden sets (golden JSONL, TREC qrels, BEIR qrels.tsv) and runs (TREC, JSONL).

Everything is read into two plain shapes, :class:`Golden` and :class:`Run`, so that the
metrics never care where their input came from. Bad input raises :class:`InputError`,
whose message names the file, the line and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from eval.columns import arrow_strings, factorize_runs, first_repeat

GOLDEN_STATUSES = ("done", "skipped", "pending")
TREC_RUN_FIELDS = ["query_id", "iter", "doc_id", "rank", "score", "tag"]
TREC_QRELS_FIELDS = ["query_id", "iter", "doc_id", "grade"]
# Large strings are what pandas' Arrow-backed str columns hold: no conversion on the way.
RUN_TYPES = {"query_id": pa.large_string(), "doc_id": pa.large_string(), "score": pa.float64()}
QRELS_TYPES = {"query_id": pa.large_string(), "doc_id": pa.large_string(), "grade": pa.int64()}
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

    def scored_query_ids(self) -> np.ndarray:
        """Ids of the queries that metrics are averaged over: answerable and done."""
        scored = (self.queries["status"] == "done") & self.queries["answerable"]
        return self.queries.loc[scored, "query_id"].to_numpy(dtype=object)


@dataclass(frozen=True)
class Run:
    """A system's results: ``results`` has query_id, doc_id and score, in file order.

    ``query_ids`` lists every query the run answered, including those where it returned
    nothing (an empty JSONL ``results`` list: the system abstained).
    """

    results: pd.DataFrame
    query_ids: np.ndarray
    name: str


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


def golden_from_judgments(judgments: pd.DataFrame) -> Golden:
    """A golden set from plain judgements: every query is done and answerable, no slice."""
    _, query_ids = factorize_runs(arrow_strings(judgments["query_id"]))
    queries = pd.DataFrame(
        {
            "query_id": query_ids,
            "query": "",
            "slice": "",
            "status": "done",
            "answerable": True,
            "mode": "",
        }
    )
    return Golden(queries, judgments.reset_index(drop=True))


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
    frame = _read_fields_fast(path, TREC_QRELS_FIELDS, QRELS_TYPES)
    if frame is None:
        frame = _read_whitespace_table(path, TREC_QRELS_FIELDS, usecols=[0, 2, 3])
        frame["grade"] = _integers(frame["grade"], path, "grade")
    return golden_from_judgments(_checked_judgments(frame, path))


def _read_beir_qrels(path: Path) -> Golden:
    """BEIR ``qrels.tsv``: a header line, then ``query-id<TAB>corpus-id<TAB>score``."""
    frame = _read_whitespace_table(path, ["query_id", "doc_id", "grade"], [0, 1, 2], header=True)
    frame["grade"] = _integers(frame["grade"], path, "score")
    return golden_from_judgments(_checked_judgments(frame, path))


def _checked_judgments(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    _check_no_repeated_docs(frame, str(path))
    return frame[["query_id", "doc_id", "grade"]].astype({"grade": "int64"})


def _check_no_repeated_docs(rows: pd.DataFrame, source: str) -> np.ndarray:
    """The distinct query ids of ``rows``, in order of appearance, once checked that no doc
    is given twice for one query; a repeat is an input error, naming the second line
    (``rows`` is indexed by line number)."""
    query_codes, query_ids = factorize_runs(arrow_strings(rows["query_id"]))
    row = first_repeat(query_codes, arrow_strings(rows["doc_id"]))
    if row is not None:
        doc_id, query_id = rows["doc_id"].iloc[row], rows["query_id"].iloc[row]
        raise InputError(
            source, int(rows.index[row]), "doc_id", f"{doc_id!r} repeated within query {query_id!r}"
        )
    return query_ids


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
    rows = _read_fields_fast(path, TREC_RUN_FIELDS, RUN_TYPES)
    if rows is None:
        rows = _read_trec_run_general(path)
    return _run_from_rows(rows, name, str(path))


def run_from_frame(
    frame: pd.DataFrame, name: str, query_ids: Iterable[str] | None = None, source: str = "<frame>"
) -> Run:
    """Wrap a DataFrame of query_id, doc_id, score as a :class:`Run`, checking duplicates."""
    rows = frame[["query_id", "doc_id", "score"]].reset_index(drop=True)
    rows = rows.astype({"query_id": str, "doc_id": str, "score": "float64"})
    rows.index += 1
    return _run_from_rows(rows, name, source, query_ids)


def _run_from_rows(
    rows: pd.DataFrame, name: str, source: str, query_ids: Iterable[str] | None = None
) -> Run:
    """Check the rows (indexed by line number): every score a number, no doc repeated."""
    bad_score = np.isnan(rows["score"].to_numpy(dtype=np.float64))
    if bad_score.any():
        raise InputError(source, int(rows.index[np.argmax(bad_score)]), "score", "not a number")
    run_query_ids = _check_no_repeated_docs(rows, source)
    results = rows[["query_id", "doc_id", "score"]].reset_index(drop=True)
    known = run_query_ids if query_ids is None else list(query_ids)
    return Run(results, np.asarray(known, dtype=object), name)


def _read_fields_fast(path: Path, names: list[str], types: dict[str, pa.DataType]):
    """Parse the common clean layout (one space or one tab between exactly ``len(names)``
    fields) with Arrow's multi-threaded CSV reader; None when the file needs the general
    parser (other spacing, extra fields, comments, blank lines, a bad value).

    Rows map one to one to lines (nothing is skipped), so the index is the line number.
    """
    delimiter = "\t" if "\t" in _first_content_line(path) else " "
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
    # A comment line with the right number of fields parses, its query id starting with '#'.
    if pc.any(pc.starts_with(table["query_id"], "#")).as_py():
        return None
    rows = table.to_pandas()
    rows.index += 1
    return rows


def _read_trec_run_general(path: Path) -> pd.DataFrame:
    """Any whitespace between fields, extra fields ignored, errors naming line and field."""
    rows = _read_whitespace_table(path, TREC_RUN_FIELDS, usecols=[0, 2, 4, 5])
    rows["score"] = _floats(rows["score"], path, "score")
    return rows[["query_id", "doc_id", "score"]]


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
    return _run_from_rows(frame, name, str(path), query_ids)


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


def _integers(column: pd.Series, path: Path, field: str) -> pd.Series:
    values = pd.to_numeric(column, errors="coerce")
    bad = values.isna().to_numpy() | (values.to_numpy(dtype=float, na_value=0.5) % 1 != 0)
    if bad.any():
        position = int(np.argmax(bad))
        raise InputError(
            str(path),
            int(column.index[position]),
            field,
            f"not an integer: {column.iloc[position]!r}",
        )
    return values.astype("int64")


def _floats(column: pd.Series, path: Path, field: str) -> pd.Series:
    values = pd.to_numeric(column, errors="coerce").astype("float64")
    bad = values.isna().to_numpy()
    if bad.any():
        position = int(np.argmax(bad))
        raise InputError(
            str(path),
            int(column.index[position]),
            field,
            f"not a number: {column.iloc[position]!r}",
        )
    return values


def _first_content_line(path: Path) -> str:
    with path.open("rb") as handle:
        for raw in handle:
            line = raw.decode("utf-8", errors="replace").strip().lstrip("\ufeff")
            if line and not line.startswith("#"):
                return line
    return ""


def json_lines(path: Path) -> Iterator[tuple[int, object]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file."""
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, start=1):
            try:
                # A byte-order mark (files saved on Windows) is not part of the data.
                text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise InputError(
                    str(path), line, None, f"not valid UTF-8 ({error.reason})"
                ) from None
            if not text.strip():
                continue
            try:
                yield line, json.loads(text)
            except json.JSONDecodeError as error:
                raise InputError(str(path), line, None, f"not valid JSON ({error.msg})") from None


def _required_text(record: dict, field: str, source: str, line: int, prefix: str = "") -> str:
    value = record.get(field)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise InputError(source, line, prefix + field, "required, a non-empty string")
    return value
