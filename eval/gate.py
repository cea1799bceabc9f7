"""The release gate: may a candidate system replace the baseline?

The gate compares mean figures over the same golden queries. It fails when the candidate
misses more queries (miss@10, in percentage points), when its MRR@10 falls, or when any
slice's MRR@10 falls by more than an allowance, and it warns when MRR@10 rises while misses
rise too: a better average that hides users who now get no answer at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

MRR = "mrr@10"
MISS = "miss@10"
# Means are averages of floats: a change within this of a threshold counts as at the threshold.
EPSILON = 1e-9


@dataclass(frozen=True)
class GateVerdict:
    """The gate's decision, with one human sentence per reason for failing and per warning."""

    passed: bool
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def release_gate(
    baseline: Mapping[str, float],
    candidate: Mapping[str, float],
    baseline_slices: Mapping[str, Mapping[str, float]] | None = None,
    candidate_slices: Mapping[str, Mapping[str, float]] | None = None,
    *,
    max_miss_rise: float = 1.0,
    max_mrr_drop: float = 0.0,
    max_slice_drop: float = 0.05,
    new_misses: Mapping[str, int] | None = None,
) -> GateVerdict:
    """Judge ``candidate`` against ``baseline`` from their mean figures.

    ``baseline`` and ``candidate`` map metric names to means over the same answerable queries
    and must hold ``"mrr@10"`` and ``"miss@10"`` (miss@10 as a fraction, 0.12 = 12 %); the
    slice mappings give the same per slice name. The gate fails when:

    - miss@10 rises by more than ``max_miss_rise`` percentage points (1.0 = 0.01 as a fraction),
    - MRR@10 falls by more than ``max_mrr_drop``,
    - any slice present on both sides has its MRR@10 fall by more than ``max_slice_drop``.

    ``new_misses`` (slice name → how many queries newly miss, "" for a set without slices)
    is named in the reason when miss@10 rises too far: which queries to read first.
    A change exactly at an allowance passes. A figure missing or NaN overall fails the gate
    (nothing to compare); in a slice it only gives a warning. When MRR@10 rises while
    miss@10 rises too, the verdict carries a warning even if it passes.

    >>> verdict = release_gate({"mrr@10": 0.5, "miss@10": 0.10}, {"mrr@10": 0.52, "miss@10": 0.12})
    >>> verdict.passed, verdict.reasons
    (False, ['miss@10 rose by 2.00 points (10.00% → 12.00%), more than the allowed 1.00'])
    >>> release_gate(
    ...     {"mrr@10": 0.5, "miss@10": 0.10},
    ...     {"mrr@10": 0.5, "miss@10": 0.15},
    ...     new_misses={"tail": 6, "head": 1},
    ... ).reasons[0].split(": ")[1]
    '7 new misses (tail 6, head 1)'
    """
    for name, allowance in (
        ("max_miss_rise", max_miss_rise),
        ("max_mrr_drop", max_mrr_drop),
        ("max_slice_drop", max_slice_drop),
    ):
        if not allowance >= 0:
            raise ValueError(f"{name} must be a non-negative number, got {allowance!r}")
    missing = [
        f"{role} {metric}"
        for role, means in (("baseline", baseline), ("candidate", candidate))
        for metric in (MRR, MISS)
        if not _known(means.get(metric))
    ]
    if missing:
        return GateVerdict(False, [f"cannot compare: no figure for {', '.join(missing)}"])
    reasons = [
        *_miss_rise(baseline[MISS], candidate[MISS], max_miss_rise, new_misses),
        *_mrr_drop(baseline[MRR], candidate[MRR], max_mrr_drop, "MRR@10"),
    ]
    warnings = _mrr_up_misses_up(baseline, candidate)
    for name in sorted(set(baseline_slices or {}) | set(candidate_slices or {})):
        before = (baseline_slices or {}).get(name, {}).get(MRR)
        after = (candidate_slices or {}).get(name, {}).get(MRR)
        if _known(before) and _known(after):
            reasons += _mrr_drop(before, after, max_slice_drop, f"slice {name!r}: MRR@10")
        else:
            side = "baseline" if not _known(before) else "candidate"
            warnings.append(f"slice {name!r} not compared: no MRR@10 for the {side}")
    return GateVerdict(not reasons, reasons, warnings)


def _miss_rise(
    before: float, after: float, allowance_points: float, new_misses: Mapping[str, int] | None
) -> list[str]:
    rise_points = (after - before) * 100
    if rise_points <= allowance_points + EPSILON:
        return []
    reason = (
        f"miss@10 rose by {rise_points:.2f} points ({before:.2%} → {after:.2%}), "
        f"more than the allowed {allowance_points:.2f}"
    )
    return [f"{reason}: {_count_new_misses(new_misses)}" if new_misses else reason]


def _count_new_misses(new_misses: Mapping[str, int]) -> str:
    """'7 new misses (tail 6, head 1)': the slices with most new misses first."""
    total = sum(new_misses.values())
    counted = f"{total} new {'miss' if total == 1 else 'misses'}"
    per_slice = sorted(
        ((name, count) for name, count in new_misses.items() if name and count),
        key=lambda item: (-item[1], item[0]),
    )
    if not per_slice:
        return counted
    return f"{counted} ({', '.join(f'{name} {count}' for name, count in per_slice)})"


def _mrr_drop(before: float, after: float, allowance: float, label: str) -> list[str]:
    drop = before - after
    if drop <= allowance + EPSILON:
        return []
    return [
        f"{label} fell by {drop:.4f} ({before:.4f} → {after:.4f}), "
        f"more than the allowed {allowance:.4f}"
    ]


def _mrr_up_misses_up(baseline: Mapping[str, float], candidate: Mapping[str, float]) -> list[str]:
    mrr_rose = candidate[MRR] - baseline[MRR] > EPSILON
    misses_rose = candidate[MISS] - baseline[MISS] > EPSILON
    if not (mrr_rose and misses_rose):
        return []
    return [
        f"MRR@10 went up ({baseline[MRR]:.4f} → {candidate[MRR]:.4f}) but misses went up too "
        f"({baseline[MISS]:.2%} → {candidate[MISS]:.2%}): more users get no answer at all"
    ]


def _known(value: float | None) -> bool:
    return value is not None and not math.isnan(value)
