"""The one order of query ids in every list goldset prints or shows: natural order, where the
numbers inside ids compare as numbers (``q2 < q10 < q22 < q219``), so that a list reads as its
ids were numbered. Eval's lists (the worst queries, the changed queries) and the pages' tables
sort by :func:`query_id_order`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import numpy as np

_DIGITS = re.compile(r"(\d+)")


def query_id_order(ids: Iterable[str]) -> np.ndarray:
    """Each id's place (0-based) among ``ids`` in natural order: digit runs compared as
    numbers, the rest as text, and ids that compare equal so (``q1``, ``q01``) by their text.
    A sort key for ``np.lexsort`` and for pandas' ``sort_values(key=...)``.

    >>> query_id_order(["q219", "q22", "q3", "a10", "q22b"]).tolist()
    [4, 2, 1, 0, 3]
    """
    ids = [str(query_id) for query_id in ids]
    by_natural = sorted(range(len(ids)), key=lambda position: _natural_key(ids[position]))
    places = np.empty(len(ids), dtype=np.int64)
    places[by_natural] = np.arange(len(ids))
    return places


def _natural_key(text: str) -> tuple[list[object], str]:
    # re.split puts the text between digit runs at even positions and the runs at odd ones,
    # so two keys compare str with str and number with number.
    parts = _DIGITS.split(text)
    return [_number(part) if position % 2 else part for position, part in enumerate(parts)], text


def _number(digits: str) -> tuple[int, str]:
    """A digit run as a key that orders as its number does, however long it is (``int``
    refuses a run of more than 4,300 digits, which an id may hold): how many significant
    digits, then those digits (any script's, as ``int`` reads them, in ASCII)."""
    if not digits.isascii():
        digits = "".join(str(unicodedata.decimal(digit)) for digit in digits)
    significant = digits.lstrip("0")
    return len(significant), significant
