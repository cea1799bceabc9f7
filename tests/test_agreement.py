"""Agreement statistics against published values: Cohen's kappa on the classic 2×2 tables,
Krippendorff's alpha on Krippendorff's own worked examples, and the degenerate cases."""

import math

import numpy as np
import pytest

from goldset.eval.agreement import (
    alpha_from_coincidences,
    cohen_kappa,
    coincidences,
    confusion_table,
    estimate,
    kappa_from_table,
    krippendorff_alpha,
    observed_agreement,
    resampled_statistic,
    value_counts,
)

NA = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four observers,
# twelve units, values 1-5, missing values. Published: nominal 0.743, ordinal 0.815,
# interval 0.849. One row per unit, one column per observer.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NA, NA, NA],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NA, 3],
        [NA, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NA],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NA],
    ]
).T
# Krippendorff (2011), section A: two observers, ten units, binary values: alpha 0.095.
BINARY_A = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
BINARY_B = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
# Wikipedia, "Krippendorff's alpha", computational example: three coders, fifteen units.
# Published: nominal 0.691, interval 0.811.
WIKIPEDIA_ALPHA = np.array(
    [
        [NA, NA, NA, NA, NA, 3, 4, 1, 2, 1, 1, 3, 3, NA, 3],
        [1, NA, 2, 1, 3, 3, 4, 3, NA, NA, NA, NA, NA, NA, NA],
        [NA, NA, 2, 1, 3, 4, 4, NA, 2, 1, 1, 3, 3, NA, 4],
    ]
).T


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_matches_krippendorffs_worked_example(level, published):
    assert round(krippendorff_alpha(KRIPPENDORFF_2011, level), 3) == published


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.691), ("interval", 0.811)])
def test_alpha_matches_the_wikipedia_example_with_many_missing_values(level, published):
    assert round(krippendorff_alpha(WIKIPEDIA_ALPHA, level), 3) == published


def test_alpha_of_two_observers_binary_example_is_0095():
    ratings = np.array([BINARY_A, BINARY_B]).T
    assert round(krippendorff_alpha(ratings, "nominal"), 3) == 0.095
    # With two values only, every level of measurement gives the same alpha.
    assert krippendorff_alpha(ratings, "ordinal") == pytest.approx(
        krippendorff_alpha(ratings, "nominal")
    )


def test_coincidence_matrix_of_the_binary_example():
    ratings = np.array([BINARY_A, BINARY_B]).T
    matrix = coincidences(value_counts(ratings, [0, 1])).sum(axis=0)
    # Krippendorff's table: o00 = 10, o01 = o10 = 4, o11 = 2 (20 pairable values).
    assert matrix.tolist() == [[10.0, 4.0], [4.0, 2.0]]


@pytest.mark.parametrize(
    ("table", "published"),
    [
        ([[20, 5], [10, 15]], 0.4),  # Wikipedia "Cohen's kappa", simple example
        ([[45, 15], [25, 15]], 0.1304),  # same agreement (60 %), different marginals...
        ([[25, 35], [5, 35]], 0.2593),  # ...different kappa
    ],
)
def test_kappa_of_the_classic_two_by_two_tables(table, published):
    assert round(float(kappa_from_table(table)), 4) == published


def test_kappa_from_labels_equals_kappa_of_their_table():
    # Krippendorff's binary example read as two raters: p_o = 0.6, p_e = 0.56.
    assert cohen_kappa(BINARY_A, BINARY_B) == pytest.approx((0.6 - 0.56) / (1 - 0.56))
    table = confusion_table(BINARY_A, BINARY_B, [0, 1])
    assert table.tolist() == [[5.0, 3.0], [1.0, 1.0]]


def test_perfect_agreement_is_one_and_systematic_disagreement_negative():
    assert cohen_kappa([0, 1, 1, 0], [0, 1, 1, 0]) == 1.0
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == -1.0
    assert krippendorff_alpha([[0, 0], [3, 3], [1, 1]], "ordinal") == 1.0


def test_one_category_only_is_undefined_not_perfect():
    # Both raters always said "relevant": they agree, but with no variation at all the
    # chance-corrected figures are 0/0. They are NaN; the plain agreement still shows 1.
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(krippendorff_alpha([[2, 2], [2, 2], [2, NA]], "ordinal"))
    assert observed_agreement(confusion_table([1, 1, 1], [1, 1, 1], [0, 1])) == 1.0


