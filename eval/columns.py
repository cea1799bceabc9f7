"""Vectorised helpers for string columns, through Arrow.

Run files have millions of rows but few distinct query ids, and a query's rows usually
stand together. Comparing each row with the next one (a cheap vectorised string compare)
finds those runs of equal values, so only one value per run needs hashing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def arrow_strings(column: pd.Series) -> pa.ChunkedArray | pa.Array:
    """The column as an Arrow string array (zero-copy for pandas' Arrow-backed strings)."""
    if hasattr(column.array, "__arrow_array__"):
        return pa.array(column.array)
    return pa.array(column.to_numpy(dtype=object), pa.large_string())


def equal_to_next(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """True where a value equals the next one (the last one never does)."""
    if len(column) < 2:
        return np.zeros(len(column), dtype=bool)
    same = pc.equal(column.slice(0, len(column) - 1), column.slice(1))
    return np.r_[same.to_numpy(zero_copy_only=False), False]


def factorize_runs(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Like ``pd.factorize``: an int64 code per value and the distinct values (as objects).

    Only the first value of each run of equal neighbours is hashed; a column whose equal
    values stand together (a run file grouped by query) costs one hash per group.
    """
    if len(column) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    starts = np.flatnonzero(np.r_[True, ~equal_to_next(column)[:-1]])
    run_values = column.take(pa.array(starts)).to_numpy(zero_copy_only=False)
    run_codes, uniques = pd.factorize(run_values)
    return np.repeat(run_codes, np.diff(np.r_[starts, len(column)])), uniques.astype(object)


def lookup(column: pa.ChunkedArray | pa.Array, values: np.ndarray) -> np.ndarray:
    """Per element of ``column``, its position in ``values`` (-1 when absent)."""
    codes, uniques = factorize_runs(column)
    return pd.Index(values).get_indexer(uniques)[codes] if len(codes) else codes
