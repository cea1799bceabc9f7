"""A p-value at the floor of its resamples prints as ``< floor``, not as a figure, in the CLI's
tables and on the app's compare page alike (both through eval.stats.p_value_text)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from goldset.eval.stats import p_value_text, paired_bootstrap
from goldset.labeler import live
from goldset.labeler.cli.gate_output import p_text


def compared(p_value: float | None, **floor: float | None) -> dict:
    """A comparison of one metric, as eval's compare_runs gives it."""
    entry = {"baseline": 0.5, "candidate": 0.6, "delta": 0.1, "ci95": [0.05, 0.15]}
    return {
        "queries": {"baseline": {"answerable": 200}},
        "metrics": {"mrr@10": {**entry, "p_value": p_value, **floor}},
        "slices": {},
    }


def page_p_value(comparison: dict) -> str:
    return live.paired_wide(comparison, "old", "new").set_index("Metric").loc["MRR@10", "p-value"]


def test_the_compare_page_prints_a_p_value_at_its_floor_as_below_the_floor():
    # Every query gained 0.1: no resampled delta reaches 0, the p-value is the floor 2/1000.
    resampled = paired_bootstrap(np.zeros(200), np.full(200, 0.1), n_resamples=999, method="bca")
    p_value, floor = float(resampled.p_value), float(resampled.p_floor)
    assert p_value == floor == pytest.approx(2 / 1000)
    shown = page_p_value(compared(p_value, p_value_floor=floor))
    assert shown == "< 0.002"
    assert shown == p_text(p_value, floor)  # as the CLI prints it


@pytest.mark.parametrize(
    ("p_value", "floor", "shown"),
    [
        (0.0123, 0.002, "0.0123"),  # above its floor: the figure
        (0.0123, None, "0.0123"),  # not resampled (the score test): no floor
        (0.0123, math.nan, "0.0123"),
        (0.002 * (1 + 1e-12), 0.002, "< 0.002"),  # at the floor up to float noise
        (3e-9, None, "< 0.0001"),  # the score test's: below four decimals, not 0.0000
    ],
)
def test_a_p_value_prints_as_a_figure_unless_at_its_floor(p_value, floor, shown):
    assert p_value_text(p_value, floor) == shown
    assert page_p_value(compared(p_value, p_value_floor=floor)) == shown
    assert p_text(p_value, floor) == shown


def test_a_comparison_kept_without_floors_prints_its_p_values():
    assert page_p_value(compared(0.25)) == "0.2500"
    assert page_p_value(compared(None)) == "–"
    assert p_text(None, None) == ""