def test_one_rater_without_variation_gives_kappa_zero():
    # p_e = p_o when one rater never changes category: agreement no better than chance.
    assert cohen_kappa([1, 1, 1, 1], [1, 0, 1, 1]) == 0.0


def test_nothing_pairable_is_undefined():
    assert math.isnan(krippendorff_alpha([[1, NA], [NA, 2]], "nominal"))
    assert math.isnan(float(kappa_from_table(np.zeros((2, 2)))))
    assert math.isnan(float(observed_agreement(np.zeros((2, 2)))))


def test_unused_categories_change_nothing():
    ratings = np.array([BINARY_A, BINARY_B]).T
    for level in ("nominal", "ordinal"):
        assert krippendorff_alpha(ratings, level, categories=[0, 1, 2, 3]) == pytest.approx(
            krippendorff_alpha(ratings, level)
        )
    assert cohen_kappa(BINARY_A, BINARY_B, categories=[0, 1, 2]) == pytest.approx(
        cohen_kappa(BINARY_A, BINARY_B)
    )


def test_a_value_outside_the_categories_is_refused():
    with pytest.raises(ValueError, match="not one of the categories"):
        confusion_table([0, 2], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="level must be one of"):
        alpha_from_coincidences(np.eye(2), level="ratio")


def test_statistics_take_a_batch_of_tables():
    tables = np.array([[[20, 5], [10, 15]], [[45, 15], [25, 15]]], dtype=float)
    assert np.round(kappa_from_table(tables), 4).tolist() == [0.4, 0.1304]
    matrices = np.array([[[10, 4], [4, 2]], [[2, 0], [0, 2]]], dtype=float)
    assert np.round(alpha_from_coincidences(matrices, "ordinal"), 3).tolist() == [0.095, 1.0]


def per_unit_tables(first, second, categories=(0, 1)):
    """One unit (query) per item: its 1-item confusion table."""
    pairs = zip(first, second, strict=True)
    return np.array([confusion_table([a], [b], categories) for a, b in pairs])


def test_estimate_reports_value_items_units_and_a_ci_around_it():
    result = estimate(per_unit_tables(BINARY_A, BINARY_B), kappa_from_table, n_resamples=500)
    assert result.value == pytest.approx(cohen_kappa(BINARY_A, BINARY_B))
    assert (result.items, result.units, result.observed_agreement) == (10, 10, 0.6)
    low, high = result.ci95
    assert -1 <= low < result.value < high <= 1


def test_estimate_is_reproducible_with_a_seed():
    tables = per_unit_tables(BINARY_A, BINARY_B)
    first = estimate(tables, kappa_from_table, n_resamples=300, seed=7)
    assert estimate(tables, kappa_from_table, n_resamples=300, seed=7) == first
    assert estimate(tables, kappa_from_table, n_resamples=300, seed=8).ci95 != first.ci95


def test_bootstrap_resamples_whole_units():
    # One unit holding all items: every resample is that unit, so the CI has zero width.
    tables = per_unit_tables(BINARY_A, BINARY_B).sum(axis=0, keepdims=True)
    result = estimate(tables, kappa_from_table, n_resamples=200)
    assert result.ci95 == (pytest.approx(result.value), pytest.approx(result.value))


def test_resampled_statistic_on_no_units_is_nan_and_on_no_resamples_empty():
    no_units = resampled_statistic(np.zeros((0, 2, 2)), kappa_from_table, 3)
    assert len(no_units) == 3 and np.isnan(no_units).all()
    assert len(resampled_statistic(per_unit_tables([1], [1]), kappa_from_table, 0)) == 0


def test_undefined_estimate_serialises_as_none():
    result = estimate(per_unit_tables([1, 1], [1, 1]), kappa_from_table, n_resamples=50)
    assert result.as_dict() == {
        "value": None,
        "observed_agreement": 1.0,
        "items": 2,
        "queries": 2,
        "ci95": [None, None],
    }


def test_estimate_validates_its_inputs():
    with pytest.raises(ValueError, match="shape"):
        estimate(np.zeros((2, 2)), kappa_from_table)
    with pytest.raises(ValueError, match="confidence"):
        estimate(np.zeros((1, 2, 2)), kappa_from_table, confidence=1.5)
