"""The string-column helpers behind the readers and the ranking: hashing, repeats, matching."""

import functools

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from eval.columns import PARALLEL_ROWS, PairIndex, fingerprints, first_repeat

ROWS_PER_GROUP = 100
GROUPS = PARALLEL_ROWS // ROWS_PER_GROUP + 100  # enough rows for the two-thread check


@functools.cache
def grouped_rows(seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """A run-like column: groups of 100 rows standing together, values distinct per group."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(GROUPS), ROWS_PER_GROUP)
    values = [f"doc{number}" for number in rng.permutation(len(groups))]
    return groups, values


def reference_first_repeat(groups: np.ndarray, values: list[str]) -> int | None:
    repeated = pd.DataFrame({"group": groups, "value": values}).duplicated().to_numpy()
    return int(np.argmax(repeated)) if repeated.any() else None


def with_repeats(values: list[str], rows: list[int]) -> list[str]:
    """Copy the value of the first row of its group onto each of ``rows``."""
    values = list(values)
    for row in rows:
        assert row % ROWS_PER_GROUP, "a group's first row cannot repeat an earlier one"
        values[row] = values[row - row % ROWS_PER_GROUP]
    return values


@pytest.mark.parametrize(
    "repeated_rows",
    [[], [150], [GROUPS * ROWS_PER_GROUP - 7], [200_033, GROUPS * ROWS_PER_GROUP - 60]],
    ids=["none", "first half", "second half", "both halves"],
)
def test_first_repeat_on_a_large_grouped_column_finds_the_first_repeat(repeated_rows):
    groups, values = grouped_rows()
    values = with_repeats(values, repeated_rows)
    expected = reference_first_repeat(groups, values)
    assert expected == (min(repeated_rows) if repeated_rows else None)
    assert first_repeat(groups, pa.array(values)) == expected


def test_first_repeat_on_a_large_interleaved_column_agrees_with_pandas():
    groups, values = grouped_rows(seed=1)
    values = with_repeats(values, [900_001])
    shuffle = np.random.default_rng(2).permutation(len(groups))
    groups, values = groups[shuffle], [values[row] for row in shuffle]
    assert first_repeat(groups, pa.array(values)) == reference_first_repeat(groups, values)


def test_a_repeat_in_another_group_is_not_a_repeat():
    groups = np.array([0, 0, 1, 1])
    assert first_repeat(groups, pa.array(["a", "b", "a", "b"])) is None
    assert first_repeat(groups, pa.array(["a", "b", "c", "c"])) == 3


def test_fingerprints_are_equal_for_equal_strings_whatever_their_neighbours():
    texts = ["", "a", "doc1", "exactly8", "more than eight bytes", "é✓ unicode", "doc1"]
    alone = [int(fingerprints(pa.array([text]))[0]) for text in texts]
    together = fingerprints(pa.array(texts)).tolist()
    wide = fingerprints(pa.array(texts, pa.large_string())).tolist()
    assert alone == together == wide
    assert together[2] == together[6]
    assert len(set(together)) == len(set(texts))


def test_pair_index_matches_group_and_string_both():
    table = PairIndex(np.array([1, 0, 2]), pa.array(["a", "b", "a"]))
    found = table.find(np.array([0, 1, 1, 2]), pa.array(["a", "a", "b", "a"]))
    assert found.tolist() == [-1, 0, -1, 2]


def test_pair_index_tries_the_next_equal_key_when_fingerprints_collide(monkeypatch):
    import eval.columns

    # Every string hashes alike: only the string comparison can tell them apart.
    monkeypatch.setattr(
        eval.columns, "fingerprints", lambda values: np.zeros(len(values), np.uint64)
    )
    table = PairIndex(np.zeros(3, dtype=np.int64), pa.array(["x", "y", "z"]))
    found = table.find(np.zeros(4, dtype=np.int64), pa.array(["z", "x", "w", "y"]))
    assert found.tolist() == [2, 0, -1, 1]
