"""Vectorised helpers for string columns, through Arrow and numpy.

Run files have millions of rows, and hashing or sorting millions of strings one by one is
slow. Two cheaper tools do most of the work here:

- Run files have few distinct query ids, and a query's rows usually stand together.
  Comparing each row with the next one (a vectorised string compare) finds those runs of
  equal values, so only one value per run needs hashing (:func:`runs_of_equals`).
- Doc ids are many and distinct. :func:`fingerprints` hashes each one to 64 bits straight
  from Arrow's buffers with numpy, so finding repeats or matching ids becomes sorting and
  searching integers. Equal strings always share a fingerprint, so nothing equal is ever
  missed; every match of fingerprints is confirmed on the strings themselves, so a hash
  collision can never make two different ids look equal.

A string column is an Arrow array, or (as the plain parser reads a small file) a numpy array
of ``str`` objects: every helper here takes both and answers alike, the numpy form without
ever importing pyarrow (see :mod:`goldset.eval.arrow`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from goldset.eval.arrow import arrow_loaded, pa, pc
from goldset.eval.groups import PADDING, group_begins, group_matrix, ranges

if TYPE_CHECKING:  # pandas is not imported on the eval path: its import would dominate a small eval
    import pandas as pd

Strings = "pa.ChunkedArray | pa.Array | np.ndarray"

# Rows hashed per numpy pass: small enough that the temporaries stay in the CPU cache.
SLICE_ROWS = 1 << 15
# Rows from which strings read from JSON are held by Arrow rather than numpy.
ARROW_ROWS = 100_000
# Odd 64-bit constants (from splitmix64): multiplying by them spreads bits upwards.
SPREAD = np.uint64(0x9E3779B97F4A7C15)
FINISH = np.uint64(0xBF58476D1CE4E5B9)
# BYTE_MASKS[n] keeps the first n bytes of a little-endian word.
BYTE_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)


# pyarrow's own conversions (pa.array, pa.scalar, to_numpy) first ask its pandas layer whether
# the value is a pandas object, and that imports pandas (most of a small eval's start-up).
# These two go through Arrow's buffers instead, so that eval never loads pandas; once pandas
# is loaded (in the app) they use pyarrow's own, quicker for many strings.


def _pandas_loaded() -> bool:
    return "pandas" in sys.modules


def arrow_array(values: object, type: pa.DataType | None = None) -> pa.Array | pa.ChunkedArray:
    """Numbers or booleans (a numpy array) or strings (any sequence of str) as an Arrow array.

    ``type`` casts the result (strings are built as large strings). Arrow arrays are returned
    as they are, and pandas objects go through ``pa.array`` (pandas is loaded already).
    """
    if isinstance(values, pa.Array | pa.ChunkedArray):
        array = values
    elif _pandas_loaded():
        numbers = isinstance(values, np.ndarray) and values.dtype.kind in "biuf"
        pandas_object = hasattr(values, "__arrow_array__") or hasattr(values, "array")
        array = pa.array(values, type or (None if numbers or pandas_object else pa.large_string()))
    elif isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        count = len(values)
        if values.dtype == bool:
            bits = np.packbits(values, bitorder="little")
            array = pa.Array.from_buffers(pa.bool_(), count, [None, pa.py_buffer(bits)])
        else:
            data = pa.py_buffer(np.ascontiguousarray(values))
            array = pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), count, [None, data])
    else:
        offsets, data = _utf8_buffers(values)
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        array = pa.Array.from_buffers(pa.large_string(), len(offsets) - 1, buffers)
    return array if type is None or array.type == type else array.cast(type)


def _utf8_buffers(values: object) -> tuple[np.ndarray, bytes]:
    """Strings (any sequence of str) as Arrow lays them out: int64 offsets and UTF-8 data."""
    try:
        joined = "".join(values)
    except TypeError:
        raise TypeError("arrow_array takes numbers, booleans or str values") from None
    if joined.isascii():  # the usual ids: a character is a byte, no string is encoded alone
        data, pieces = joined.encode("ascii"), values
    else:
        pieces = [value.encode() for value in values]
        data = b"".join(pieces)
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, pieces), np.int64, len(pieces)), out=offsets[1:])
    return offsets, data


def strings_column(values: list[str]) -> Strings:
    """Strings read one by one (from JSON) as a column: numpy for a small file, Arrow beyond
    ``ARROW_ROWS`` (its hashing and buffers then beat Python's, and its import costs little)."""
    return arrow_array(values) if len(values) > ARROW_ROWS else np.array(values, dtype=object)


def as_strings(values: np.ndarray) -> Strings:
    """Ids (a numpy array of str) in the form the helpers here handle quickest: Arrow when
    pyarrow is loaded already (a large file was read), else numpy as they are."""
    return arrow_array(values) if arrow_loaded() else values


def take_rows(column: Strings, rows: np.ndarray) -> Strings:
    """``column[rows]`` (positions), for a numpy or an Arrow column."""
    if isinstance(column, np.ndarray):
        return column[rows]
    if isinstance(column, pa.ChunkedArray) and column.num_chunks > 1:
        # Arrow's take from a chunked array would join all its chunks first (a copy of the
        # column): the rows asked are gathered chunk by chunk, then put in the order asked.
        distinct, where = np.unique(rows, return_inverse=True)
        return take_distinct(column, distinct).take(arrow_array(where))
    return column.take(arrow_array(rows))


def filter_rows(column: Strings, keep: np.ndarray) -> Strings:
    """The rows of ``column`` where ``keep`` (booleans) is true, for a numpy or an Arrow column."""
    if isinstance(column, np.ndarray):
        return column[keep]
    # Arrow arrays are immutable: keeping every row needs no copy (of millions of ids).
    return column if keep.all() else column.filter(arrow_array(keep))


def take_range(column: Strings, start: int, length: int) -> Strings:
    """``length`` rows of ``column`` from ``start`` on (fewer at its end), without copying."""
    if isinstance(column, np.ndarray):
        return column[start : start + length]
    return column.slice(start, length)


def to_pylist(column: Strings) -> list[str]:
    """The column's strings as a list of str."""
    return column.tolist() if isinstance(column, np.ndarray) else column.to_pylist()


def sort_order(groups: np.ndarray, strings: Strings, descending: bool = False) -> np.ndarray:
    """The stable order that sorts rows by group (ascending), then by string (byte order,
    ascending or ``descending``); equal pairs keep their order."""
    if isinstance(strings, np.ndarray):
        # Python compares str by code point, which is UTF-8's byte order; its sort is stable,
        # reversed or not, and so is numpy's by group that follows.
        values = strings.tolist()
        order = np.array(sorted(range(len(values)), key=values.__getitem__, reverse=descending))
        order = order.astype(np.int64, copy=False)
        return order[np.argsort(groups[order], kind="stable")]
    keys = pa.table({"group": arrow_array(groups), "value": strings})
    direction = "descending" if descending else "ascending"
    sort_keys = [("group", "ascending"), ("value", direction)]
    return as_numpy(pc.sort_indices(keys, sort_keys=sort_keys)).astype(np.int64, copy=False)


def as_numpy(values: pa.Array | pa.ChunkedArray, null: object = None) -> np.ndarray:
    """An Arrow array's values as a numpy array: strings as objects, nulls as ``null``
    (which must then be given). Numbers are not copied (the array is then read-only).
    A numpy array is returned as it is."""
    if isinstance(values, np.ndarray):
        return values
    if isinstance(values, pa.ChunkedArray):
        values = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    kind = values.type
    if len(values) == 0:
        return np.zeros(0, dtype=object if pa.types.is_string(kind) else kind.to_pandas_dtype())
    if _pandas_loaded():
        return values.to_numpy(zero_copy_only=False) if null is None else _filled(values, null)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return np.array(values.to_pylist(), dtype=object)
    if values.null_count and null is None:
        raise ValueError("as_numpy: the array holds nulls and no value to put in their place")
    validity, data = values.buffers()[:2]
    if pa.types.is_boolean(kind):
        result = _bits(data, values.offset, len(values))
    else:
        dtype = np.dtype(kind.to_pandas_dtype())
        result = np.frombuffer(
            data, dtype=dtype, count=len(values), offset=values.offset * dtype.itemsize
        )
    if values.null_count:
        result = np.where(_bits(validity, values.offset, len(values)), result, null)
    return result


def _filled(values: pa.Array, null: object) -> np.ndarray:
    """The values with nulls replaced by ``null`` (pyarrow's own conversion)."""
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    return np.where(valid, values.to_numpy(zero_copy_only=False), null)


def _bits(buffer: pa.Buffer, offset: int, count: int) -> np.ndarray:
    """``count`` bits of an Arrow bitmap from bit ``offset`` on, as booleans."""
    bytes_ = np.frombuffer(buffer, dtype=np.uint8)
    # unpackbits gives 0 or 1 per byte: viewed as booleans, not copied (10 MB for a run).
    return np.unpackbits(bytes_, bitorder="little", count=offset + count)[offset:].view(bool)


def arrow_strings(column: pd.Series | np.ndarray) -> Strings:
    """The column (a pandas Series or a numpy array of str) as an Arrow string array
    (zero-copy for pandas' Arrow-backed strings)."""
    if hasattr(getattr(column, "array", None), "__arrow_array__"):
        return pa.array(column.array)
    if hasattr(column, "array"):  # a pandas Series of Python strings
        return pa.array(column.to_numpy(dtype=object), pa.large_string())
    return arrow_array(column, pa.large_string())


def equal_to_next(column: Strings) -> np.ndarray:
    """True where a value equals the next one (the last one never does)."""
    if len(column) < 2:
        return np.zeros(len(column), dtype=bool)
    if isinstance(column, np.ndarray):
        return np.r_[(column[:-1] == column[1:]).astype(bool), False]
    same = pc.equal(column.slice(0, len(column) - 1), column.slice(1))
    return np.r_[as_numpy(same), False]


def runs_of_equals(column: Strings) -> tuple[np.ndarray, Strings]:
    """Where each run of equal neighbouring values begins (ascending), and its value."""
    starts_run = np.r_[True, ~equal_to_next(column)[:-1]] if len(column) else np.zeros(0, bool)
    # A filter works chunk by chunk; a take from a chunked array would join the chunks.
    return np.flatnonzero(starts_run), filter_rows(column, starts_run)


def factorize_runs(column: Strings) -> tuple[np.ndarray, np.ndarray]:
    """Like ``pd.factorize``: an int32 code per value and the distinct values (as objects).

    Only the first value of each run of equal neighbours is hashed; a column whose equal
    values stand together (a run file grouped by query) costs one hash per group. The
    codes are int32, as Arrow's dictionary indices: half the memory of a run's 10M rows.
    """
    if len(column) == 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=object)
    starts, run_values = runs_of_equals(column)
    if isinstance(run_values, np.ndarray):
        codes: dict[str, int] = {}
        run_codes = np.array(
            [codes.setdefault(v, len(codes)) for v in run_values.tolist()], dtype=np.int32
        )
        uniques = np.array(list(codes), dtype=object)
    else:
        if isinstance(run_values, pa.ChunkedArray):
            run_values = run_values.combine_chunks()
        # Arrow's dictionary numbers the values in order of first appearance, as pd.factorize.
        encoded = pc.dictionary_encode(run_values)
        run_codes = as_numpy(encoded.indices).astype(np.int32, copy=False)
        uniques = as_numpy(encoded.dictionary)
    return np.repeat(run_codes, np.diff(np.r_[starts, len(column)])), uniques


