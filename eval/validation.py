"""One set of rules for every input value, whatever the format it came in.

Every reader (golden sets and runs in eval, tasks, corpus and queries in labeler) checks its
values here, so that one input is accepted or refused alike everywhere:

- an id is a non-empty string (or an integer, read as its digits) without control characters
  (C0, DEL, C1) and without whitespace of any kind (a space, a no-break space, an em space...):
  a TREC file separates its fields by whitespace, so it could not hold such an id, and tools
  disagree on which Unicode spaces separate (trec_eval splits on ASCII only, Python's
  ``str.split`` on them all). JSON could hold it, but then a project could not be exported as
  qrels. Nor invisible format characters (Unicode's Cf: a zero-width space, a BOM, a bidi
  control): ``q1`` and ``q1`` followed by one would be two ids that look alike. (TREC text
  itself is read as trec_eval reads it: see :mod:`goldset.eval.trec`.) A name (an
  annotator's, a reviewer's, a run's) may hold spaces, not control characters;
- a grade is an integer that fits int64 (and 0..max_grade where the project sets a scale);
- a score is a number; NaN is refused; ``finite`` scores (a task's) refuse ±inf, a run's may be
  ±inf, as trec_eval reads them (a number beyond the double range reads as ±inf, like strtod);
- ``seconds`` is a finite number >= 0; a time is ISO-8601 and stays in range once moved to UTC;
- a JSON line nests at most ``MAX_JSON_DEPTH`` levels, holds no integer longer than Python
  parses (4,300 digits), no lone surrogate (``"\\ud800"`` is not a character) and no key twice
  in one object (``{"grade": 0, "grade": 3}`` has no one reading: JSON parsers disagree on it).

The golden-set record (docs/formats.md, "The golden set") is defined once, by :func:`golden_record`:
the eval reader and the importer both read golden JSONL through it.

Every refusal is an :class:`InputError` naming the file, the line and the field.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from goldset.eval.errors import InputError

Where = tuple[str, int | None]

GOLDEN_STATUSES = ("done", "skipped", "pending")
GOLDEN_MODES = ("first_hit", "full")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Deeper JSON has no business in these files, and Python's recursion limit is near 1,000.
MAX_JSON_DEPTH = 64
CONTROL = r"[\x00-\x1f\x7f-\x9f]"  # patterns: compiled by re when first used
# What an id may not hold: a control character or whitespace (\s: what str.isspace() is
# true for, ASCII and Unicode spaces alike).
NOT_IN_ID = r"[\x00-\x1f\x7f-\x9f\s]"
# A JSON escape that may stand for a surrogate; only then are the strings checked.
SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"


# --- ids and text -----------------------------------------------------------------------------


def control_character(text: str) -> str | None:
    """The first control character (C0, DEL or C1) in ``text``, or None."""
    if text.isprintable():  # fast, and true for almost every id
        return None
    found = re.search(CONTROL, text)
    return found.group() if found else None


def id_character(text: str) -> str | None:
    """The first character that no id may hold (a control character, whitespace or an
    invisible format character, see the module docstring) in ``text``, or None."""
    if text.isprintable() and " " not in text:  # fast, and true for almost every id
        return None
    found = re.search(NOT_IN_ID, text)
    if found:
        return found.group()
    # Zero-width spaces, a BOM, bidi controls: q1 and q1+U+200B would look like one id. A
    # lone surrogate (Cs) is no character: only a Python string (a dict's key) can hold one.
    return next((char for char in text if unicodedata.category(char) in ("Cf", "Cs")), None)


def identifier(value: object, field: str, where: Where) -> str:
    """An id: a non-empty string without control characters or whitespace; an integer gives
    its digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        got = "missing" if value is None else f"got {type(value).__name__} {value!r}"
        raise InputError(*where, field, f"required, a non-empty string ({got})")
    checked_id(value, field, where)
    return value


def checked_id(text: str, field: str, where: Where) -> str:
    """``text`` itself, once known to hold no control character and no whitespace."""
    found = id_character(text)
    if found is not None:
        if found.isspace():  # a tab is both: that a TREC file splits there is what matters
            what = "whitespace (TREC separates fields by it)"
        elif unicodedata.category(found) == "Cf":
            what = "an invisible format character (it would look like another id)"
        elif unicodedata.category(found) == "Cs":
            what = "a lone surrogate (not a character: no UTF-8 file can hold it)"
        else:
            what = "a control character"
        problem = f"an id cannot hold {what} ({found!r} in {text!r})"
        raise InputError(*where, field, problem)
    return text


def checked_name(text: str, field: str, where: Where) -> str:
    """``text`` itself (a person's name: it may hold spaces), once known to hold no control
    character."""
    control = control_character(text)
    if control is not None:
        problem = f"a name cannot hold a control character ({control!r} in {text!r})"
        raise InputError(*where, field, problem)
    return text


