"""Parsing and validating tasks to label (JSONL or CSV, see README, Formats) into Task rows.

Everything is checked before anything is written, and every error is an
:class:`goldset.eval.readers.InputError` naming the file, the line and the field, so an import is
all-or-nothing. A line may also be a golden-set record (``judgments`` instead of
``candidates``): a golden set exported by goldset can be imported again.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

from goldset.eval import validation
from goldset.eval.readers import InputError, decoded_lines, json_lines
from goldset.eval.trec import SCORE
from goldset.eval.validation import id_character, identifier, optional_text, text_or_none
from goldset.labeler.golden import to_log_time

TASK_KEYS = ("query_id", "query", "slice", "candidates", "metadata")
GOLDEN_KEYS = (
    "query_id",
    "query",
    "slice",
    "status",
    "answerable",
    "judgments",
    "first_relevant_rank",
    "judged_depth",
    "mode",
    "annotators",
    "seconds",
    "labelled_at",
    "notes",
    "metadata",
)
CANDIDATE_KEYS = frozenset(("doc_id", "title", "text", "score"))
CSV_REQUIRED = ("query_id", "query", "doc_id")
CSV_CANDIDATE_COLUMNS = ("doc_id", "title", "text", "score")
# A CSV field may be a whole long document; past this it is not a field but a broken file.
CSV_FIELD_LIMIT = 64 << 20


class Candidate(NamedTuple):
    """One candidate of a task. ``title``/``text`` are None when the line did not give them.

    A tuple rather than a dataclass: an import builds millions of them.
    """

    doc_id: str
    title: str | None = None
    text: str | None = None
    score: float | None = None
    metadata: dict | None = None


@dataclass(frozen=True)
class GoldenLabels:
    """The labels of a golden-set record (README, Formats, "Golden set")."""

    status: str
    answerable: bool
    judgments: dict[str, int]
    judged_depth: int
    mode: str
    annotators: tuple[str, ...]
    seconds: float
    labelled_at: str | None
    notes: str


@dataclass(frozen=True)
class Task:
    """One query to label with its candidates in the system's rank order.

    ``content_hash`` identifies the query's content: importing an identical query again is a
    no-op, a different one under the same id is an error.
    """

    query_id: str
    query: str
    slice: str
    metadata: dict
    candidates: tuple[Candidate, ...]
    line: int
    golden: GoldenLabels | None = None

    @property
    def content_hash(self) -> str:
        candidates = [[c.doc_id, c.title, c.text, c.score, c.metadata] for c in self.candidates]
        golden = asdict(self.golden) if self.golden else None
        payload = [self.query_id, self.query, self.slice, self.metadata, candidates, golden]
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_tasks(path: str | Path, max_grade: int = 3) -> list[Task]:
    """Read and validate a tasks file: CSV when its name ends in ``.csv``, JSONL otherwise.

    Raises :class:`InputError` (a ValueError) naming file, line and field on the first
    problem: invalid UTF-8, a line that is not JSON, a missing or mistyped field, a doc_id
    repeated within a query, a query_id repeated in the file, a doc whose
    title or text differs between lines, a grade outside 0..max_grade.
    """
    path = Path(path)
    lines = _csv_records(path) if path.suffix.lower() == ".csv" else json_lines(path)
    tasks = tasks_from_records(lines, str(path), max_grade)
    if not tasks:
        raise InputError(str(path), None, None, "no tasks in the file")
    return tasks


def tasks_from_records(
    records: Iterable[dict | tuple[int, dict]], source: str = "<records>", max_grade: int = 3
) -> list[Task]:
    """Validate task (or golden-set) records; ``records`` may yield ``(line, record)`` pairs."""
    tasks: list[Task] = []
    first_line: dict[str, int] = {}
    for position, item in enumerate(records, start=1):
        line, record = item if isinstance(item, tuple) else (position, item)
        task = _task(record, source, line, max_grade)
        if task.query_id in first_line:
            problem = (
                f"duplicate query_id {task.query_id!r} (first on line {first_line[task.query_id]})"
            )
            raise InputError(source, line, "query_id", problem)
        first_line[task.query_id] = line
        tasks.append(task)
    return tasks


def collect_documents(tasks: Iterable[Task], source: str) -> dict[str, tuple[int, str, dict]]:
    """The documents of some tasks: doc_id -> (line, field prefix, {title, text, metadata}).

    A doc_id names one document: where several lines give its title or text they must
    agree (an InputError names the later line); a line that omits them leaves the others'.
    """
    documents: dict[str, tuple[int, str, dict]] = {}
    for task in tasks:
        for index, candidate in enumerate(task.candidates):
            known = documents.get(candidate.doc_id)
            if known is None:
                fields = {"title": candidate.title, "text": candidate.text}
                fields["metadata"] = candidate.metadata
                documents[candidate.doc_id] = (task.line, f"candidates[{index}].", fields)
                continue
            first_line, _, fields = known
            for name, given in (("title", candidate.title), ("text", candidate.text)):
                if given is not None and fields[name] is not None and given != fields[name]:
                    problem = (
                        f"doc {candidate.doc_id!r} has a different {name} on line {first_line}"
                    )
                    raise InputError(source, task.line, f"candidates[{index}].{name}", problem)
                if fields[name] is None:
                    fields[name] = given
    return documents


# --- one record -----------------------------------------------------------------------------------


def _task(record: object, source: str, line: int, max_grade: int) -> Task:
    if not isinstance(record, dict):
        raise InputError(source, line, None, "expected a JSON object")
    where = (source, line)
    query_id = identifier(record.get("query_id"), "query_id", where)
    query = record.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InputError(source, line, "query", "required, a non-empty string")
    has_candidates, has_judgments = "candidates" in record, "judgments" in record
    if has_candidates and has_judgments:
        raise InputError(
            source,
            line,
            "judgments",
            "give candidates (a task) or judgments (a golden record), not both",
        )
    if not has_candidates and not has_judgments:
        raise InputError(source, line, "candidates", "required, a list")
    known = TASK_KEYS if has_candidates else GOLDEN_KEYS
    metadata = _metadata(record, known, where)
    if has_candidates:
        candidates = _candidates(record["candidates"], where)
        golden = None
    else:
        golden = _golden_labels(record, where, max_grade)
        depth = golden.judged_depth
        candidates = tuple(Candidate(doc_id) for doc_id in list(golden.judgments)[:depth])
    return Task(
        query_id=query_id,
        query=query,
        slice=optional_text(record.get("slice"), "slice", where),
        metadata=metadata,
        candidates=candidates,
        line=line,
        golden=golden,
    )


def _metadata(record: dict, known: tuple[str, ...], where: tuple[str, int]) -> dict:
    """Extra keys are kept as metadata; a ``metadata`` object is merged in (export writes one)."""
    nested = record.get("metadata", {})
    if not isinstance(nested, dict):
        raise InputError(*where, "metadata", "must be an object")
    return {**nested, **{key: value for key, value in record.items() if key not in known}}


def _candidates(value: object, where: tuple[str, int]) -> tuple[Candidate, ...]:
    if not isinstance(value, list):
        raise InputError(*where, "candidates", f"must be a list, got {type(value).__name__}")
    # An empty list is a query the system returned nothing for: the textbook unanswerable
    # case, labelled by a verdict (or an answer attached from search).
    candidates, seen = [], set()
    for index, item in enumerate(value):
        if type(item) is not dict:
            problem = "expected an object with doc_id, title, text, score"
            raise InputError(*where, f"candidates[{index}]", problem)
        fields = (item.get("doc_id"), item.get("title"), item.get("text"), item.get("score"))
        if not _plain_candidate(*fields):
            fields = _checked_candidate(fields, f"candidates[{index}]", where)
        if fields[0] in seen:
            problem = f"{fields[0]!r} repeated within the query"
            raise InputError(*where, f"candidates[{index}].doc_id", problem)
        seen.add(fields[0])
        extra = None if item.keys() <= CANDIDATE_KEYS else _extra(item)
        candidates.append(Candidate(*fields, extra))
    return tuple(candidates)


def _plain_candidate(doc_id: object, title: object, text: object, score: object) -> bool:
    """The common case, checked fast: string id (no control character, no whitespace),
    string-or-absent texts, finite float score."""
    return (
        type(doc_id) is str
        and doc_id != ""
        and id_character(doc_id) is None
        and (title is None or type(title) is str)
        and (text is None or type(text) is str)
        and (score is None or (type(score) is float and math.isfinite(score)))
    )


def _checked_candidate(fields: tuple, prefix: str, where: tuple[str, int]) -> tuple:
    """Validate one candidate's fields with precise errors (integer ids and scores accepted)."""
    doc_id, title, text, score = fields
    return (
        identifier(doc_id, f"{prefix}.doc_id", where),
        text_or_none(title, f"{prefix}.title", where),
        text_or_none(text, f"{prefix}.text", where),
        None if score is None else validation.number(score, f"{prefix}.score", where),
    )