def lookup(column: Strings, values: np.ndarray) -> np.ndarray:
    """Per element of ``column``, its position in ``values`` (-1 when absent)."""
    starts, run_values = runs_of_equals(column)
    if isinstance(run_values, np.ndarray):
        # The first position of each value, as Arrow's index_in gives it.
        listed = np.asarray(values, dtype=object).tolist()
        first = {value: position for position, value in reversed(list(enumerate(listed)))}
        positions = np.array([first.get(value, -1) for value in run_values.tolist()])
    else:
        # Arrow's hash lookup: several times faster here than pandas' for Python strings.
        value_set = arrow_array(np.asarray(values, dtype=object), run_values.type)
        positions = as_numpy(pc.index_in(run_values, value_set=value_set), null=-1)
    lengths = np.diff(starts, append=len(column))
    return np.repeat(positions.astype(np.int64), lengths)


def take_distinct(column: Strings, rows: np.ndarray) -> Strings:
    """``column[rows]`` for distinct ``rows``, chunk by chunk.

    Arrow's take from a chunked array first joins all its chunks: a copy of the whole
    column, to gather a few of its rows. A filter works chunk by chunk; it keeps the rows
    in column order, and a small take then puts them in the order asked (when they were
    not asked in that order). The result is one contiguous array.
    """
    if isinstance(column, np.ndarray) or not isinstance(column, pa.ChunkedArray):
        return take_rows(column, rows)
    if column.num_chunks == 1:
        return column.take(arrow_array(rows))
    wanted = np.zeros(len(column), dtype=bool)
    wanted[rows] = True
    in_column_order = column.filter(arrow_array(wanted))
    if np.all(rows[1:] > rows[:-1]):
        return in_column_order.combine_chunks()
    return in_column_order.take(arrow_array(np.searchsorted(np.sort(rows), rows)))


