"""The Arrow parsers of TREC files (see :mod:`goldset.eval.trec` for the reading they give).

- :func:`read_general`: Arrow, vectorised, any layout. A file it would refuse goes to
  :func:`~eval.trec.read_plain`, so a refusal names the same line and field whichever path
  met it.
- :func:`read_fast`: Arrow's multi-threaded CSV reader on the clean layout (one space or one
  tab between exactly the expected fields). It declines (None) anything else.

Apart from the plain parser: a small file never needs them, and their code is not loaded on
a small eval's start-up.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from goldset.eval.arrow import pa, pc, pcsv
from goldset.eval.columns import arrow_array, as_numpy, factorize_runs, string_buffers
from goldset.eval.threads import concurrently
from goldset.eval.trec import GRADE, SCORE, Layout, Rows, read_plain

# Bytes read at a time by the layout check of the fast path; bytes its quick look takes.
BLOCK_BYTES = 1 << 22
START_BYTES = 1 << 16
# Every byte but the ASCII control characters and space (which the reading splits fields on).
_NOT_WHITESPACE = bytes(range(0x21, 0x100))

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
    pattern = GRADE if layout.integer else SCORE
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

    The ids are parsed as bytes and checked as UTF-8 afterwards, column by column, unless the layout
    check found only ASCII (see :func:`_fast_rows`): Arrow's CSV reader checks (and
    dictionary-encodes) strings value by value, which took most of a large run's parse
    (bench/README.md, "Figures behind design choices"). A run's rows stand grouped by query, so the
    query index comes from comparing neighbours (:func:`~eval.columns.factorize_runs`), not from
    hashing each id.
    """
    delimiter = "\t" if "\t" in first_line else " "
    if layout.header or not _starts_clean(path, delimiter):
        return None
    # The layout check reads the file on its own thread while Arrow parses it on others
    # (numpy and Arrow release the GIL as they work).
    whitespace, table = concurrently(
        lambda: _whitespace_bytes(path), lambda: _parsed(path, layout, delimiter)
    )
    if table is None or whitespace is None:
        return None
    count, ends_with_line_end, below_del = whitespace
    lines = table.num_rows
    line_ends = lines if ends_with_line_end else lines - 1
    # Exactly as many as the delimiters and line ends of the rows Arrow found: one byte more
    # (a tab amid spaces, a ``\v``) would split a field that Arrow kept whole.
    if count != (len(layout.names) - 1) * lines + line_ends:
        return None
    rows = _fast_rows(table, layout, below_del)
    if rows is not None:
        rows.repeated_row  # noqa: B018 - a cached property, computed on the reading thread
    return rows


def _parsed(path: Path, layout: Layout, delimiter: str) -> pa.Table | None:
    """The file's query ids, doc ids (as bytes) and values, parsed by Arrow's CSV reader split
    on ``delimiter`` alone; None when Arrow refuses it."""
    types = _fast_types(layout)
    try:
        return pcsv.read_csv(
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
    except pa.ArrowInvalid:
        return None


def _fast_types(layout: Layout) -> dict[str, pa.DataType]:
    """The columns the fast path parses, and their Arrow types."""
    return {
        layout.names[layout.query]: pa.binary(),
        layout.names[layout.doc]: pa.binary(),
        layout.value_name: pa.int64() if layout.integer else pa.float64(),
    }


def _fast_rows(table: pa.Table, layout: Layout, below_del: bool) -> Rows | None:
    """The rows of the table Arrow parsed, or None when an id or a value is not clean.

    Every byte below DEL (``below_del``, known from the layout check) makes every id valid
    UTF-8, and each one a run of printable ASCII: then the ids are not checked again (their
    cast to strings is a view; checking them again was a measurable share of a large run's
    parse).
    """
    values = as_numpy(table[layout.value_name])
    # The minimum is NaN when any value is: a reduction, no mask of every row.
    if not layout.integer and len(values) and np.isnan(values.min()):
        return None
    as_text = pc.CastOptions(target_type=pa.string(), allow_invalid_utf8=below_del)
    try:
        query_column, doc_column = (
            pc.cast(table[layout.names[field]], options=as_text)
            for field in (layout.query, layout.doc)
        )
    except pa.ArrowInvalid:  # not UTF-8
        return None
    if not (below_del or _clean_ids(doc_column)):
        return None
    # Every row's query id is one of the distinct ones: only those are checked. A comment
    # line with the right number of fields parses, its query id starting with '#'.
    query_index, query_ids = factorize_runs(query_column)
    distinct = arrow_array(query_ids)
    if pc.any(pc.starts_with(distinct, "#")).as_py() or not _clean_ids(distinct):
        return None
    return Rows(query_ids, query_index, doc_column, values, indexed=layout.indexed)


def _starts_clean(path: Path, delimiter: str) -> bool:
    """Whether the file's first ``START_BYTES`` hold no whitespace that the fast path declines
    (a byte but the delimiter and line ends, two side by side but CR LF, one opening the
    file). A messy file usually shows it in its first lines: then Arrow is spared a parse of
    the whole file, thrown away."""
    with path.open("rb") as handle:
        start = handle.read(START_BYTES).replace(b"\r\n", b"\n")
    if start[:1].isspace() or start.translate(None, _NOT_WHITESPACE + delimiter.encode() + b"\r\n"):
        return False
    return re.search(rb"[\x00-\x20]{2}", start) is None


def _whitespace_bytes(path: Path) -> tuple[int, bool, bool] | None:
    """How many whitespace (or control) bytes the file holds, a CR LF counted once, whether
    its last byte ends a line, and whether every byte is ASCII below DEL; None unless each
    whitespace byte is a single delimiter or a single line end (LF, CRLF or CR).

    None when two such bytes stand side by side but a CR LF (an empty field, a blank line),
    when one opens the file, or when a delimiter ends it (an empty last field). Read in
    blocks, to keep memory flat.
    """
    count, pairs, below_del = 0, 0, True
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
            below_del = below_del and int(block.max()) < 0x7F
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
    return count - pairs, ends_with_line_end, below_del


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
