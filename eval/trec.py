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
- :func:`read_general`: Arrow, vectorised, any layout. A file it would refuse goes to
  :func:`read_plain`, so a refusal names the same line and field whichever path met it.
- :func:`read_fast`: Arrow's multi-threaded CSV reader on the clean layout (one space or one
  tab between exactly the expected fields). It declines (None) anything else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from eval.arrow import pa, pc, pcsv
from eval.columns import (
    PairIndex,
    arrow_array,
    arrow_strings,
    as_numpy,
    factorize_runs,
    first_repeat,
    string_buffers,
)
from eval.errors import InputError
from eval.validation import INT64_MAX, INT64_MIN, control_character

if TYPE_CHECKING:  # only Rows.from_frame takes pandas input; the eval path never imports it
    import pandas as pd

BOM = b"\xef\xbb\xbf"
LINE_END = re.compile(rb"\r\n|\r|\n")
GRADE = re.compile(r"[+-]?[0-9]+")
SCORE = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?)", re.I)
# The longest decimal text of an int64: a sign and 19 digits (leading zeros aside).
INT64_DIGITS = 19
# Characters that make the plain parser's quick pass hand a file to its line-by-line loop:
# control characters other than the ASCII whitespace that separates fields (an id may not
# hold one), and the Unicode spaces that str.split() splits on and bytes.split() does not.
QUICK_UNSAFE = re.compile(
    "[\x00-\x08\x0e-\x1f\x7f-\x9f\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
# QUICK_UNSAFE's characters of ASCII, as bytes.
ASCII_UNSAFE = bytes([*range(0x09), *range(0x0E, 0x20), 0x7F])
ALL_GRADES = re.compile(f"(?:{GRADE.pattern}\n)*")
# Bytes read at a time by the layout check of the fast path.
BLOCK_BYTES = 1 << 22
ALL_SCORES = re.compile(f"(?:(?:{SCORE.pattern})\n)*", re.I)


@dataclass(frozen=True)
class Layout:
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


@dataclass(frozen=True)
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
    lines = LINE_END.split(data)
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


def read_quick(data: bytes, layout: Layout) -> Rows | None:
    """The rows of a file that the line-by-line loop would read without a refusal, read in
    bulk; None for any file in doubt (the loop then reads it, or words its refusal).

    Without control characters (the field-separating ASCII whitespace aside) and Unicode
    spaces, ``str.split`` splits where ``bytes.split`` does and every id is clean. The whole
    file is split at once; numpy finds, from the bytes, where each token starts and on which
    line, so that the fields of each line are found without a loop. One regex checks all the
    values.
    """
    if data.isascii():  # the usual file: its bytes are checked quicker than by a regex
        if len(data.translate(None, ASCII_UNSAFE)) < len(data):
            return None
        text = data.decode("ascii")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if QUICK_UNSAFE.search(text):
            return None
    if "\r" in text:  # a line ends at LF, CR LF or a lone CR
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        data = text.encode()
    tokens = text.split()
    lines = _line_tokens(data, len(tokens)) if tokens else None
    if lines is None:
        return None
    starts, counts, numbers = lines
    if layout.header:
        starts, counts, numbers = starts[1:], counts[1:], numbers[1:]
    if len(starts) == 0 or any(layout.count_problem(n) for n in set(counts.tolist())):
        return None
    values = _line_field(tokens, starts, counts, layout.value)
    if not _plain_numbers(values, layout.integer):
        return None
    try:
        if layout.integer:
            parsed = np.array(list(map(int, values)), dtype=np.int64)
        else:
            parsed = np.array(list(map(float, values)), dtype=np.float64)
    except (OverflowError, ValueError):  # a grade past int64 (or past Python's digit limit)
        return None
    doc_ids = np.array(_line_field(tokens, starts, counts, layout.doc), dtype=object)
    query_index, query_ids = factorize_runs(
        np.array(_line_field(tokens, starts, counts, layout.query), dtype=object)
    )
    return Rows(query_ids, query_index, doc_ids, parsed, numbers, layout.indexed)


def _line_tokens(data: bytes, token_count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per line with content: the index of its first token among the file's tokens, how many
    it has, and its line number. None for a file with a comment line, or if numpy does not
    find the ``token_count`` tokens that str.split() found (a file read_quick should not
    have taken)."""
    codes = np.frombuffer(data, dtype=np.uint8)
    # The bytes that str.split() and bytes.split() both split on: in a file read_quick takes
    # (no other control character, a CR made a line feed) exactly those up to 0x20 (tab,
    # line feed, vertical tab, form feed, space), found by one comparison.
    space = codes <= 0x20
    starts_token = ~space
    starts_token[1:] &= space[:-1]
    first_bytes = np.flatnonzero(starts_token)  # of each token
    if len(first_bytes) != token_count:
        return None
    line_ends = np.flatnonzero(codes == 0x0A)
    per_line = np.bincount(np.searchsorted(line_ends, first_bytes), minlength=len(line_ends) + 1)
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


def _plain_numbers(values: list[str], integer: bool) -> bool:
    """Whether every value is a grade (``integer``) or a score as the line-by-line loop
    reads them: checked by its characters where that suffices, else by one regex."""
    joined = "\n".join(values) + "\n"
    allowed = _INTEGER_CHARACTERS if integer else _DECIMAL_CHARACTERS
    if not joined.encode().translate(None, allowed):
        return True  # float()/int() below refuse a malformed one, which the loop then words
    return (ALL_GRADES if integer else ALL_SCORES).fullmatch(joined) is not None


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
        if not GRADE.fullmatch(text):
            raise InputError(*where, layout.value_name, f"not an integer: {shown}")
        digits = text.lstrip("+-").lstrip("0")
        value = int(text) if len(digits) <= INT64_DIGITS else None
        if value is None or not INT64_MIN <= value <= INT64_MAX:
            raise InputError(*where, layout.value_name, f"{shown} does not fit a 64-bit integer")
        return value
    if not SCORE.fullmatch(text):
        raise InputError(*where, layout.value_name, f"not a number: {shown}")
    return float(text)


# --- the general parser: vectorised, any layout --------------------------------------------------


def read_general(path: Path, layout: Layout) -> Rows:
    """Read a TREC file of any layout with Arrow's vectorised string kernels.

    Any file it would refuse (and one it cannot split into lines) goes to :func:`read_plain`,
    which words the refusal: both paths always name the same line and field.
    """
    lines = _arrow_lines(path)
    if lines is None:
        return read_plain(path, layout)
    stripped = pc.ascii_trim_whitespace(lines)
    number = np.arange(1, len(lines) + 1)
    empty = np.diff(string_buffers(stripped)[0]) == 0
    content = ~(empty | as_numpy(pc.starts_with(stripped, "#")))
    if layout.header and content.any():
        content[np.argmax(content)] = False
    stripped, number = stripped.filter(arrow_array(content)), number[content]
    fields = pc.ascii_split_whitespace(stripped)
    count = as_numpy(pc.list_value_length(fields))
    needed = len(layout.names)
    if np.any(count != needed if layout.exact else count < needed):
        return read_plain(path, layout)
    query, doc, value = (_field(fields, at) for at in (layout.query, layout.doc, layout.value))
    values = _parsed_values(value, layout)
    if values is None or not (_clean_ids(query) and _clean_ids(doc)):
        return read_plain(path, layout)
    query_index, query_ids = factorize_runs(query)
    return Rows(query_ids, query_index, doc, values, number, layout.indexed)


def _field(fields: pa.ListArray, position: int) -> pa.Array:
    """The ``position``-th field of every line."""
    # An index scalar taken from an array: pa.scalar(position) would load pandas.
    return pc.list_element(fields, arrow_array(np.array([position]))[0])


def _arrow_lines(path: Path) -> pa.Array | None:
    """Every line of the file as Arrow strings (blank ones included; a BOM is dropped), or
    None when that takes the plain parser (invalid UTF-8, a unit separator in the data)."""
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=["line"]),
            # No real delimiter: a unit separator (0x1F) has no business in these files (and
            # a file holding one makes this fail, and goes to the plain parser).
            parse_options=pcsv.ParseOptions(
                delimiter="\x1f", quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pcsv.ConvertOptions(column_types={"line": pa.binary()}),
        )
        return table["line"].combine_chunks().cast(pa.string())
    except pa.ArrowInvalid:
        return None


def _parsed_values(text: pa.Array, layout: Layout) -> np.ndarray | None:
    """The grades or scores, when every one of them is valid; None otherwise."""
    pattern = GRADE.pattern if layout.integer else "(?i)" + SCORE.pattern
    if not pc.all(pc.match_substring_regex(text, f"^(?:{pattern})$")).as_py():
        return None
    try:
        if layout.integer:
            # Arrow's integer cast takes no '+'; the pattern allows one, at most.
            return as_numpy(pc.cast(pc.utf8_ltrim(text, "+"), pa.int64()))
        return as_numpy(pc.cast(text, pa.float64()))
    except pa.ArrowInvalid:  # an integer past int64
        return None


# --- the fast path: the clean layout ----------------------------------------------------------


def read_fast(path: Path, layout: Layout, first_line: str) -> Rows | None:
    """Parse the clean layout (one space or one tab between exactly the layout's fields, no
    blank line, no comment) with Arrow's multi-threaded CSV reader; None for any other file.

    Arrow splits on the one delimiter; the reading splits on any run of ASCII whitespace. They
    agree when the file's whitespace is only single delimiters and line ends, which a pass
    over its bytes confirms (:func:`_whitespace_bytes`); an id with a control character or a NaN
    score makes it decline too, and the general parser reads (or refuses) the file. Rows map
    one to one to lines.

    The ids are parsed as bytes and checked as UTF-8 afterwards, column by column: Arrow's
    CSV reader checks (and dictionary-encodes) strings value by value, which took 0.75 s of
    1.25 s on a 10M-line run. A run's rows stand grouped by query, so the query index comes
    from comparing neighbours (:func:`~eval.columns.factorize_runs`), not from hashing each id.
    """
    if layout.header:
        return None
    from eval.ranking import concurrently  # imported here: eval.ranking imports this module

    # The layout check reads the file on its own thread while Arrow parses it on others and
    # the columns are checked (numpy and Arrow release the GIL as they work).
    whitespace, rows = concurrently(
        lambda: _whitespace_bytes(path),
        lambda: _parsed(path, layout, "\t" if "\t" in first_line else " "),
    )
    if rows is None or whitespace is None:
        return None
    count, ends_with_line_end = whitespace
    lines = len(rows.values)
    line_ends = lines if ends_with_line_end else lines - 1
    # Exactly as many as the delimiters and line ends of the rows Arrow found: one byte more
    # (a tab amid spaces, a ``\v``) would split a field that Arrow kept whole.
    return rows if count == (len(layout.names) - 1) * lines + line_ends else None


def _parsed(path: Path, layout: Layout, delimiter: str) -> Rows | None:
    """The file parsed by Arrow's CSV reader, split on ``delimiter`` alone, its ids checked
    and a repeated doc looked for (:attr:`Rows.repeated_row`); None when Arrow refuses it or
    an id or value is not clean."""
    query_name, doc_name = layout.names[layout.query], layout.names[layout.doc]
    types = {
        query_name: pa.binary(),
        doc_name: pa.binary(),
        layout.value_name: pa.int64() if layout.integer else pa.float64(),
    }
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=list(layout.names)),
            parse_options=pcsv.ParseOptions(
                delimiter=delimiter, quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pcsv.ConvertOptions(
                include_columns=list(types),
                column_types=types,
                null_values=[],
                strings_can_be_null=False,
            ),
        )
        # The cast checks that the bytes are UTF-8, a whole buffer at a time.
        query_column = table[query_name].cast(pa.string())
        doc_column = table[doc_name].cast(pa.string())
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    rows = _fast_rows(query_column, doc_column, as_numpy(table[layout.value_name]), layout)
    if rows is not None:
        rows.repeated_row  # noqa: B018 - a cached property, computed on this thread
    return rows


def _fast_rows(
    query_column: pa.ChunkedArray, doc_column: pa.ChunkedArray, values: np.ndarray, layout: Layout
) -> Rows | None:
    """The rows that the fast path parsed, or None when an id or value is not clean."""
    # The minimum is NaN when any value is: a reduction, no mask of every row.
    if not layout.integer and len(values) and np.isnan(values.min()):
        return None
    if not _clean_ids(doc_column):
        return None
    # Every row's query id is one of the distinct ones: only those are checked. A comment
    # line with the right number of fields parses, its query id starting with '#'.
    query_index, query_ids = factorize_runs(query_column)
    distinct = arrow_array(query_ids)
    if pc.any(pc.starts_with(distinct, "#")).as_py() or not _clean_ids(distinct):
        return None
    return Rows(query_ids, query_index, doc_column, values, indexed=layout.indexed)


def _whitespace_bytes(path: Path) -> tuple[int, bool] | None:
    """How many whitespace (or control) bytes the file holds, a CR LF counted once, and
    whether its last byte ends a line; None unless each of them is a single delimiter or a
    single line end (LF, CRLF or CR).

    None when two such bytes stand side by side but a CR LF (an empty field, a blank line),
    when one opens the file, or when a delimiter ends it (an empty last field). Read in
    blocks, to keep memory flat.
    """
    count, pairs = 0, 0
    # One buffer and its temporaries, filled block by block: fresh memory for each block
    # would cost more (the kernel zeroes every new page) than the checks themselves.
    # The previous block's last byte leads, so that pairs across blocks are seen.
    data = np.empty(BLOCK_BYTES + 1, dtype=np.uint8)
    data[0] = ord("\n")  # before the file, as if after a line end
    space = np.empty(len(data), dtype=bool)
    side_by_side = np.empty(BLOCK_BYTES, dtype=bool)
    with path.open("rb", buffering=0) as handle:
        while read := handle.readinto(memoryview(data)[1:]):
            block, spaces = data[: read + 1], space[: read + 1]
            np.less_equal(block, 0x20, out=spaces)
            count += int(np.count_nonzero(spaces[1:]))
            pair = np.logical_and(spaces[1:], spaces[:-1], out=side_by_side[:read])
            if pair.any():
                crlf = (block[:-1] == 0x0D) & (block[1:] == 0x0A)
                if np.any(pair & ~crlf):
                    return None
                pairs += int(np.count_nonzero(crlf))
            data[0] = block[-1]
    last = bytes(data[:1])
    ends_with_line_end = last in (b"\n", b"\r")
    if not ends_with_line_end and last[0] <= 0x20:
        return None
    return count - pairs, ends_with_line_end


def _clean_ids(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether every string is non-empty and holds neither whitespace nor a control
    character (C0, space, DEL, or C1: UTF-8 ``C2 80``..``C2 9F``), read from Arrow's buffers."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        offsets, data_buffer = string_buffers(chunk)
        if np.any(offsets[1:] == offsets[:-1]):
            return False
        start, end = int(offsets[0]), int(offsets[-1])
        data = np.frombuffer(data_buffer, dtype=np.uint8, count=end - start, offset=start)
        if data.min(initial=0x7E) > 0x20 and data.max(initial=0) < 0x7F:
            continue  # printable ASCII only: two reductions, quicker than a mask of each byte
        if np.any((data <= 0x20) | (data == 0x7F)):
            return False
        lead = np.flatnonzero(data[:-1] == 0xC2)
        if len(lead) and np.any((data[lead + 1] >= 0x80) & (data[lead + 1] <= 0x9F)):
            return False
    return True
