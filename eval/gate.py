"""The release gate: may a candidate system replace the baseline?

The gate judges rules on the paired per-query deltas (candidate − baseline) over the same
golden queries: miss@10 may not rise by more than an allowance (in percentage points), MRR@10
may not fall by more than one, and no slice's MRR@10 may fall by more than another. Each rule
is, from the bootstrap CI of its delta:

- *violated* when the whole CI lies beyond the allowance,
- *kept* when the whole CI lies within it,
- *undecided* otherwise, with about how many more queries would decide it.

The CI is the union of the BCa bootstrap interval and Student's t interval at the same level.
On few queries with heavy-tailed deltas (a 20-query slice where most queries do not move and
a few move by ±0.9) the bootstrap's far tails are too short: measured, its one-sided 0.6%
bound was crossed 3-9 times as often as promised under no change, while the t interval kept
its promise; on skewed values the t interval is the one too short on one side, which BCa
corrects. Taking the union, a bound is crossed only when both cross it. The t interval is cut
to the range of the per-query deltas, as every resampled mean is: when no query got worse,
the CI does not say that the mean could have.

The verdict is ``fail`` when any rule is violated, ``pass`` when all are kept, ``inconclusive``
otherwise. Many rules (one per slice) are many chances to fail by chance, so the violations
are tested as a family with Holm's step-down: each rule's one-sided p-value of violation is
computed, the smallest is held to α/m, the next to α/(m − 1), and so on until one is not
violated; each rule's CI is shown at the two-sided level 1 − 2·α_j of its step, so that
"the whole CI beyond the allowance" is exactly the test it was held to. Whatever the number of
slices, a candidate that regresses nowhere fails with probability at most α (``FAMILY_ALPHA``,
5 %). ``pass`` needs every rule kept, each at its own level: requiring all of them is already
the stricter test (an intersection-union test), so it needs no correction.

Without resamples (``n_resamples=0``) each CI is the point delta itself: the gate on means.
It also warns when MRR@10 rises while misses rise too: a better average that hides users who
now get no answer at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from statistics import NormalDist

import numpy as np

from goldset.eval import stats
from goldset.eval.intervals import t_tail  # P(T > t), t ≥ 0: the t test's tail, as the CIs use it

MRR = "mrr@10"
MISS = "miss@10"
SCHEMA = "goldset.gate/1"  # the version of the gate's JSON (docs/gate.md)
FAMILY_ALPHA = 0.05  # the chance that a candidate that regresses nowhere fails the gate
POWER = 0.8  # how often the estimated number of queries decides a rule, if its delta holds
# Means are averages of floats: a change within this of a threshold counts as at the threshold.
EPSILON = 1e-9
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
KEPT, VIOLATED, UNDECIDED = "kept", "violated", "undecided"


@dataclass(frozen=True)
class Rule:
    """One rule and its judgement. ``delta``, ``ci`` and ``allowance`` are in the rule's units
    (points for miss@10); ``ci_level`` is the two-sided level its CI is shown at (its Holm
    step); ``p_violation`` the one-sided p-value that it is violated (None without resamples)
    and ``p_floor`` the smallest that the resamples can show."""

    metric: str
    slice: str | None
    worse_if: str  # "rise" or "fall"
    allowance: float
    units: str
    queries: int
    baseline: float
    candidate: float
    delta: float
    ci: tuple[float, float]
    ci_level: float | None
    p_violation: float | None
    p_floor: float | None
    status: str
    more_queries: int | None
    reason: str

    @property
    def name(self) -> str:
        """'mrr@10', or 'slice tail: mrr@10'."""
        return self.metric if self.slice is None else f"slice {self.slice}: {self.metric}"


@dataclass(frozen=True)
class GateVerdict:
    """The gate's decision: ``verdict`` (pass, fail or inconclusive), every rule judged,
    one sentence per rule not kept (``reasons``), and warnings."""

    verdict: str
    rules: list[Rule] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def as_json(self) -> dict:
        """The verdict as ``goldset compare --json`` gives it (schema in docs/gate.md)."""
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "passed": self.passed,
            "family_alpha": FAMILY_ALPHA,
            "rules": [{"name": rule.name, **asdict(rule)} for rule in self.rules],
            "reasons": self.reasons,
            "warnings": self.warnings,
        }


@dataclass(frozen=True)
class Estimated:
    """A rule's delta estimated in closed form rather than resampled (a prediction-powered
    estimate, :mod:`goldset.eval.ppi`): ``delta`` ± Student's t (``df`` degrees of freedom) times
    ``std_error``, as fractions; ``queries`` the human-labelled ones it rests on;
    ``baseline`` and ``candidate`` each run's own estimate."""

    delta: float
    std_error: float
    df: int
    queries: int
    baseline: float
    candidate: float

    def interval(self, level: float) -> tuple[float, float]:
        """The two-sided CI at ``level``."""
        half = stats.student_t_quantile(0.5 + level / 2, self.df) * self.std_error
        return self.delta - half, self.delta + half

    def beyond(self, limit: float, worse_if: str) -> float:
        """One-sided p-value that the true delta lies beyond ``limit`` (is violated)."""
        beyond = self.delta - limit if worse_if == "rise" else limit - self.delta
        if self.std_error == 0:
            return 0.0 if beyond > 0 else 1.0
        t = beyond / self.std_error  # P(T ≥ t): an estimate this far beyond by chance
        return t_tail(t, self.df) if t >= 0 else 1 - t_tail(-t, self.df)


