"""Comparing runs: several runs' reports, a paired comparison, uploads evaluated or pooled."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from eval.metrics import DEFAULT_METRICS
from eval.readers import Golden, Run
from eval.report import build_report, compare_runs
from labeler.live.downloads import saved_uploads
from labeler.live.figures import _EMPTY_REPORT, BOOTSTRAP, SEED, report_table
from labeler.live.formats import _FIGURE_COLUMNS, JUDGED
from labeler.live.project import CUTOFF
from labeler.store import Store

__all__ = ["compare_pair", "evaluate_runs", "label_the_holes"]


def evaluate_runs(
    golden: Golden, runs: Sequence[Run], bootstrap: int = BOOTSTRAP, seed: int = SEED
) -> tuple[pd.DataFrame, dict[str, dict]]:
    """Each run against the golden set: one table (a :func:`report_table` per run, with a
    ``run`` column) and the reports by run name."""
    reports = {}
    for run in runs:
        report = build_report(golden, run, DEFAULT_METRICS, bootstrap=bootstrap, seed=seed)
        report.pop("per_query")
        reports[run.name] = report
    tables = [report_table(report).assign(run=name) for name, report in reports.items()]
    table = pd.concat(tables, ignore_index=True) if tables else report_table(_EMPTY_REPORT)
    return table[["run", *_FIGURE_COLUMNS, JUDGED]], reports


def compare_pair(
    golden: Golden, baseline: Run, candidate: Run, bootstrap: int = BOOTSTRAP, seed: int = SEED
) -> dict:
    """The paired comparison of two runs, as ``goldset compare --json`` prints it."""
    return compare_runs(
        golden, baseline, candidate, DEFAULT_METRICS, bootstrap=bootstrap, seed=seed
    )


def label_the_holes(store: Store, file_name: str, data: bytes, depth: int = CUTOFF) -> dict:
    """Add an uploaded run's unjudged top ``depth`` docs as work for the annotators, through
    the store's pooling (judged docs are reused; only docs not yet in the pool are queued).
    An admin's action. Returns the pooling counts."""
    with saved_uploads((file_name, data)) as saved:
        return store.pool(None, None, saved, depth)
