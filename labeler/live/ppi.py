"""Label-efficient figures: a machine judge's per-query figures on every query, corrected by
the humans' on the project's random sample (prediction-powered inference, :mod:`goldset.eval.ppi`).

The adapter reads what eval needs from the store — the humans' golden set, the judge's labels
(``Store.machine_judgments_frame``), the sample (``Store.human_sample``: its counted,
labelled queries and their inclusion probabilities) — scores the run under both label sets,
and hands eval the per-query values: the humans' on the sampled queries, the judge's on every
query. Per slice and over all queries, each metric (or each paired delta) gets the PPI
estimate, its CI, λ and the effective number of human queries, beside the humans' own
estimate on the same sample; the release gate can be judged on the PPI deltas
(:func:`ppi_comparison`).

Which queries: every query of the project that the humans have not found unanswerable (a
query not labelled yet counts: that is the point), scored by the judge as if done in full
mode; a sampled query counts once the sample's order has reached it (``labelled``). No
sample, or no sampled query labelled yet: no figure (:class:`NoSample`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from goldset.eval.gate import MISS, MRR, Estimated, GateVerdict, gate_on_estimates
from goldset.eval.metrics import per_query_frame, rank_run
from goldset.eval.ppi import PPIEstimate, ppi_mean
from goldset.eval.readers import Golden, Run
from goldset.eval.report import NO_SLICE
from goldset.labeler.live.project import golden_set

if TYPE_CHECKING:
    from goldset.labeler.store import Store

ALL = "all"  # the key of the figures over every query
# Every metric lies in [0, 1], a paired delta in [-1, 1]: no CI reaches past (eval.ppi).
METRIC_RANGE, DELTA_RANGE = (0.0, 1.0), (-1.0, 1.0)
NO_SAMPLE = (
    "no PPI figure without a random human sample: goldset sample --db PATH --random "
    "(or --active), then label the sampled queries first"
)


class NoSample(ValueError):
    """The project has no random human sample with a labelled query: no PPI figure."""

    def __init__(self) -> None:
        super().__init__(NO_SAMPLE)


def ppi_report(
    store: Store,
    run: Run,
    judge: pd.DataFrame,
    metrics: Sequence[str] = ("mrr@10", "hit@10"),
    **scoring,
) -> dict:
    """PPI figures of ``run``: {slice: {metric: PPIEstimate.as_dict()}}, ``all`` first.

    ``judge`` is the judge's labels (query_id, doc_id, grade); ``scoring`` the options of
    :func:`goldset.eval.metrics.rank_run` and ``gain``. Raises :class:`NoSample` without a sample.
    """
    sample, human, machine = _sources(store, judge)
    human_values = _values(human, run, metrics, scoring)
    machine_values = _values(machine, run, metrics, scoring)
    return _as_dicts(_estimates(human_values, machine_values, sample, machine))


@dataclass(frozen=True)
class PPIComparison:
    """Two runs compared on PPI estimates: ``deltas`` ({slice: {metric: figure}}, as
    :func:`ppi_report`'s, of the per-query deltas candidate − baseline) and the release gate
    judged on them (``gate``)."""

    deltas: dict
    gate: GateVerdict


def ppi_comparison(
    store: Store,
    baseline: Run,
    candidate: Run,
    judge: pd.DataFrame,
    thresholds: Mapping[str, float] | None = None,
    **scoring,
) -> PPIComparison:
    """The PPI deltas of MRR@10 and miss@10 (over all queries and per slice) and the release
    gate judged on them (:func:`goldset.eval.gate.gate_on_estimates`), each run's own PPI
    estimate beside each rule; the sample and both golden sets are read once.
    ``thresholds`` are the gate's allowances."""
    metrics = [MRR, MISS]
    sample, machine, (human_values, machine_values) = _paired(
        store, judge, baseline, candidate, metrics, scoring
    )
    before, after, deltas = (
        _estimates(human, judged, sample, machine, limits)
        for human, judged, limits in (
            (human_values[0], machine_values[0], METRIC_RANGE),
            (human_values[1], machine_values[1], METRIC_RANGE),
            (
                human_values[1] - human_values[0],
                machine_values[1] - machine_values[0],
                DELTA_RANGE,
            ),
        )
    )

    def estimated(name: str, metric: str) -> Estimated:
        delta = deltas[name][metric]
        return Estimated(
            delta.mean,
            delta.std_error,
            max(delta.n_human - 1, 1),  # the guarded interval's Student's t
            delta.n_human,
            before[name][metric].mean,
            after[name][metric].mean,
        )

    slices = {name: estimated(name, MRR) for name in deltas if name != ALL and MRR in deltas[name]}
    overall = {metric: estimated(ALL, metric) for metric in metrics}
    return PPIComparison(
        _as_dicts(deltas), gate_on_estimates(overall, slices, **(thresholds or {}))
    )


def _sources(store: Store, judge: pd.DataFrame) -> tuple[pd.DataFrame, Golden, Golden]:
    """The labelled sample, the humans' golden set and the judge's over every query."""
    sample = store.human_sample()
    sample = sample[sample["labelled"]]
    if sample.empty:
        raise NoSample()
    human = golden_set(store)  # in bulk: built from its records, 4.4 s on 20,000 queries
    return sample, human, _judge_golden(human, judge)


def _paired(
    store: Store,
    judge: pd.DataFrame,
    baseline: Run,
    candidate: Run,
    metrics: Sequence[str],
    scoring: dict,
) -> tuple[pd.DataFrame, Golden, tuple[list[pd.DataFrame], list[pd.DataFrame]]]:
    """The labelled sample, the judge's golden set, and the per-query values of [baseline,
    candidate] under the humans' labels and under the judge's."""
    sample, human, machine = _sources(store, judge)
    values = tuple(
        [_values(golden, run, metrics, scoring) for run in (baseline, candidate)]
        for golden in (human, machine)
    )
    return sample, machine, values


def _judge_golden(human: Golden, judge: pd.DataFrame) -> Golden:
    """The judge's golden set: every query the humans did not find unanswerable, done, in
    full mode, with the judge's labels."""
    queries = human.queries
    unanswerable = (queries["status"] == "done") & ~queries["answerable"].astype(bool)
    queries = queries[~unanswerable].assign(status="done", answerable=True, mode="full")
    judged = judge[judge["query_id"].isin(queries["query_id"])]
    return Golden(
        queries.reset_index(drop=True),
        judged[["query_id", "doc_id", "grade"]].reset_index(drop=True),
    )


def _values(golden: Golden, run: Run, metrics: Sequence[str], scoring: dict) -> pd.DataFrame:
    """Per-query values of ``metrics`` on the golden set's scored queries (index query_id)."""
    gain = scoring.get("gain", "linear")
    options = {name: value for name, value in scoring.items() if name != "gain"}
    return per_query_frame(rank_run(golden, run, list(metrics), **options), metrics, gain)


def _as_dicts(estimates: dict) -> dict:
    return {
        name: {metric: estimate.as_dict() for metric, estimate in metrics.items()}
        for name, metrics in estimates.items()
    }


def _estimates(
    human: pd.DataFrame,
    machine: pd.DataFrame,
    sample: pd.DataFrame,
    judge_golden: Golden,
    limits: tuple[float, float] = METRIC_RANGE,
) -> dict[str, dict[str, PPIEstimate]]:
    """PPI per slice (``all`` first) and metric, from the humans' values (their scored
    queries), the judge's (every query) and the labelled sample; CIs cut to ``limits``."""
    slices = judge_golden.queries.set_index("query_id")["slice"].reindex(machine.index)
    names = slices.fillna("").replace("", NO_SLICE)
    groups = {ALL: machine.index}
    if (names != NO_SLICE).any():
        groups |= {name: machine.index[names == name] for name in sorted(names.unique())}
    sampled = sample[sample["query_id"].isin(human.index) & sample["query_id"].isin(machine.index)]
    result = {}
    for name, members in groups.items():
        rows = sampled[sampled["query_id"].isin(members)]
        figures = {}
        for metric in machine.columns:
            figure = _estimate(human[metric], machine[metric], rows, members, limits)
            if figure is not None:
                figures[metric] = figure
        if figures:
            result[name] = figures
    if ALL not in result:  # every labelled sampled query was found unanswerable
        raise NoSample()
    return result


def _estimate(
    human: pd.Series,
    machine: pd.Series,
    rows: pd.DataFrame,
    members: pd.Index,
    limits: tuple[float, float],
) -> PPIEstimate | None:
    """One metric's PPI over ``members``; None when none of its sampled queries has a value."""
    values = human.reindex(rows["query_id"]).to_numpy(dtype=np.float64)
    measured = ~np.isnan(values)
    if not measured.any():
        return None
    ids = rows["query_id"].to_numpy()[measured]
    return ppi_mean(
        values[measured],
        machine.reindex(ids).to_numpy(dtype=np.float64),
        machine.reindex(members).to_numpy(dtype=np.float64),
        weights=1 / rows["probability"].to_numpy(dtype=np.float64)[measured],
        limits=limits,
    )