@dataclass(frozen=True)
class _Pending:
    """A rule before its judgement: its per-query deltas and their resampled means."""

    metric: str
    slice: str | None
    worse_if: str
    allowance: float
    scale: float  # 100 for points
    before: np.ndarray
    after: np.ndarray
    resampled: stats.Resampled | None
    estimated: Estimated | None = None  # judged on this estimate instead (gate_on_estimates)

    @property
    def limit(self) -> float:
        """The allowed delta as a fraction: +allowance for a rise, −allowance for a fall."""
        sign = 1 if self.worse_if == "rise" else -1
        return sign * self.allowance / self.scale

    @property
    def delta(self) -> float:
        """The mean delta as a fraction (candidate − baseline)."""
        if self.estimated is not None:
            return self.estimated.delta
        return float(self.after.mean() - self.before.mean())

    def p_violation(self) -> float:
        """One-sided p-value that the rule is violated (0 or 1 on means alone)."""
        if self.estimated is not None:
            return self.estimated.beyond(self.limit, self.worse_if)
        if self.resampled is None:
            return 0.0 if self._beyond(self.delta, self.delta) else 1.0
        limit = np.array([self.limit])
        tail = self.resampled.below if self.worse_if == "rise" else self.resampled.above
        return float(tail(limit)[0])

    def _p_floor(self) -> float | None:
        """The smallest p-value of violation the resamples can show."""
        if self.resampled is None:
            return None
        below, above = self.resampled.floors()
        return float((below if self.worse_if == "rise" else above)[0])

    def _beyond(self, low: float, high: float) -> bool:
        """Whether [low, high] lies wholly on the wrong side of the limit."""
        if self.worse_if == "rise":
            return low > self.limit + EPSILON
        return high < self.limit - EPSILON

    def _within(self, low: float, high: float) -> bool:
        """Whether [low, high] lies wholly within the limit."""
        if self.worse_if == "rise":
            return high <= self.limit + EPSILON
        return low >= self.limit - EPSILON

    def judged(self, alpha: float, new_misses: Mapping[str, int] | None) -> Rule:
        """The rule judged at one-sided level ``alpha`` (its Holm step)."""
        delta = self.delta
        if self.estimated is not None:
            level = 1 - 2 * alpha
            low, high = self.estimated.interval(level)
        elif self.resampled is None:
            low = high = delta
            level = None
        else:
            level = 1 - 2 * alpha
            low, high = self.resampled.interval(level)[0]
            deltas = self.after - self.before
            # Within the deltas seen, as every resampled mean is: no query fell, no fall.
            t_low, t_high = np.clip(stats.t_interval(deltas, level), deltas.min(), deltas.max())
            low, high = float(min(low, t_low)), float(max(high, t_high))
        if self._beyond(low, high):
            status = VIOLATED
        elif self._within(low, high):
            status = KEPT
        else:
            status = UNDECIDED
        more = self._more_queries(delta, alpha) if status == UNDECIDED else None
        rule = Rule(
            metric=self.metric,
            slice=self.slice,
            worse_if=self.worse_if,
            allowance=self.allowance,
            units="points" if self.scale == 100 else "",
            queries=len(self.before) if self.estimated is None else self.estimated.queries,
            baseline=float(self.before.mean()),
            candidate=float(self.after.mean()),
            delta=delta * self.scale,
            ci=(low * self.scale, high * self.scale),
            ci_level=level,
            p_violation=None if level is None else self.p_violation(),
            p_floor=self._p_floor(),
            status=status,
            more_queries=more,
            reason="",
        )
        return _with_reason(rule, new_misses if self.metric == MISS else None)

    def _more_queries(self, delta: float, alpha: float) -> int | None:
        """About how many more queries would decide the rule, if its delta and the spread of
        the per-query deltas hold (normal approximation): the n at which the one-sided bound
        at ``alpha`` clears the limit with probability ``POWER``. None when nothing can."""
        distance = abs(delta - self.limit)
        if self.estimated is not None:  # the spread of one human-labelled query, as PPI sees it
            spread = self.estimated.std_error * math.sqrt(self.estimated.queries)
        else:
            spread = float(np.std(self.after - self.before, ddof=1)) if len(self.before) > 1 else 0
        if distance <= EPSILON or spread == 0:
            return None
        z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(POWER)
        total = math.ceil((z * spread / distance) ** 2)
        queries = len(self.before) if self.estimated is None else self.estimated.queries
        return max(1, total - queries)