def _extra(item: dict) -> dict:
    return {key: value for key, value in item.items() if key not in CANDIDATE_KEYS}


def _golden_labels(record: dict, where: tuple[str, int], max_grade: int) -> GoldenLabels:
    """The labels of a golden-set record, checked by the one golden-set schema (the eval
    reader's), with grades on the project's scale."""
    checked = validation.golden_record(record, where, max_grade)
    annotators = checked.annotators
    if "labels" in record or "adjudication" in record:
        # A team export where annotators disagreed: its labels are the decided ones, which
        # none of them may have given. They are replayed as one "import" annotator; each
        # annotator's own labels and the decision stay in the query's metadata.
        annotators = ()
    labelled_at = checked.labelled_at
    return GoldenLabels(
        status=checked.status,
        answerable=checked.answerable,
        judgments=dict(checked.judgments),
        judged_depth=checked.judged_depth,
        mode=checked.mode or "first_hit",
        annotators=annotators,
        seconds=checked.seconds,
        labelled_at=None if labelled_at is None else to_log_time(labelled_at),
        notes=checked.notes,
    )


# --- file formats ---------------------------------------------------------------------------------


def _csv_records(path: Path) -> Iterator[tuple[int, dict]]:
    """Group CSV rows (one candidate a row) into task records, in first-appearance order.

    Query-level columns (query, slice and any extra column, kept as metadata) must agree
    on every row of a query. A row whose candidate columns (doc_id, title, text, score) are
    all empty names a query without adding a candidate: the way to list a query the system
    returned nothing for. The CSV must be well formed: a quote left open (which would
    swallow the rest of the file into one field), a stray quote and a repeated column name
    are refused with their line; a field may be long (a whole document), up to 64 MiB.
    """
    source = str(path)
    text = "".join(chunk for _, chunk in decoded_lines(path))
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = _csv_rows(reader, source)
    line, columns = next(rows, (1, []))
    _check_csv_header(columns, source, line)
    query_columns = [c for c in columns if c not in CSV_CANDIDATE_COLUMNS and c != "query_id"]
    records: dict[str, tuple[int, dict, set[str]]] = {}
    for line, values in rows:
        if not values:
            continue  # a blank line
        if len(values) > len(columns):
            raise InputError(source, line, None, "more fields than the header has columns")
        row = dict(zip(columns, values + [""] * (len(columns) - len(values)), strict=True))
        query_id = row["query_id"]
        if query_id not in records:
            identifier(query_id or None, "query_id", (source, line))
            fields = {column: row[column] for column in query_columns}
            record = {"query_id": query_id, **fields, "candidates": []}
            records[query_id] = (line, record, set())
        first_line, record, doc_ids = records[query_id]
        if row["doc_id"] in doc_ids:
            problem = f"{row['doc_id']!r} repeated within query {query_id!r}"
            raise InputError(source, line, "doc_id", problem)
        for column in query_columns:
            if row[column] != record[column]:
                problem = f"differs from line {first_line} for query {query_id!r}"
                raise InputError(source, line, column, problem)
        if any(row.get(column) for column in CSV_CANDIDATE_COLUMNS):
            record["candidates"].append(_csv_candidate(row, source, line))
            doc_ids.add(row["doc_id"])
    for first_line, record, _ in records.values():
        if not record.get("slice"):
            record.pop("slice", None)
        yield first_line, record