def fingerprints(column: Strings) -> np.ndarray:
    """A 64-bit hash (uint64) of each string, equal for equal strings.

    Different strings almost never share one, but they may: confirm matches on the strings.
    """
    return _filled_fingerprints(column, np.empty(len(column), dtype=np.uint64))


def short_fingerprints(column: Strings) -> np.ndarray:
    """The high 32 bits of each string's fingerprint (uint32): half the memory, and about one
    pair of different strings in 4 billion shares one."""
    return _filled_fingerprints(column, np.empty(len(column), dtype=np.uint32))


def _filled_fingerprints(column: Strings, hashes: np.ndarray) -> np.ndarray:
    """``hashes`` (uint64, or uint32 for the high bits) filled with the column's fingerprints,
    slice by slice: each slice's temporaries are freed before the next slice takes them, so
    that the kernel need not hand out (and zero) fresh pages for each."""
    chunked = not isinstance(column, np.ndarray) and isinstance(column, pa.ChunkedArray)
    shift = np.uint64(64 - 8 * hashes.dtype.itemsize)
    filled = 0
    for chunk in column.chunks if chunked else [column]:
        for start in range(0, len(chunk), SLICE_ROWS):
            part = _slice_fingerprints(take_range(chunk, start, SLICE_ROWS))
            hashes[filled : filled + len(part)] = part >> shift
            filled += len(part)
    return hashes