def release_gate(
    baseline: np.ndarray,
    candidate: np.ndarray,
    slices: Mapping[str, np.ndarray] | None = None,
    *,
    max_miss_rise: float = 1.0,
    max_mrr_drop: float = 0.0,
    max_slice_drop: float = 0.05,
    n_resamples: int = 1000,
    seed: int = 0,
    new_misses: Mapping[str, int] | None = None,
) -> GateVerdict:
    """Judge ``candidate`` against ``baseline`` from their per-query values.

    ``baseline`` and ``candidate`` have shape (n_queries, 2): per query its RR@10 and its
    miss@10 (0 or 1), row i the same query in both; ``slices`` maps a slice name to its rows.
    The rules: miss@10 may not rise by more than ``max_miss_rise`` percentage points (1.0 =
    0.01 as a fraction), MRR@10 may not fall by more than ``max_mrr_drop``, and no slice's
    MRR@10 by more than ``max_slice_drop``; see the module's docstring for how each is judged.
    ``n_resamples`` bootstrap resamples (BCa, seeded by ``seed``) give the CIs; 0 judges the
    means alone. ``new_misses`` (slice name → how many queries newly miss, "" for a set
    without slices) is named in the miss rule's reason. No queries fails the gate (nothing
    to compare).

    >>> rr = np.array([1.0, 0.5, 1.0, 0.0])
    >>> before, after = np.c_[rr, rr == 0], np.c_[rr, rr == 0]
    >>> after[1] = [0.0, 1.0]  # one query in four now misses: +25 points
    >>> verdict = release_gate(before, after, n_resamples=0)
    >>> verdict.verdict, verdict.reasons[0]
    ('fail', 'miss@10 rose by 25.00 points (25.00% → 50.00%), more than the allowed 1.00')
    """
    _check_allowances(
        max_miss_rise=max_miss_rise, max_mrr_drop=max_mrr_drop, max_slice_drop=max_slice_drop
    )
    before, after = (np.asarray(values, dtype=np.float64) for values in (baseline, candidate))
    if len(before) == 0:
        return GateVerdict(FAIL, [], ["cannot compare: no queries"])
    overall = _resampled(before, after, n_resamples, seed)
    pending = [
        _Pending(MISS, None, "rise", max_miss_rise, 100, before[:, 1], after[:, 1], overall[1]),
        _Pending(MRR, None, "fall", max_mrr_drop, 1, before[:, 0], after[:, 0], overall[0]),
    ]
    for name, rows in sorted((slices or {}).items()):
        if len(rows):
            resampled = _resampled(before[rows, :1], after[rows, :1], n_resamples, seed)[0]
            old, new = before[rows, 0], after[rows, 0]
            pending.append(_Pending(MRR, name, "fall", max_slice_drop, 1, old, new, resampled))
    rules = _holm(pending, new_misses)
    return GateVerdict(
        _verdict(rules),
        rules,
        [rule.reason for rule in rules if rule.status != KEPT],
        _mrr_up_misses_up(rules[1], rules[0]),
    )


