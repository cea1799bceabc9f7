"""Calibrating a machine judge against the humans: may its labels stand in for theirs?

Two questions, per slice:

- **Agreement**, on every (query, doc) pair that both the machine and the humans labelled,
  with relevance as the project defines it (grade ≥ the threshold): Cohen's kappa with a
  bootstrap 95% CI over queries (:mod:`goldset.eval.agreement`); the machine's true-positive rate
  (of the pairs the humans call relevant, the share it calls relevant) and true-negative rate,
  each with a **Wilson score** 95% interval; the 2×2 relevance confusion matrix and the
  graded one.
- **Metric impact**: each run's MRR@10, hit@1 and miss@10 under the machine's labels and
  under the humans', on the same queries (those the machine labelled), with a paired
  bootstrap CI of the difference (:func:`goldset.eval.stats.paired_bootstrap`); and whether the
  release gate between two runs (:func:`goldset.eval.compare.compare_runs`) decides the same.

A plain verdict per slice follows from stated thresholds (:data:`THRESHOLDS`). Pure
computation over frames: the caller brings the labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import NormalDist

import numpy as np
import pandas as pd

from goldset.eval import agreement
from goldset.eval.compare import compare_runs
from goldset.eval.metrics import evaluate
from goldset.eval.readers import Golden, Run
from goldset.eval.report import NO_SLICE, slice_groups
from goldset.eval.stats import paired_bootstrap

IMPACT_METRICS = ("mrr@10", "hit@1", "miss@10")
LABEL_SETS = ("human", "machine", "both")
ALL = "(all)"  # the slice name of the whole set in the report
# A judge is usable for hole-filling on a slice when all of these hold there.
THRESHOLDS = {
    "min_kappa": 0.6,  # Cohen's kappa on relevance, machine vs humans
    "max_mrr_delta": 0.05,  # the paired 95% CI of ΔMRR@10 lies within ± this, for every run
    "min_pairs": 30,  # fewer pairs labelled by both: too few to tell
}


# --- which labels -----------------------------------------------------------------------------


def with_labels(golden: Golden, machine: pd.DataFrame, labels: str) -> Golden:
    """The golden set under ``labels``: ``human`` (as it is), ``machine`` (the machine's
    grades instead of the humans') or ``both`` (the humans' grades, and the machine's where
    no human labelled the pair: filled holes).

    ``machine`` is a judgments frame (query_id, doc_id, grade). The queries — which count,
    their status, answerability and slices — are always the humans'.
    """
    if labels not in LABEL_SETS:
        raise ValueError(f"labels must be one of {LABEL_SETS}, got {labels!r}")
    if labels == "human":
        return golden
    known = golden.queries["query_id"]
    machine = machine.loc[machine["query_id"].isin(known), ["query_id", "doc_id", "grade"]]
    if labels == "machine":
        return Golden(golden.queries, machine.reset_index(drop=True))
    human_pairs = pd.MultiIndex.from_frame(golden.judgments[["query_id", "doc_id"]])
    fills = machine[~pd.MultiIndex.from_frame(machine[["query_id", "doc_id"]]).isin(human_pairs)]
    return Golden(golden.queries, pd.concat([golden.judgments, fills], ignore_index=True))


def restricted(golden: Golden, query_ids: Sequence[str]) -> Golden:
    """The golden set cut to ``query_ids`` (queries and their judgments)."""
    keep = golden.queries["query_id"].isin(query_ids)
    judged = golden.judgments["query_id"].isin(query_ids)
    return Golden(
        golden.queries[keep].reset_index(drop=True),
        golden.judgments[judged].reset_index(drop=True),
    )


# --- agreement ------------------------------------------------------------------------------------


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (NaN bounds with no trials).

    Unlike the normal approximation it stays inside [0, 1] and is honest at 0 % and 100 %.

    >>> [round(bound, 4) for bound in wilson_interval(8, 10)]
    [0.4902, 0.9433]
    """
    if trials == 0:
        return (float("nan"), float("nan"))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    half /= 1 + z * z / trials
    # At 0 and n successes the bound is exactly 0 (or 1); float rounding would leave 1e-17.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return (float(low), float(high))