def string_buffers(strings: pa.Array | np.ndarray) -> tuple[np.ndarray, pa.Buffer | bytes]:
    """An Arrow string (or binary) array's offsets (as int64, ``len + 1`` of them: string i
    is ``data[offsets[i]:offsets[i + 1]]``) and its data buffer, without copying the data.
    A numpy array of str is laid out so (its strings encoded) first."""
    if isinstance(strings, np.ndarray):
        return _utf8_buffers(strings.tolist())
    wide = pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type)
    offset_type = np.int64 if wide else np.int32
    _, offset_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(
        offset_buffer,
        dtype=offset_type,
        count=len(strings) + 1,
        offset=strings.offset * np.dtype(offset_type).itemsize,
    ).astype(np.int64, copy=False)
    return offsets, data_buffer


def _slice_fingerprints(strings: pa.Array) -> np.ndarray:
    """Fingerprints of one Arrow string (or binary) array, from its offsets and data buffers.

    Each string is read as little-endian 8-byte words. numpy cannot load a word at an
    unaligned byte offset, so each word is built from the two aligned words around it,
    shifted together; bytes past the string's end are masked off. The length and the
    words (at least one, even for an empty string) are mixed by multiply-xorshift steps,
    as in splitmix64.
    """
    offsets, data_buffer = string_buffers(strings)
    length = np.diff(offsets)
    # Not min(initial=0): that is never above 0, and every word would be masked.
    shortest = int(length.min()) if len(length) else 0
    if len(length) and shortest == int(length.max()):
        hashes = _fixed_width_hashes(data_buffer, int(offsets[0]), len(length), shortest)
    else:
        hashes = _hashes(data_buffer, offsets, length, shortest)
    hashes ^= hashes >> np.uint64(31)
    hashes *= FINISH
    hashes ^= hashes >> np.uint64(29)
    return hashes