def gate_on_means(
    baseline: Mapping[str, float],
    candidate: Mapping[str, float],
    baseline_slices: Mapping[str, Mapping[str, float]] | None = None,
    candidate_slices: Mapping[str, Mapping[str, float]] | None = None,
    *,
    max_miss_rise: float = 1.0,
    max_mrr_drop: float = 0.0,
    max_slice_drop: float = 0.05,
) -> GateVerdict:
    """The gate's rules on mean figures alone, for records that keep no per-query values (a
    run history): each rule's CI is its point delta, so it is violated or kept, never
    undecided. ``baseline`` and ``candidate`` map ``"mrr@10"`` and ``"miss@10"`` (a fraction)
    to their means, the slice mappings the same per slice; each rule's ``queries`` is 1 (one
    mean). A slice without MRR@10 on either side is not compared, with a warning.

    >>> gate_on_means({"mrr@10": 0.5, "miss@10": 0.1}, {"mrr@10": 0.5, "miss@10": 0.12}).reasons
    ['miss@10 rose by 2.00 points (10.00% → 12.00%), more than the allowed 1.00']
    """
    _check_allowances(
        max_miss_rise=max_miss_rise, max_mrr_drop=max_mrr_drop, max_slice_drop=max_slice_drop
    )

    def point(metric: str, name: str | None, means: tuple, allowance: float) -> _Pending:
        worse_if, scale = ("rise", 100) if metric == MISS else ("fall", 1)
        before, after = (np.array([mean], dtype=np.float64) for mean in means)
        return _Pending(metric, name, worse_if, allowance, scale, before, after, None)

    pending = [
        point(MISS, None, (baseline[MISS], candidate[MISS]), max_miss_rise),
        point(MRR, None, (baseline[MRR], candidate[MRR]), max_mrr_drop),
    ]
    warnings = []
    for name in sorted(set(baseline_slices or {}) | set(candidate_slices or {})):
        means = [
            (side or {}).get(name, {}).get(MRR) for side in (baseline_slices, candidate_slices)
        ]
        if all(mean is not None and not math.isnan(mean) for mean in means):
            pending.append(point(MRR, name, tuple(means), max_slice_drop))
        else:
            side = "baseline" if means[0] is None or math.isnan(means[0]) else "candidate"
            warnings.append(f"slice {name!r} not compared: no MRR@10 for the {side}")
    rules = _holm(pending, None)
    reasons = [rule.reason for rule in rules if rule.status != KEPT]
    return GateVerdict(
        _verdict(rules), rules, reasons, _mrr_up_misses_up(rules[1], rules[0]) + warnings
    )


def gate_on_estimates(
    overall: Mapping[str, Estimated],
    slices: Mapping[str, Estimated] | None = None,
    *,
    max_miss_rise: float = 1.0,
    max_mrr_drop: float = 0.0,
    max_slice_drop: float = 0.05,
) -> GateVerdict:
    """The gate's rules on estimated deltas (``overall``: ``"mrr@10"`` and ``"miss@10"``;
    ``slices``: each slice's MRR@10), each judged on its estimate's CI at its Holm step's
    level and its one-sided p-value of violation from the same t distribution: the gate of
    ``goldset compare --labels ppi``, where the deltas are prediction-powered estimates.

    >>> rise = Estimated(0.05, 0.01, 49, 50, 0.10, 0.15)
    >>> gate_on_estimates({"miss@10": rise, "mrr@10": Estimated(0, 0.001, 49, 50, .5, .5)}).verdict
    'fail'
    """
    _check_allowances(
        max_miss_rise=max_miss_rise, max_mrr_drop=max_mrr_drop, max_slice_drop=max_slice_drop
    )

    def pending(metric: str, name: str | None, estimate: Estimated, allowance: float) -> _Pending:
        worse_if, scale = ("rise", 100) if metric == MISS else ("fall", 1)
        before, after = np.array([estimate.baseline]), np.array([estimate.candidate])
        return _Pending(metric, name, worse_if, allowance, scale, before, after, None, estimate)

    rules = _holm(
        [
            pending(MISS, None, overall[MISS], max_miss_rise),
            pending(MRR, None, overall[MRR], max_mrr_drop),
            *(
                pending(MRR, name, estimate, max_slice_drop)
                for name, estimate in sorted((slices or {}).items())
            ),
        ],
        None,
    )
    reasons = [rule.reason for rule in rules if rule.status != KEPT]
    return GateVerdict(_verdict(rules), rules, reasons, _mrr_up_misses_up(rules[1], rules[0]))


def _check_allowances(**allowances: float) -> None:
    for name, allowance in allowances.items():
        if not allowance >= 0:
            raise ValueError(f"{name} must be a non-negative number, got {allowance!r}")