def paired_labels(golden: Golden, machine: pd.DataFrame) -> pd.DataFrame:
    """Every pair labelled by both: DataFrame(query_id, doc_id, slice, human, machine), in the
    golden set's query order. Only the golden set's scored queries (done and answerable)
    count, so that agreement is measured where the metrics are."""
    scored = golden.scored_query_ids()
    human = golden.judgments[golden.judgments["query_id"].isin(scored)]
    both = human.merge(machine, on=["query_id", "doc_id"], suffixes=("_human", "_machine"))
    slices = golden.queries.set_index("query_id")["slice"]
    order = pd.Series(np.arange(len(golden.queries)), index=golden.queries["query_id"])
    both = both.assign(slice=slices.reindex(both["query_id"]).to_numpy())
    both = both.iloc[np.argsort(order.reindex(both["query_id"]).to_numpy(), kind="stable")]
    return both.rename(columns={"grade_human": "human", "grade_machine": "machine"})[
        ["query_id", "doc_id", "slice", "human", "machine"]
    ].reset_index(drop=True)


def agreement_figures(
    pairs: pd.DataFrame,
    rel_threshold: int = 1,
    max_grade: int | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Kappa (relevance), TPR, TNR and the confusion matrices of ``pairs`` (see
    :func:`paired_labels`): the machine measured against the humans."""
    human = (pairs["human"].to_numpy() >= rel_threshold).astype(np.int64)
    machine = (pairs["machine"].to_numpy() >= rel_threshold).astype(np.int64)
    query_codes, queries = pd.factorize(pairs["query_id"])
    tables = np.zeros((len(queries), 2, 2))
    np.add.at(tables, (query_codes, human, machine), 1.0)
    kappa = agreement.estimate(
        tables, agreement.kappa_from_table, n_resamples=n_resamples, seed=seed
    )
    positives, negatives = int(human.sum()), int(len(human) - human.sum())
    true_positives = int((human & machine).sum())
    true_negatives = int(((1 - human) & (1 - machine)).sum())
    top = int(
        max(
            max_grade or 0,
            pairs["human"].to_numpy().max(initial=0),
            pairs["machine"].to_numpy().max(initial=0),
        )
    )
    grades = np.arange(top + 1)
    graded = agreement.confusion_table(pairs["human"], pairs["machine"], grades)
    return {
        "pairs": len(pairs),
        "queries": len(queries),
        "kappa": kappa.as_dict(),
        "tpr": _rate(true_positives, positives),
        "tnr": _rate(true_negatives, negatives),
        "confusion": {
            "rows": "human",
            "columns": "machine",
            "relevance": tables.sum(axis=0).astype(int).tolist(),
            "grades": graded.astype(int).tolist(),
        },
    }


def _rate(hits: int, trials: int) -> dict:
    low, high = wilson_interval(hits, trials)
    return {
        "value": hits / trials if trials else None,
        "hits": hits,
        "of": trials,
        "ci95": [_number(low), _number(high)],
    }


# --- metric impact --------------------------------------------------------------------------------


def metric_impact(
    human: Golden,
    machine: Golden,
    run: Run,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    rel_threshold: int = 1,
) -> dict:
    """The run's IMPACT_METRICS under both label sets, on the same queries, with the paired
    bootstrap CI of machine − human, overall and per slice."""
    metrics = list(IMPACT_METRICS)
    under_human = evaluate(human, run, metrics, rel_threshold=rel_threshold)
    under_machine = evaluate(machine, run, metrics, rel_threshold=rel_threshold)
    under_machine = under_machine.loc[under_human.index]
    judged = evaluate(machine, run, ["judged@10"]).loc[under_human.index, "judged@10"]
    groups = {ALL: under_human.index, **slice_groups(_slices(human), under_human.index)}
    return {
        name: {
            "queries": len(ids),
            "machine_judged@10": _number(judged.loc[ids].mean()),
            "metrics": _paired(under_human.loc[ids], under_machine.loc[ids], n_resamples, seed),
        }
        for name, ids in groups.items()
    }


def _paired(human: pd.DataFrame, machine: pd.DataFrame, n_resamples: int, seed: int) -> dict:
    # BCa, on which the ±max_mrr_delta limit was set (the reports' score CI would call a judge
    # that agrees everywhere on a 20-query slice unusable: ±0.18 for all 20 deltas at 0).
    result = paired_bootstrap(human, machine, max(n_resamples, 1), seed, method="bca")
    return {
        spec: {
            "human": _number(human[spec].mean()),
            "machine": _number(machine[spec].mean()),
            "delta": _number(result.delta[column]),
            "ci95": [_number(bound) for bound in result.ci[column]] if n_resamples else None,
        }
        for column, spec in enumerate(human.columns)
    }


def gate_agreement(
    human: Golden,
    machine: Golden,
    baseline: Run,
    candidate: Run,
    thresholds: Mapping[str, float] | None = None,
    rel_threshold: int = 1,
) -> dict:
    """Whether the release gate between ``baseline`` and ``candidate`` decides the same under
    the humans' labels and under the machine's: both verdicts, with their reasons."""
    verdicts = {
        labels: compare_runs(
            golden,
            baseline,
            candidate,
            list(IMPACT_METRICS),
            bootstrap=0,
            thresholds=thresholds,
            rel_threshold=rel_threshold,
        )["gate"]
        for labels, golden in (("human", human), ("machine", machine))
    }
    return {
        "baseline": baseline.name,
        "candidate": candidate.name,
        "same_decision": verdicts["human"]["passed"] == verdicts["machine"]["passed"],
        **verdicts,
    }


# --- the report -----------------------------------------------------------------------------------


def calibration_report(
    golden: Golden,
    machine: pd.DataFrame,
    runs: Sequence[Run] = (),
    *,
    judge: str = "machine",
    rel_threshold: int = 1,
    max_grade: int | None = None,
    gate_runs: tuple[Run, Run] | None = None,
    thresholds: Mapping[str, float] | None = None,
    gate_thresholds: Mapping[str, float] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Agreement per slice, each run's metric impact, the gate's agreement and a verdict per
    slice, for the machine labels ``machine`` (query_id, doc_id, grade) against ``golden``.

    Metrics are compared on the scored queries where the machine labelled at least one
    pair; ``machine_judged@10`` says how much of each run's top 10 it labelled there.
    ``thresholds`` override :data:`THRESHOLDS`; ``gate_thresholds`` go to the release gate.
    """
    limits = {**THRESHOLDS, **(thresholds or {})}
    pairs = paired_labels(golden, machine)
    judged_queries = np.intersect1d(golden.scored_query_ids(), machine["query_id"].unique())
    human_set = restricted(golden, judged_queries)
    machine_set = with_labels(human_set, machine, "machine")
    groups = {ALL: pairs.index, **_pair_slices(pairs)}
    by_slice = {
        name: agreement_figures(pairs.loc[rows], rel_threshold, max_grade, n_resamples, seed)
        for name, rows in groups.items()
    }
    impact = {
        run.name: metric_impact(
            human_set,
            machine_set,
            run,
            n_resamples=n_resamples,
            seed=seed,
            rel_threshold=rel_threshold,
        )
        for run in runs
    }
    report = {
        "judge": judge,
        "rel_threshold": rel_threshold,
        "thresholds": limits,
        "ci_methods": {
            "kappa": "percentile bootstrap over queries",
            "tpr_tnr": "Wilson score interval",
            "metric_delta": "paired percentile bootstrap over queries",
        },
        "pairs": len(pairs),
        "queries": int(len(judged_queries)),
        "agreement": by_slice,
        "impact": impact,
        "verdicts": {name: verdict(by_slice[name], impact, name, limits) for name in by_slice},
    }
    if gate_runs is not None and len(judged_queries):
        report["gate"] = gate_agreement(
            human_set, machine_set, *gate_runs, gate_thresholds, rel_threshold
        )
    return report


def verdict(
    figures: Mapping, impact: Mapping[str, Mapping], slice_name: str, limits: Mapping
) -> str:
    """One plain sentence: is the judge usable for hole-filling on this slice, and if not,
    which threshold failed."""
    where = "overall" if slice_name == ALL else f"on slice {slice_name}"
    if figures["pairs"] < limits["min_pairs"]:
        return f"too few pairs to tell {where} ({figures['pairs']} < {limits['min_pairs']:g})"
    failures = []
    kappa = figures["kappa"]["value"]
    if kappa is None or kappa < limits["min_kappa"]:
        shown = "n/a" if kappa is None else f"{kappa:.2f}"
        failures.append(f"kappa {shown} < {limits['min_kappa']:g}")
    for run, by_slice in impact.items():
        entry = by_slice.get(slice_name, {}).get("metrics", {}).get("mrr@10")
        ci = entry and entry["ci95"]
        if not ci or None in ci or max(abs(ci[0]), abs(ci[1])) > limits["max_mrr_delta"]:
            shown = "n/a" if not ci or None in ci else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
            failures.append(f"{run} ΔMRR@10 CI {shown} not within ±{limits['max_mrr_delta']:g}")
    if failures:
        return f"not usable for hole-filling {where}: {'; '.join(failures)}"
    return f"usable for hole-filling {where}"


def _pair_slices(pairs: pd.DataFrame) -> dict[str, pd.Index]:
    """Row labels of ``pairs`` per slice, as :func:`goldset.eval.report.slice_groups` names them."""
    if not pairs["slice"].astype(bool).any():
        return {}
    names = pairs["slice"].replace("", NO_SLICE).to_numpy()
    return dict(pairs.groupby(names, sort=True).groups)


def _slices(golden: Golden) -> pd.Series:
    return golden.queries.set_index("query_id")["slice"]


def _number(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)