def _fixed_width_hashes(
    data_buffer: pa.Buffer | bytes, first: int, count: int, size: int
) -> np.ndarray:
    """The unfinished fingerprints of ``count`` strings of ``size`` bytes each (ids such as
    zero-padded numbers or paths of one pattern), stored one after another from ``first``.

    The same words as :func:`_hashes` mixes, without its gathers or a copy: the n-th word
    of every string is a strided view of the bytes (numpy reads unaligned words), and the
    bytes past the last whole word are put together one by one.
    """
    data = np.frombuffer(data_buffer, dtype=np.uint8, count=count * size, offset=first)
    hashes = np.full(count, size, dtype=np.uint64)
    hashes *= SPREAD
    whole = size // 8
    for word in range(whole):
        hashes ^= np.ndarray((count,), np.uint64, data, offset=8 * word, strides=(size,))
        hashes *= SPREAD
    if size % 8 or whole == 0:  # the last word, zero-padded (one of zeros for "")
        last = np.zeros(count, dtype=np.uint64)
        for byte in range(size % 8):
            column = np.ndarray((count,), np.uint8, data, offset=8 * whole + byte, strides=(size,))
            last |= column.astype(np.uint64) << np.uint64(8 * byte)
        hashes ^= last
        hashes *= SPREAD
    return hashes