def _csv_rows(reader: Iterator[list[str]], source: str) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` for each CSV row, the line being where the row starts; a quoting
    error is refused naming that line."""
    start = 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            problem = f"not valid CSV ({error})"
            if "unexpected end of data" in str(error):
                problem = "a quote opened on this line is never closed"
            raise InputError(source, start, None, problem) from None
        yield start, values
        start = reader.line_num + 1


def _check_csv_header(columns: list[str], source: str, line: int) -> None:
    seen: set[str] = set()
    for column in columns:
        if column in seen:
            raise InputError(source, line, column, "column named twice in the CSV header")
        seen.add(column)
    for required in CSV_REQUIRED:
        if required not in columns:
            raise InputError(source, line, required, "missing column in the CSV header")


def _csv_candidate(row: dict, source: str, line: int) -> dict:
    candidate = {name: row[name] for name in ("doc_id", "title", "text") if name in row}
    identifier(row["doc_id"] or None, "doc_id", (source, line))
    score = (row.get("score") or "").strip()
    if score:
        # The decimal spelling TREC runs use (eval.trec): not Python's "1_000" or " 1 ".
        if not re.fullmatch(SCORE, score):
            raise InputError(source, line, "score", f"not a number: {score!r}")
        candidate["score"] = validation.number(float(score), "score", (source, line))
    return candidate
