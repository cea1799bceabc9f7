"""Whitespace-separated TREC files (runs, qrels, BEIR ``qrels.tsv``): one reading, three parsers.

The reading (trec_eval's, made explicit, so that every path applies the same one):

- The file is UTF-8; a byte-order mark at its start is not data. A line ends at ``\\n``,
  ``\\r\\n`` or a lone ``\\r`` (as Arrow's CSV reader and Python's universal newlines count).
- Fields are separated by runs of ASCII whitespace (space, tab, ``\\v``, ``\\f``, ``\\r``: C's
  ``isspace``, which trec_eval splits on); whitespace before the first field and after the last
  is not data. Any other character is part of its field: a no-break space (U+00A0) or another
  Unicode space inside an id belongs to the id, on every path.
- A line holding only whitespace is skipped, and so is a comment: a line whose first field
  starts with ``#``. A BEIR file's first other line is its header.
- A run line has at least 6 fields (more are ignored), a qrels line exactly 4, a BEIR line 3.
- Ids hold no control characters (C0, DEL, C1).
- A grade is ``[+-]digits`` and must fit int64 (``99999999999999999999`` is refused, not
  wrapped). A score is a decimal number (``[+-]digits[.digits][e[+-]digits]``, ``.5`` and ``5.``
  included) or ``inf``/``infinity`` in any case; one past the double range (``1e400``) reads as
  ±inf and a denormal as itself, exactly as trec_eval's ``strtod`` reads them. NaN, hex floats
  (``0x1p3``) and anything else are refused.

Three parsers give that reading, row for row and byte for byte:

- :func:`read_plain`: pure Python, line by line. The reference, the quickest for small files
  (it needs neither pyarrow nor its start-up: its ids are numpy arrays of str), and the one
  that words every refusal.
- :func:`~eval.trec_arrow.read_general`: Arrow, vectorised, any layout. A file it would
  refuse goes to :func:`read_plain`, so a refusal names the same line and field whichever
  path met it.
- :func:`~eval.trec_arrow.read_fast`: Arrow's multi-threaded CSV reader on the clean layout
  (one space or one tab between exactly the expected fields). It declines (None) anything
  else.

This module holds the reading and the plain parser; :mod:`goldset.eval.trec_arrow` the other two.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from goldset.eval.arrow import pa
from goldset.eval.columns import (
    PairIndex,
    arrow_strings,
    factorize_runs,
    first_repeat,
    runs_of_equals,
)
from goldset.eval.errors import InputError
from goldset.eval.validation import INT64_MAX, INT64_MIN, control_character

if TYPE_CHECKING:  # only Rows.from_frame takes pandas input; the eval path never imports it
    import pandas as pd

BOM = b"\xef\xbb\xbf"
# The regular expressions are kept as patterns: ``re`` compiles one (and keeps it) when it is
# first used, on the line-by-line loop or an odd file, not at the start-up of every eval.
LINE_END = rb"\r\n|\r|\n"
GRADE = r"[+-]?[0-9]+"
SCORE = r"(?i)[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?)"
# The longest decimal text of an int64: a sign and 19 digits (leading zeros aside).
INT64_DIGITS = 19
# Characters that make the plain parser's quick pass hand a file to its line-by-line loop:
# control characters other than the ASCII whitespace that separates fields (an id may not
# hold one), and the Unicode spaces that str.split() splits on and bytes.split() does not.
QUICK_UNSAFE = "[\x00-\x08\x0e-\x1f\x7f-\x9f\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
# QUICK_UNSAFE's characters of ASCII, as bytes.
ASCII_UNSAFE = bytes([*range(0x09), *range(0x0E, 0x20), 0x7F])
ALL_GRADES = f"(?:{GRADE}\n)*"
ALL_SCORES = f"(?i)(?:(?:{SCORE.removeprefix('(?i)')})\n)*"
# Bytes of whole lines the plain parser's quick pass splits at a time (see _quick_block):
# its tokens' memory stays in the CPU cache and is reused block after block.
QUICK_BLOCK_BYTES = 1 << 16


class Layout(NamedTuple):  # not a dataclass, slower to build at every eval's start-up
    """Which fields a kind of file has, and which three of them are read."""

    kind: str
    names: tuple[str, ...]
    query: int
    doc: int
    value: int
    integer: bool
    exact: bool
    header: bool = False
    # Judgements: their (query, doc) pairs are indexed as they are read (see Rows.pairs), to
    # be matched with ranked rows later; the index finds a repeated doc too.
    indexed: bool = False

    @property
    def value_name(self) -> str:
        """The name of the value field (grade or score)."""
        return self.names[self.value]

    def count_problem(self, count: int) -> tuple[str, str] | None:
        """(field, problem) when a line with ``count`` fields does not fit the layout."""
        needed = len(self.names)
        if count >= needed and (count == needed or not self.exact):
            return None
        spelled = " ".join(self.names)
        if count < needed:
            quantity = "" if self.exact else "at least "
            problem = f"a line needs {quantity}{needed} fields ({spelled}), this one has {count}"
            return self.names[count], problem
        problem = f"a {self.kind} line has exactly {needed} fields ({spelled}), not {count}"
        return self.names[-1], problem


RUN = Layout("run", ("query_id", "iter", "doc_id", "rank", "score", "tag"), 0, 2, 4, False, False)
QRELS = Layout("qrels", ("query_id", "iter", "doc_id", "grade"), 0, 2, 3, True, True, indexed=True)
BEIR_QRELS = Layout(
    "BEIR qrels", ("query_id", "doc_id", "score"), 0, 1, 2, True, True, True, indexed=True
)


@dataclass(frozen=True, eq=False)
class Rows:
    """Rows of (query, doc, value) as read from a file, before they become a golden set or a run.

    ``query_index`` gives each row's position in ``query_ids`` (distinct, in order of first
    appearance); ``lines`` gives each row's line number (None: row i is on line i + 1).
    """

    query_ids: np.ndarray
    query_index: np.ndarray
    doc_ids: pa.Array | pa.ChunkedArray | np.ndarray
    values: np.ndarray
    lines: np.ndarray | None = None
    indexed: bool = False  # judgements: see Layout.indexed

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, values: pd.Series) -> Rows:
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

    @cached_property
    def pairs(self) -> PairIndex:
        """The rows' (query, doc) pairs indexed, as a golden set keeps its judgements'."""
        return PairIndex(self.query_index, self.doc_ids)

    @cached_property
    def repeated_row(self) -> int | None:
        """The first row whose doc stands on an earlier row of its query (None: no doc is
        repeated). Judgements' rows find it through their index of pairs (:attr:`pairs`),
        which they need anyway; others by :func:`~eval.columns.first_repeat`, quicker alone."""
        if self.indexed:
            return self.pairs.first_repeat()
        return first_repeat(self.query_index, self.doc_ids)

    def check_no_repeated_docs(self, source: str) -> None:
        """Raise an input error, naming the second line, if a doc is given twice for a query."""
        row = self.repeated_row
        if row is not None:
            doc_id = self.doc_ids[row]
            doc_id = doc_id if isinstance(doc_id, str) else doc_id.as_py()
            query_id = self.query_ids[self.query_index[row]]
            problem = f"{doc_id!r} repeated within query {query_id!r}"
            raise InputError(source, self.line(row), "doc_id", problem)


# --- the plain parser: the reference -----------------------------------------------------------


def read_plain(path: Path, layout: Layout) -> Rows:
    """Read a TREC file line by line in Python (see the module's docstring for the reading).

    A quick pass reads a file with no control character, odd space or bad value in bulk
    (:func:`read_quick`); any other file is read line by line, which words the refusal.
    """
    data = path.read_bytes()
    data = data[len(BOM) :] if data.startswith(BOM) else data
    quick = read_quick(data, layout)
    return quick if quick is not None else read_lines(data, layout, str(path))


def read_lines(data: bytes, layout: Layout, source: str) -> Rows:
    """The plain parser's line-by-line loop over a file's bytes (its BOM removed): the
    reference reading, and the wording of every refusal."""
    lines = re.split(LINE_END, data)
    query_ids: dict[str, int] = {}
    query_index, doc_ids, values, numbers = [], [], [], []
    header_pending = layout.header
    for number, raw in enumerate(lines, start=1):
        fields = raw.split()  # bytes.split() splits on ASCII whitespace only
        if not fields or fields[0].startswith(b"#"):
            continue
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problem = f"not valid UTF-8 (byte {error.start + 1} of the line: {error.reason})"
            raise InputError(source, number, None, problem) from None
        if header_pending:
            header_pending = False
            continue
        wrong = layout.count_problem(len(fields))
        if wrong is not None:
            raise InputError(source, number, *wrong)
        where = (source, number)
        query_id = _trec_id(fields[layout.query], layout.names[layout.query], where)
        doc_id = _trec_id(fields[layout.doc], layout.names[layout.doc], where)
        values.append(_value(fields[layout.value].decode(), layout, where))
        query_index.append(query_ids.setdefault(query_id, len(query_ids)))
        doc_ids.append(doc_id)
        numbers.append(number)
    return Rows(
        np.array(list(query_ids), dtype=object),
        np.array(query_index, dtype=np.int64),
        np.array(doc_ids, dtype=object),
        np.array(values, dtype=np.int64 if layout.integer else np.float64),
        np.array(numbers, dtype=np.int64),
        layout.indexed,
    )


def read_quick(data: bytes, layout: Layout, block_bytes: int = QUICK_BLOCK_BYTES) -> Rows | None:
    """The rows of a file that the line-by-line loop would read without a refusal, read in
    bulk; None for any file in doubt (the loop then reads it, or words its refusal).

    Without control characters (the field-separating ASCII whitespace aside) and Unicode
    spaces, ``str.split`` splits where ``bytes.split`` does and every id is clean. The file
    is read in blocks of whole lines, about ``block_bytes`` each (:func:`_quick_block`).
    """
    if b"\r" in data:  # a line ends at LF, CR LF or a lone CR
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    blocks: list[_QuickBlock] = []
    lines_before = 0
    header_pending = layout.header
    for start, end in _line_blocks(data, block_bytes):
        block = _quick_block(data[start:end], layout, lines_before, header_pending)
        if block is None:
            return None
        header_pending = header_pending and not block.had_header
        blocks.append(block)
        lines_before += data.count(b"\n", start, end)
    if not sum(len(block.lines) for block in blocks):
        return None  # no row: the loop reads it (or refuses it)
    run_codes, query_ids = factorize_runs(np.concatenate([block.query_runs for block in blocks]))
    run_lengths = np.concatenate([block.query_run_lengths for block in blocks])
    return Rows(
        query_ids,
        np.repeat(run_codes, run_lengths),
        np.concatenate([block.doc_ids for block in blocks]),
        np.concatenate([block.values for block in blocks]),
        np.concatenate([block.lines for block in blocks]),
        layout.indexed,
    )


class _QuickBlock(NamedTuple):  # not a dataclass: this module is on every eval's start-up
    """The rows of one block of lines, as :func:`read_quick` keeps them: each run of rows of
    one query as its id and length, the doc ids and values, their line numbers, and whether
    the block's first line with content was the file's header (and skipped)."""

    query_runs: np.ndarray
    query_run_lengths: np.ndarray
    doc_ids: np.ndarray
    values: np.ndarray
    lines: np.ndarray
    had_header: bool = False


def _line_blocks(data: bytes, block_bytes: int) -> Iterator[tuple[int, int]]:
    """(start, end) of consecutive blocks of whole lines of about ``block_bytes`` each."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + block_bytes)
        end = len(data) if end < 0 else end + 1
        yield start, end
        start = end


def _quick_block(
    data: bytes, layout: Layout, lines_before: int, header_pending: bool
) -> _QuickBlock | None:
    """One block of whole lines read by :func:`read_quick`, or None if the block is in doubt.

    The block is split at once, and numpy finds, from its bytes, where each token starts and
    on which line, so that the fields of each line are found without a loop. Its tokens are
    dropped once its three fields are taken: memory the next block reuses, where splitting
    a whole file at once would make the kernel hand out (and zero) fresh pages for every token
    of it (measured: bench/README.md, "Figures behind design choices").
    """
    text = _quick_text(data)
    if text is None:
        return None
    tokens = text.split()
    if not tokens:
        return _BLANK_BLOCK
    lines = _line_tokens(data, len(tokens))
    if lines is None:
        return None
    starts, counts, numbers = lines
    if header_pending:
        starts, counts, numbers = starts[1:], counts[1:], numbers[1:]
        if len(starts) == 0:
            return _BLANK_BLOCK._replace(had_header=True)
    if any(layout.count_problem(n) for n in set(counts.tolist())):
        return None
    parsed = _quick_values(_line_field(tokens, starts, counts, layout.value), layout.integer)
    if parsed is None:
        return None
    query_ids = np.array(_line_field(tokens, starts, counts, layout.query), dtype=object)
    run_starts, runs = runs_of_equals(query_ids)
    return _QuickBlock(
        runs,
        np.diff(np.r_[run_starts, len(query_ids)]),
        np.array(_line_field(tokens, starts, counts, layout.doc), dtype=object),
        parsed,
        numbers + lines_before,
        header_pending,
    )


_NO_STRINGS = np.zeros(0, dtype=object)
_NO_NUMBERS = np.zeros(0, dtype=np.int64)
# A block of blank lines: no rows (its values cast to any number type when joined).
_BLANK_BLOCK = _QuickBlock(_NO_STRINGS, _NO_NUMBERS, _NO_STRINGS, _NO_NUMBERS, _NO_NUMBERS)


def _quick_text(data: bytes) -> str | None:
    """A block's text, or None if it holds a character that read_quick leaves to the loop."""
    if data.isascii():  # the usual file: its bytes are checked quicker than by a regex
        if len(data.translate(None, ASCII_UNSAFE)) < len(data):
            return None
        return data.decode("ascii")
    try:
        text = data.decode("utf-8")  # a block ends at a line feed: never within a character
    except UnicodeDecodeError:
        return None
    return None if re.search(QUICK_UNSAFE, text) else text


def _line_tokens(data: bytes, token_count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per line with content: the index of its first token among the block's tokens, how
    many it has, and its line number (from 1). None for a block with a comment line, or if
    numpy does not find the ``token_count`` tokens that str.split() found (a block
    read_quick should not have taken)."""
    codes = np.frombuffer(data, dtype=np.uint8)
    # The bytes that str.split() and bytes.split() both split on: in a block read_quick takes
    # (no other control character, a CR made a line feed) exactly those up to 0x20 (tab,
    # line feed, vertical tab, form feed, space), found by one comparison.
    space = codes <= 0x20
    starts_token = ~space
    starts_token[1:] &= space[:-1]
    first_bytes = np.flatnonzero(starts_token)  # of each token
    if len(first_bytes) != token_count:
        return None
    # Tokens before each line's end, hence on each line (the last one may lack a line feed).
    before = np.searchsorted(first_bytes, np.flatnonzero(codes == 0x0A))
    per_line = np.diff(before, prepend=0, append=token_count)
    content = np.flatnonzero(per_line)
    counts = per_line[content]
    starts = np.cumsum(counts) - counts
    if (codes[first_bytes[starts]] == ord("#")).any():
        return None  # a comment line
    return starts, counts, content + 1


# Over these characters, float() and int() take exactly the numbers SCORE and GRADE match
# (no letters: no inf, nan or hex; no underscore; no space): the regex is needed only beyond.
_DECIMAL_CHARACTERS = b"0123456789+-.eE\n"
_INTEGER_CHARACTERS = b"0123456789+-\n"


def _quick_values(values: list[str], integer: bool) -> np.ndarray | None:
    """A block's grades (``integer``) or scores, as the line-by-line loop reads them; None
    if one of them is in doubt (the loop then reads it, or words its refusal).

    They are checked by their characters where that suffices, else by one regex.
    """
    joined = ("\n".join(values) + "\n").encode()
    allowed = _INTEGER_CHARACTERS if integer else _DECIMAL_CHARACTERS
    # Over allowed characters only, int() and float() refuse a malformed value (below);
    # beyond them (inf, say), the regex decides.
    if joined.translate(None, allowed) and not re.fullmatch(
        ALL_GRADES if integer else ALL_SCORES, joined.decode()
    ):
        return None
    try:
        if integer:
            return np.array(list(map(int, values)), dtype=np.int64)
        return np.array(list(map(float, values)), dtype=np.float64)
    except (OverflowError, ValueError):  # a grade past int64 (or past Python's digit limit)
        return None


def _line_field(tokens: list[str], starts: np.ndarray, counts: np.ndarray, field: int) -> list[str]:
    """One field of every line: a slice of the tokens when every line has the same count."""
    width = int(counts[0])
    if (counts == width).all():  # the lines' tokens stand one after another, width apart
        return tokens[int(starts[0]) + field : int(starts[-1]) + width : width]
    return [tokens[index] for index in (starts + field).tolist()]


def _trec_id(field: bytes, name: str, where: tuple[str, int]) -> str:
    text = field.decode()
    control = control_character(text)
    if control is not None:
        problem = f"an id cannot hold a control character ({control!r} in {text!r})"
        raise InputError(*where, name, problem)
    return text


def _value(text: str, layout: Layout, where: tuple[str, int]) -> int | float:
    """A grade (int64) or a score (float) from its text, or a refusal naming the field."""
    shown = repr(text) if len(text) <= 40 else repr(text[:37] + "...")
    if layout.integer:
        if not re.fullmatch(GRADE, text):
            raise InputError(*where, layout.value_name, f"not an integer: {shown}")
        digits = text.lstrip("+-").lstrip("0")
        value = int(text) if len(digits) <= INT64_DIGITS else None
        if value is None or not INT64_MIN <= value <= INT64_MAX:
            raise InputError(*where, layout.value_name, f"{shown} does not fit a 64-bit integer")
        return value
    if not re.fullmatch(SCORE, text):
        raise InputError(*where, layout.value_name, f"not a number: {shown}")
    return float(text)