def _resampled(
    before: np.ndarray, after: np.ndarray, n_resamples: int, seed: int
) -> list[stats.Resampled | None]:
    """Per column, the resampled mean deltas (all columns on the same resampled queries)."""
    if not n_resamples:
        return [None] * before.shape[1]
    both = stats.resample_means(after - before, n_resamples, seed)
    return [
        stats.Resampled(
            both.estimate[[column]],
            both.resampled[:, [column]],
            both.bias[[column]],
            both.acceleration[[column]],
        )
        for column in range(before.shape[1])
    ]


def _holm(pending: Sequence[_Pending], new_misses: Mapping[str, int] | None) -> list[Rule]:
    """Holm's step-down over the rules' violations, in the rules' own order.

    The rule with the k-th smallest p-value of violation is judged at α/(m − k + 1) while
    the rules before it were violated; from the first that is not, every later rule is judged
    at that same level and none of them counts as violated."""
    order = sorted(range(len(pending)), key=lambda i: pending[i].p_violation())
    judged: dict[int, Rule] = {}
    stopped = False
    for step, position in enumerate(order):
        if not stopped:
            alpha = FAMILY_ALPHA / (len(order) - step)
        rule = pending[position].judged(alpha, new_misses)
        if stopped and rule.status == VIOLATED:
            # Its p-value is above the level that stopped the family (only the discreteness
            # of the resamples could put its CI beyond): the step-down rejects no more.
            rule = _with_reason(replace(rule, status=UNDECIDED, more_queries=None), None)
        stopped = stopped or rule.status != VIOLATED
        judged[position] = rule
    return [judged[position] for position in range(len(pending))]


def _verdict(rules: Sequence[Rule]) -> str:
    statuses = {rule.status for rule in rules}
    if VIOLATED in statuses:
        return FAIL
    return PASS if statuses == {KEPT} else INCONCLUSIVE


# --- reasons --------------------------------------------------------------------------------


def _with_reason(rule: Rule, new_misses: Mapping[str, int] | None) -> Rule:
    """The rule with its sentence: what moved, by how much, against what allowance."""
    label = "miss@10" if rule.metric == MISS else "MRR@10"
    if rule.slice is not None:
        label = f"slice {rule.slice!r}: {label}"
    if rule.metric == MISS:
        size = f"{abs(rule.delta):.2f} points"
        span = f"{rule.baseline:.2%} → {rule.candidate:.2%}"
        allowed = f"{rule.allowance:.2f}"
    else:
        size = f"{abs(rule.delta):.4f}"
        span = f"{rule.baseline:.4f} → {rule.candidate:.4f}"
        allowed = f"{rule.allowance:.4f}"
    if rule.ci_level is not None:
        low, high = (_signed(bound, rule.metric) for bound in rule.ci)
        span += f", {rule.ci_level * 100:.4g}% CI [{low}, {high}]"
    if abs(rule.delta) <= EPSILON:
        change = f"{label} did not change ({span})"
    else:
        change = f"{label} {'rose' if rule.delta > 0 else 'fell'} by {size} ({span})"
    if rule.status == VIOLATED:
        reason = f"{change}, more than the allowed {allowed}"
    elif rule.status == KEPT:
        reason = f"{change}, within the allowed {allowed}"
    else:
        moved = "rose" if rule.worse_if == "rise" else "fell"
        reason = f"{change}: cannot tell yet whether it {moved} by more than the allowed {allowed}"
        reason += (
            f"; about {rule.more_queries} more queries would decide it"
            if rule.more_queries
            else "; no number of queries decides it while the change sits at the allowance"
        )
    if new_misses and rule.status != KEPT and rule.delta > EPSILON:
        reason += f": {_count_new_misses(new_misses)}"
    return replace(rule, reason=reason)


def _signed(value: float, metric: str) -> str:
    return f"{value:+.2f}" if metric == MISS else f"{value:+.4f}"


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


def _mrr_up_misses_up(mrr: Rule, miss: Rule) -> list[str]:
    if not (mrr.delta > EPSILON and miss.delta > EPSILON):
        return []
    return [
        f"MRR@10 went up ({mrr.baseline:.4f} → {mrr.candidate:.4f}) but misses went up too "
        f"({miss.baseline:.2%} → {miss.candidate:.2%}): more users get no answer at all"
    ]
