"""Rows grouped by query, as run files and qrels are written: where each group begins, and
the groups laid out as the rows of one matrix.

Sorting many short rows of a matrix (``np.sort(matrix, axis=1)``) is an order of magnitude quicker
than sorting one long array (bench/README.md, "Figures behind design choices"). So what only needs
order within each query (finding a doc repeated within a run's query) sorts each query's keys as one
row.
"""

from __future__ import annotations

import numpy as np

# Fills the cells of a group matrix that hold no value: it sorts after every key.
PADDING = np.iinfo(np.uint32).max


def group_begins(groups: np.ndarray) -> np.ndarray:
    """Where each run of equal neighbouring values of ``groups`` begins (ascending).

    >>> group_begins(np.array([3, 3, 1, 1, 1, 3])).tolist()
    [0, 2, 5]
    """
    if len(groups) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])


def group_matrix(
    keys: np.ndarray, begins: np.ndarray, lengths: np.ndarray, width: int
) -> np.ndarray:
    """``keys`` (uint32) laid out one group per row of a matrix ``width`` wide, padded with
    ``PADDING``; a group longer than ``width`` keeps none (its row is all padding). The
    groups' rows stand together, group g from ``begins[g]`` on for ``lengths[g]`` rows."""
    if width * len(begins) == len(keys):  # every group has as many rows (a run cut at depth k)
        return keys.reshape(len(begins), width)
    matrix = np.full((len(begins), width), PADDING, dtype=np.uint32)
    # Row i goes to cell (group, i - begin) of the flattened matrix; in place, to spare
    # arrays as long as the keys.
    cell = np.arange(len(keys))
    cell += np.repeat(np.arange(len(begins)) * width - begins, lengths)
    if lengths.max() > width:
        inside = np.repeat(lengths <= width, lengths)
        cell, keys = cell[inside], keys[inside]
    matrix.ravel()[cell] = keys
    return matrix


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``start, start + 1, ..., start + length - 1`` of each range, in turn.

    >>> ranges(np.array([5, 0]), np.array([2, 3])).tolist()
    [5, 6, 0, 1, 2]
    """
    ends = np.cumsum(lengths)
    return np.arange(ends[-1] if len(ends) else 0) + np.repeat(starts - (ends - lengths), lengths)