def text_or_none(value: object, field: str, where: Where) -> str | None:
    """A string, or None when absent. A lone surrogate is refused: only a Python string (a
    record handed to the API) can hold one, and no UTF-8 file or database could."""
    if value is not None and not isinstance(value, str):
        raise InputError(*where, field, f"must be a string, got {type(value).__name__}")
    if (
        value is not None
        and not value.isprintable()
        and any(unicodedata.category(char) == "Cs" for char in value)
    ):
        raise InputError(*where, field, "holds a lone surrogate, not a character")
    return value


def optional_text(value: object, field: str, where: Where) -> str:
    """A string, "" when absent."""
    return text_or_none(value, field, where) or ""


# --- numbers, flags and times -------------------------------------------------------------------


def grade(value: object, field: str, where: Where, max_grade: int | None = None) -> int:
    """A grade: an integer that fits int64, and in 0..max_grade when a scale is given."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(*where, field, f"grade must be an integer, got {_short(value)}")
    if max_grade is not None and not 0 <= value <= max_grade:
        raise InputError(*where, field, f"grade {_short(value)} is outside 0..{max_grade}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise InputError(*where, field, f"grade {_short(value)} does not fit a 64-bit integer")
    return value


def number(value: object, field: str, where: Where, finite: bool = True) -> float:
    """A score as a float. NaN is refused; ±inf (and integers past the double range, read as
    ±inf) only when not ``finite``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(*where, field, f"must be a number, got {_short(value)}")
    try:
        result = float(value)
    except OverflowError:  # an integer beyond the double range
        result = math.inf if value > 0 else -math.inf
    if math.isnan(result) or (finite and math.isinf(result)):
        what = "a finite number" if finite else "a number (not NaN)"
        raise InputError(*where, field, f"must be {what}, got {_short(value)}")
    return result


def seconds(value: object, field: str, where: Where) -> float:
    """A duration: a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(*where, field, f"must be a number >= 0, got {_short(value)}")
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not 0 <= result < math.inf:
        raise InputError(*where, field, f"must be a finite number >= 0, got {_short(value)}")
    return result


def boolean(value: object, field: str, where: Where) -> bool:
    """true or false (not 1, not "yes")."""
    if not isinstance(value, bool):
        raise InputError(*where, field, f"must be true or false, got {_short(value)}")
    return value


def timestamp(value: object, field: str, where: Where) -> str | None:
    """An ISO-8601 time (naive means UTC), returned as given; None when absent. It must stay
    in range once moved to UTC (``0001-01-01T00:00:00+14:00`` does not)."""
    if value is None:
        return None
    problem = f"must be an ISO-8601 time, got {_short(value)}"
    if not isinstance(value, str):
        raise InputError(*where, field, problem)
    from datetime import UTC, datetime  # only golden JSONL has times: not on a TREC eval

    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is not None:
            moment.astimezone(UTC)
    except ValueError:
        raise InputError(*where, field, problem) from None
    except OverflowError:
        raise InputError(*where, field, f"{value!r} is out of range once moved to UTC") from None
    return value


def _short(value: object) -> str:
    """``repr(value)``, cut short: a 400-digit number does not belong in a one-line error."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return text if len(text) <= 60 else text[:57] + "..."


# --- JSON lines ---------------------------------------------------------------------------------


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
        if text.strip():
            yield line, json_value(text, (str(path), line))


def json_value(text: str, where: Where) -> object:
    """One JSON document, refused (never a RecursionError or a vague ValueError) when it is
    not JSON, nests too deep, holds an integer too long to parse, a lone surrogate or a key
    given twice in one object."""
    try:
        value = json_document(text)
    except RepeatedKey as repeated:
        raise InputError(*where, repeated.key, "is given twice in one object") from None
    except json.JSONDecodeError as error:
        problem = f"not valid JSON ({error.msg} at column {error.colno})"
        raise InputError(*where, None, problem) from None
    except RecursionError:
        raise InputError(*where, None, _too_deep()) from None
    except ValueError:  # Python's limit on integer digits
        problem = "holds an integer with more than 4,300 digits (no number is that long)"
        raise InputError(*where, None, problem) from None
    brackets = text.count("[") + text.count("{")
    surrogates = "\\u" in text and re.search(SURROGATE_ESCAPE, text) is not None
    if brackets > MAX_JSON_DEPTH or surrogates:
        _check_nesting_and_text(value, where)
    return value


class RepeatedKey(ValueError):
    """A JSON object names one key twice (raised from inside the parser, caught by the caller)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object_without_repeated_keys(pairs: list[tuple[str, object]]) -> dict:
    """``json``'s hook for each object: the object as a dict, refused if a key repeats."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return value


def json_document(text: str) -> object:
    """Parse one JSON document strictly, as :func:`json_value` does, for text that is not a
    line of a file (a judge's answer, a setting): refuses a repeated key with
    :class:`RepeatedKey`, and otherwise raises what :func:`json.loads` raises."""
    return json.loads(text, object_pairs_hook=_object_without_repeated_keys)