def _hashes(
    data_buffer: pa.Buffer | bytes, offsets: np.ndarray, length: np.ndarray, shortest: int
) -> np.ndarray:
    """The unfinished fingerprints of strings of any lengths (see :func:`_slice_fingerprints`)."""
    first, end = int(offsets[0]), int(offsets[-1])
    word_count = (int(length.max(initial=0)) + 7) // 8
    # A zero-padded aligned copy of the bytes, with room for the word after the last one
    # (zeroed by hand, as in _fixed_width_hashes).
    words = np.empty((end - first) // 8 + word_count + 2, dtype=np.uint64)
    words[(end - first) // 8 :] = 0
    if end > first:
        words.view(np.uint8)[: end - first] = np.frombuffer(
            data_buffer, dtype=np.uint8, count=end - first, offset=first
        )
    start = offsets[:-1] - first
    aligned = start >> 3
    low_shift = ((start << 3) & 56).view(np.uint64)
    # Shifting by 64 is undefined, so the high part moves by (63 - shift) and then by 1.
    high_shift = np.uint64(63) - low_shift
    hashes = length.view(np.uint64) * SPREAD
    for word in range(max(word_count, 1)):
        value = words[word:][aligned] >> low_shift
        value |= (words[word + 1 :][aligned] << high_shift) << np.uint64(1)
        if 8 * (word + 1) > shortest:
            value &= BYTE_MASKS[np.clip(length - 8 * word, 0, 8)]
        mixed = (hashes ^ value) * SPREAD
        if word == 0 or 8 * word < shortest:
            hashes = mixed
        else:
            # Only strings that reach this word mix it in: a string's fingerprint must not
            # depend on the strings hashed alongside it.
            hashes = np.where(length > 8 * word, mixed, hashes)
    return hashes


def pair_keys(groups: np.ndarray, values: Strings, hashes: np.ndarray | None = None) -> np.ndarray:
    """A uint64 key per (group, string) pair: equal pairs always get equal keys.

    The group (a small non-negative integer) fills the high 32 bits, so that sorted keys
    stand grouped; 32 bits of the string's fingerprint fill the low ones. Two different
    strings of one group share a key about once in 4 billion pairs (and are told apart
    when the strings are compared). ``hashes``: the values' :func:`fingerprints`, when
    computed already (they are not changed).
    """
    keys = fingerprints(values) if hashes is None else hashes.copy()
    keys >>= np.uint64(32)
    # Slice by slice: a temporary as long as the column would be fresh memory, which the
    # kernel must zero first (slower than the shift itself).
    for start in range(0, len(keys), SLICE_ROWS):
        piece = slice(start, start + SLICE_ROWS)
        keys[piece] |= groups[piece].astype(np.uint64) << np.uint64(32)
    return keys


def first_repeat(groups: np.ndarray, values: Strings) -> int | None:
    """Position of the first row whose (group, value) pair also stands on an earlier row.

    None when every pair is distinct. When each group's rows stand together (as in a run
    file written query by query), only the groups where two values share a fingerprint
    (:func:`_rows_of_suspect_groups`) are checked value by value.
    """
    begins = group_begins(groups)
    # A group that begins twice has its rows apart (bincount: np.unique imports numpy.ma).
    if len(begins) == 0 or np.bincount(groups[begins]).max() > 1:
        return _first_repeat(groups, values)
    suspects = _rows_of_suspect_groups(begins, values)
    if len(suspects) == 0:
        return None
    found = _first_repeat(groups[suspects], take_distinct(values, suspects))
    return None if found is None else int(suspects[found])


def _rows_of_suspect_groups(begins: np.ndarray, values: Strings) -> np.ndarray:
    """The rows (ascending) of the groups where two values share a 32-bit fingerprint, and of
    the groups longer than twice the mean: every repeated value is on one of them. The
    groups' rows stand together, each group beginning at one of ``begins``.

    Each group's fingerprints fill one row of a matrix, padded with the largest value, and
    the matrix is sorted row by row: sorting many short rows is much quicker than sorting
    one long array (see :mod:`goldset.eval.groups`), and needs no group in the key.
    """
    count = len(values)
    lengths = np.diff(begins, append=count)
    width = min(int(lengths.max()), 2 * -(-count // len(begins)))
    keys = short_fingerprints(values)
    padded = width * len(begins) != count
    if padded:
        # Padding sorts after every value: a value equal to it moves one down (a false
        # suspect at worst, which the check value by value clears).
        np.minimum(keys, PADDING - 1, out=keys)
    matrix = group_matrix(keys, begins, lengths, width)
    matrix.sort(axis=1)
    same = np.equal(matrix[:, 1:], matrix[:, :-1])
    if padded:
        same &= matrix[:, 1:] != PADDING
    shared = same.any(axis=1)
    suspect = np.flatnonzero(shared | (lengths > width))
    return ranges(begins[suspect], lengths[suspect])


def _first_repeat(groups: np.ndarray, values: Strings) -> int | None:
    """``first_repeat`` on one thread.

    Sorting the pair keys puts equal keys side by side; only the rows sharing a key are
    then compared as strings, so the check costs one sort of integers however long the
    strings are.
    """
    ordered = pair_keys(groups, values)
    ordered.sort()
    shared = ordered[1:][ordered[1:] == ordered[:-1]]
    if len(shared) == 0:
        return None
    suspects = np.flatnonzero(np.isin(pair_keys(groups, values), shared))
    # Sorted by group and string, a repeated pair stands right after its earlier rows
    # (the sort is stable, so they stay in row order): each row equal to the one
    # before it is a repeat, and the first repeat is the smallest such row.
    suspect_groups, suspect_values = groups[suspects], take_rows(values, suspects)
    by_pair = sort_order(suspect_groups, suspect_values)
    repeats = (np.diff(suspect_groups[by_pair]) == 0) & equal_to_next(
        take_rows(suspect_values, by_pair)
    )[:-1]
    return int(suspects[by_pair][1:][repeats].min()) if repeats.any() else None


class PairIndex:
    """A table of (group, string) pairs, sorted by pair key so that rows can be matched to it.

    Building it (hashing and sorting the table's keys) is the costly half of a match; it
    can be done once, or on another thread, before :meth:`find` is called.
    """

    def __init__(self, groups: np.ndarray, values: Strings, hashes: np.ndarray | None = None):
        """Index the pairs (``groups[i]``, ``values[i]``); ``hashes``: the values'
        :func:`fingerprints` when computed already (kept, as :attr:`hashes`). Arrow chunks
        are joined here, once: :meth:`find` takes rows from the values on every call."""
        if not isinstance(values, np.ndarray) and isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        self.groups, self.values = groups, values
        self.hashes = fingerprints(values) if hashes is None else hashes
        keys = pair_keys(groups, values, self.hashes)
        # Stable: numpy's timsort merges the runs of a file grouped by query, whose keys
        # (the group in the high bits) stand in ascending blocks, almost for free: quicker
        # than a quicksort or one sort per group (figures: bench/README.md).
        self.order = np.argsort(keys, kind="stable")
        self.sorted_keys = keys[self.order]

    def first_repeat(self) -> int | None:
        """Position of the first row whose pair also stands on an earlier row (None when
        every pair is distinct), as :func:`first_repeat` finds it: equal pairs share a key,
        so only rows whose key stands beside an equal one in the sorted table are compared
        as strings (the sort done to index the table serves both)."""
        shared = np.flatnonzero(self.sorted_keys[1:] == self.sorted_keys[:-1])
        if len(shared) == 0:
            return None
        suspect = np.zeros(len(self.order), dtype=bool)  # not np.unique: it imports numpy.ma
        suspect[self.order[shared]] = suspect[self.order[shared + 1]] = True
        suspects = np.flatnonzero(suspect)
        found = _first_repeat(self.groups[suspects], take_rows(self.values, suspects))
        return None if found is None else int(suspects[found])

    def find(self, groups: np.ndarray, values: Strings) -> np.ndarray:
        """Per (group, value) row, the position of the equal pair in the table (-1 when absent).

        A key found is confirmed on the group and the string; on a fingerprint collision
        the next equal key is tried.
        """
        keys = pair_keys(groups, values)
        # Rows grouped by group search the table region by region, which the cache likes.
        position = np.searchsorted(self.sorted_keys, keys)
        found = np.full(len(keys), -1, dtype=np.int64)
        pending = np.arange(len(keys))
        while len(pending):
            at = position[pending]
            inside = at < len(self.sorted_keys)
            pending, at = pending[inside], at[inside]
            same_key = self.sorted_keys[at] == keys[pending]
            pending, candidate = pending[same_key], self.order[at[same_key]]
            same = (groups[pending] == self.groups[candidate]) & _equal_strings(
                values, pending, self.values, candidate
            )
            found[pending[same]] = candidate[same]
            pending = pending[~same]
            position[pending] += 1
        return found


def _equal_strings(
    left: Strings, left_rows: np.ndarray, right: Strings, right_rows: np.ndarray
) -> np.ndarray:
    """Whether ``left[left_rows[i]] == right[right_rows[i]]``, for each i."""
    if len(left_rows) == 0:
        return np.zeros(0, dtype=bool)
    left_values, right_values = take_rows(left, left_rows), take_rows(right, right_rows)
    if isinstance(left_values, np.ndarray) and isinstance(right_values, np.ndarray):
        return (left_values == right_values).astype(bool)
    left_values = arrow_array(left_values)
    right_values = arrow_array(right_values).cast(left_values.type)
    return as_numpy(pc.equal(left_values, right_values), null=False)


def sorted_codes(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The distinct ``values`` (str), sorted, and each value's position among them: what
    ``np.unique(values, return_inverse=True)`` gives, without sorting every value (a dict of
    the distinct ones: quicker when few values are distinct, and numpy.ma never imported)."""
    first_seen: dict[str, int] = {}
    seen = np.fromiter(
        (first_seen.setdefault(value, len(first_seen)) for value in values.tolist()),
        dtype=np.int64,
        count=len(values),
    )
    distinct = sorted(first_seen)
    position = {value: code for code, value in enumerate(distinct)}
    return distinct, np.array([position[value] for value in first_seen], dtype=np.int64)[seen]
