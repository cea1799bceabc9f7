"""How figures are written: one format for each kind (rates in percent, CIs, bounds, the
figures first-hit labels cannot measure), on every page."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

__all__ = [
    "ALL",
    "duration_text",
    "FIGURE_COLUMNS",
    "figure_row",
    "figure_text",
    "finite",
    "is_rate",
    "JUDGED",
    "metric_label",
    "METRIC_WORDS",
    "NOT_MEASURED",
    "RATES",
    "share_rows",
    "UNANSWERABLE",
    "UNMEASURABLE",
    "value_text",
]

JUDGED = "judged@10"
UNANSWERABLE = "unanswerable"  # the figure name of the unanswerable share
ALL = "all"  # the row of the whole golden set, beside its slices
NOT_MEASURED = "not measured (first-hit labels)"  # recall@k / nDCG@k of first-hit labels
UNMEASURABLE = ("recall@", "ndcg@")  # metrics first-hit labels cannot measure
RATES = ("hit@", "miss@", "judged@")  # shares, shown in percent (as the unanswerable share)
METRIC_WORDS = {"mrr": "MRR", "ndcg": "nDCG", "miss": "miss rate", "judged": "judged"}


def is_rate(metric: str) -> bool:
    """Whether a figure is a share (hit, miss, judged, unanswerable), shown in percent."""
    return metric.startswith(RATES) or metric == UNANSWERABLE


def metric_label(metric: str) -> str:
    """A metric's name in words: ``mrr@10`` → ``MRR@10``, ``miss@10`` → ``miss rate@10``."""
    if metric == UNANSWERABLE:
        return "unanswerable share"
    name, at, cutoff = metric.partition("@")
    return METRIC_WORDS.get(name, name) + at + cutoff


def value_text(value: float | None, metric: str) -> str:
    """A figure alone: rates in percent with one decimal, means with three decimals."""
    if not finite(value):
        return "–"
    return f"{value:.1%}" if is_rate(metric) else f"{value:.3f}"


def figure_text(entry: Mapping | None, metric: str, ci: bool = True) -> str:
    """A report's metric entry as one cell: ``0.615 [0.511, 0.720]``, ``45.5% [18.2, 72.7]``
    for a rate, ``≥ 0.412 [...]`` for a
    lower bound (precision@k of first-hit labels), the reason (``not measured (first-hit
    labels)``) when the mean is None for recall@k or nDCG@k, ``–`` when nothing is known."""
    if not entry:
        return "–"
    mean = entry.get("mean")
    if mean is None:
        reason = entry.get("reason") or (NOT_MEASURED if metric.startswith(UNMEASURABLE) else "")
        return reason or "–"
    text = ("≥ " if entry.get("bound") == "lower" else "") + value_text(mean, metric)
    low, high = entry.get("ci95") or (None, None)
    if ci and finite(low) and finite(high):
        # a rate's CI bounds without their % signs, so that wide tables fit: 45.5% [18.2, 72.7]
        bounds = [f"{b:.1%}"[:-1] if is_rate(metric) else f"{b:.3f}" for b in (low, high)]
        text += f" [{bounds[0]}, {bounds[1]}]"
    return text


def duration_text(hours: float | None) -> str:
    """Hours with a sensible precision: ``≈ 12 min`` below one hour, ``≈ 3.4 h`` below ten,
    ``≈ 42 h`` above."""
    if not finite(hours):
        return "–"
    if hours < 1:
        return f"≈ {max(1, round(hours * 60)) if hours > 0 else 0} min"
    return f"≈ {hours:.1f} h" if hours < 10 else f"≈ {hours:,.0f} h"


FIGURE_COLUMNS = ("slice", "metric", "value", "ci_low", "ci_high", "queries")  # and judged@10


def figure_row(
    slice_name: str, metric: str, entry: Mapping, queries: int, judged: float | None = None
) -> dict:
    """One figure of a report (its metric ``entry``) as a row of the figures tables: the
    columns of :data:`FIGURE_COLUMNS` and judged@10."""
    low, high = entry["ci95"] or (None, None)
    return {
        "slice": slice_name,
        "metric": metric,
        "value": entry["mean"],
        "ci_low": low,
        "ci_high": high,
        "queries": queries,
        JUDGED: judged,
    }


def share_rows(shares: Mapping[str, Mapping]) -> pd.DataFrame:
    """The unanswerable shares (per slice, as ``unanswerable_shares`` gives them) as rows of
    the figures tables (:func:`figure_row`)."""
    rows = [
        figure_row(name, UNANSWERABLE, entry, entry["queries"]) for name, entry in shares.items()
    ]
    return pd.DataFrame(rows, columns=[*FIGURE_COLUMNS, JUDGED]).astype({JUDGED: float})


def finite(value: object) -> bool:
    """Whether ``value`` is a number, neither NaN nor infinite (a figure that can be shown)."""
    return isinstance(value, int | float) and math.isfinite(value)
