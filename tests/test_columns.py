"""The string-column helpers behind the readers and the ranking: hashing, repeats, matching."""

import functools

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldset.eval.columns import PairIndex, fingerprints, first_repeat, take_rows

ROWS_PER_GROUP = 100
GROUPS = 12_000  # a run-like column of 1.2M rows


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
    ids=["none", "early", "in the last group", "two groups"],
)
def test_first_repeat_on_a_large_grouped_column_finds_the_first_repeat(repeated_rows):
    groups, values = grouped_rows()
    values = with_repeats(values, repeated_rows)
    expected = reference_first_repeat(groups, values)
    assert expected == (min(repeated_rows) if repeated_rows else None)
    assert first_repeat(groups, pa.array(values)) == expected
    assert PairIndex(groups, pa.array(values)).first_repeat() == expected


def test_first_repeat_on_a_large_interleaved_column_agrees_with_pandas():
    groups, values = grouped_rows(seed=1)
    values = with_repeats(values, [900_001])
    shuffle = np.random.default_rng(2).permutation(len(groups))
    groups, values = groups[shuffle], [values[row] for row in shuffle]
    expected = reference_first_repeat(groups, values)
    assert first_repeat(groups, pa.array(values)) == expected
    assert PairIndex(groups, pa.array(values)).first_repeat() == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=12),
    st.integers(0, 400),
    st.randoms(use_true_random=False),
)
def test_first_repeat_on_groups_of_any_sizes_agrees_with_pandas(lengths, long_group, random):
    """Groups of unequal sizes (one of them maybe far longer than the rest), standing
    together or apart, as Arrow (chunked) or numpy strings."""
    lengths[random.randrange(len(lengths))] += long_group
    groups = np.repeat(np.arange(len(lengths)), lengths)
    values = [f"d{random.randrange(3 * max(lengths))}" for _ in groups]
    if random.random() < 0.2:
        order = np.array(random.sample(range(len(groups)), len(groups)))
        groups, values = groups[order], [values[row] for row in order]
    expected = reference_first_repeat(groups, values)
    half = len(values) // 2
    chunked = pa.chunked_array([pa.array(values[:half], pa.string()), values[half:]])
    for column in (pa.array(values), chunked, np.array(values, dtype=object)):
        assert first_repeat(groups, column) == expected
        # The index that matches ranked rows with judgements finds the same repeat.
        assert PairIndex(groups, column).first_repeat() == expected


def test_values_sharing_a_fingerprint_are_not_a_repeat(monkeypatch):
    from goldset.eval import columns

    # Every string's short fingerprint is alike: every group is suspect, and only the
    # comparison of the strings can tell them apart.
    monkeypatch.setattr(
        columns, "short_fingerprints", lambda values: np.zeros(len(values), np.uint32)
    )
    groups = np.repeat(np.arange(3), 4)
    values = [f"d{number}" for number in range(12)]
    assert first_repeat(groups, pa.array(values)) is None
    values[10] = "d8"
    assert first_repeat(groups, pa.array(values)) == 10


def test_an_index_of_pairs_sharing_fingerprints_finds_only_true_repeats():
    groups = np.repeat(np.arange(3), 4)
    values = [f"d{number}" for number in range(12)]
    alike = np.zeros(len(values), np.uint64)  # every fingerprint alike: the strings decide
    assert PairIndex(groups, pa.array(values), alike).first_repeat() is None
    values[7], values[10] = "d4", "d8"
    assert PairIndex(groups, pa.array(values), alike).first_repeat() == 7


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
    from goldset.eval import columns

    # Every string hashes alike: only the string comparison can tell them apart.
    monkeypatch.setattr(columns, "fingerprints", lambda values: np.zeros(len(values), np.uint64))
    table = PairIndex(np.zeros(3, dtype=np.int64), pa.array(["x", "y", "z"]))
    found = table.find(np.zeros(4, dtype=np.int64), pa.array(["z", "x", "w", "y"]))
    assert found.tolist() == [2, 0, -1, 1]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 30), min_size=1, max_size=12),
    st.integers(0, 200),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_pair_index_finds_every_pair_of_a_grouped_or_shuffled_table(
    lengths, long_group, shuffled, random
):
    """Groups standing in order (sorted group by group) or shuffled (sorted all at once)."""
    lengths[random.randrange(len(lengths))] += long_group
    groups = np.repeat(np.arange(len(lengths)), lengths)
    values = [f"d{row}" for row in random.sample(range(10 * len(groups)), len(groups))]
    if shuffled:
        order = np.array(random.sample(range(len(groups)), len(groups)))
        groups, values = groups[order], [values[row] for row in order]
    table = PairIndex(groups, pa.array(values))
    assert np.all(table.sorted_keys[1:] >= table.sorted_keys[:-1])
    asked = np.array([random.randrange(len(groups)) for _ in range(20)])
    other_group = (groups[asked] + 1) % (len(lengths) + 1)
    found = table.find(np.r_[groups[asked], other_group], pa.array([values[r] for r in asked] * 2))
    assert found.tolist() == asked.tolist() + [-1] * len(asked)


def test_fingerprints_of_ids_of_one_width_equal_those_of_mixed_widths():
    """A slice whose ids all have one length is hashed from a matrix of its bytes: the same
    fingerprints as when the ids stand among others of other lengths (or sliced out)."""
    ids = [f"corpus/{number:010d}#passage-é" for number in range(2_000)]
    mixed = fingerprints(pa.array([*ids, "short", *ids[:3]])).tolist()
    one_width = fingerprints(pa.array(ids)).tolist()
    sliced = fingerprints(pa.array(ids).slice(7, 100)).tolist()
    assert one_width == mixed[: len(ids)]
    assert mixed[len(ids) + 1 :] == one_width[:3]
    assert sliced == one_width[7:107]
    assert len(set(one_width)) == len(ids)
    assert (
        fingerprints(pa.array(["", ""])).tolist()
        == fingerprints(pa.array(["", "a"]))[:1].tolist() * 2
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.text(max_size=4), min_size=1, max_size=30),
    st.integers(1, 5),
    st.lists(st.integers(0, 10_000), max_size=40),
)
def test_taking_rows_from_a_chunked_column_gives_them_in_the_order_asked(values, chunks, picks):
    """Repeated rows and any order included: the rows are gathered chunk by chunk."""
    size = -(-len(values) // chunks)
    column = pa.chunked_array(
        [pa.array(values[at : at + size], pa.string()) for at in range(0, len(values), size)],
        pa.string(),
    )
    rows = np.array([pick % len(values) for pick in picks], dtype=np.int64)
    assert take_rows(column, rows).to_pylist() == [values[row] for row in rows]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.lists(st.integers(0, 255), min_size=1, max_size=12))
def test_strings_of_one_length_hash_as_they_do_among_strings_of_other_lengths(size, seeds):
    """Strings all of one length take a quicker path (strided words, no gathers): its
    fingerprints equal those of the general path, which a string of another length forces."""
    values = [bytes((seed + 7 * i) % 256 for i in range(size)).hex()[:size] for seed in seeds]
    alone = fingerprints(pa.array(values))
    mixed = fingerprints(pa.array([*values, "x" * (size + 1)]))[:-1]
    assert alone.tolist() == mixed.tolist()