def _check_nesting_and_text(value: object, where: Where) -> None:
    """Walk the value without recursion: refuse nesting past MAX_JSON_DEPTH and lone
    surrogates (which no UTF-8 file or database can hold), naming the key that holds one."""
    stack: list[tuple[object, int, str | None]] = [(value, 1, None)]
    while stack:
        item, depth, field = stack.pop()
        if isinstance(item, dict | list) and depth > MAX_JSON_DEPTH:
            raise InputError(*where, None, _too_deep())
        if isinstance(item, dict):
            for key, inner in item.items():
                name = key if field is None else f"{field}.{key}"
                stack.append((key, depth, name))
                stack.append((inner, depth + 1, name))
        elif isinstance(item, list):
            for position, inner in enumerate(item):
                stack.append((inner, depth + 1, f"{field or ''}[{position}]"))
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                problem = "holds a lone surrogate (\\ud800-\\udfff escape), not a character"
                raise InputError(*where, field, problem) from None


def _judgments(judgments: object, where: Where, max_grade: int | None) -> dict[str, int]:
    """A golden record's ``{doc_id: grade}``, checked."""
    if not isinstance(judgments, dict):
        raise InputError(*where, "judgments", "must be an object of doc_id: grade")
    for doc_id, value in judgments.items():
        if not isinstance(doc_id, str):  # only a record built in Python: JSON keys are strings
            return _judgments(_string_keys(judgments, where), where, max_grade)
        if not doc_id:
            raise InputError(*where, "judgments", "a doc_id is empty")
        # The field names the doc only once it is known to print on one line.
        checked_id(doc_id, "judgments", where)
        grade(value, f"judgments.{doc_id}", where, max_grade)
    return judgments


def _string_keys(judgments: dict, where: Where) -> dict:
    """A Python record's judgements keyed by ids as strings (an integer gives its digits, as
    in a run); two keys that give one id are refused."""
    keyed: dict[str, object] = {}
    for doc_id, value in judgments.items():
        key = identifier(doc_id, "judgments", where)
        if key in keyed:
            raise InputError(*where, "judgments", f"doc {key!r} given twice")
        keyed[key] = value
    return keyed


def _too_deep() -> str:
    return f"JSON nested deeper than {MAX_JSON_DEPTH} levels"


# --- the golden-set record -----------------------------------------------------------------------


class GoldenRecord(NamedTuple):  # not a dataclass: quicker to build at every eval's start-up
    """A golden-set JSONL record, checked (docs/formats.md, "The golden set"). Absent keys are None
    where the reader decides the default (``mode``, ``labelled_at``)."""

    query_id: str
    query: str
    slice: str
    status: str
    answerable: bool
    judgments: dict[str, int]
    first_relevant_rank: int | None
    judged_depth: int
    mode: str | None
    annotators: tuple[str, ...]
    seconds: float
    labelled_at: str | None
    notes: str


def golden_record(record: object, where: Where, max_grade: int | None = None) -> GoldenRecord:
    """Check one golden-set record. ``max_grade`` is the project's scale (None: any int64)."""
    if not isinstance(record, dict):
        raise InputError(*where, None, "expected a JSON object")
    status = record.get("status", "done")
    if status not in GOLDEN_STATUSES:
        problem = f"must be one of {', '.join(GOLDEN_STATUSES)}, got {_short(status)}"
        raise InputError(*where, "status", problem)
    judgments = _judgments(record.get("judgments", {}), where, max_grade)
    depth = record.get("judged_depth", len(judgments))
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= len(judgments):
        raise InputError(*where, "judged_depth", f"must be an integer in 0..{len(judgments)}")
    first = record.get("first_relevant_rank")
    if first is not None and (
        isinstance(first, bool) or not isinstance(first, int) or not 1 <= first <= INT64_MAX
    ):
        raise InputError(*where, "first_relevant_rank", "must be a rank >= 1, or null")
    mode = record.get("mode") or None
    if mode is not None and mode not in GOLDEN_MODES:
        raise InputError(*where, "mode", f"must be one of {', '.join(GOLDEN_MODES)}")
    annotators = record.get("annotators") or []
    if not isinstance(annotators, list):
        raise InputError(*where, "annotators", "must be a list of non-empty strings")
    for position, name in enumerate(annotators):
        if not isinstance(name, str) or not name:
            raise InputError(*where, "annotators", "must be a list of non-empty strings")
        checked_name(name, f"annotators[{position}]", where)
    query = record.get("query", "")
    return GoldenRecord(
        query_id=identifier(record.get("query_id"), "query_id", where),
        query=query if isinstance(query, str) else str(query),
        slice=optional_text(record.get("slice"), "slice", where),
        status=status,
        answerable=boolean(record.get("answerable", True), "answerable", where),
        judgments=judgments,
        first_relevant_rank=first,
        judged_depth=depth,
        mode=mode,
        annotators=tuple(annotators),
        seconds=seconds(record.get("seconds", 0.0), "seconds", where),
        labelled_at=timestamp(record.get("labelled_at"), "labelled_at", where),
        notes=optional_text(record.get("notes"), "notes", where),
    )
