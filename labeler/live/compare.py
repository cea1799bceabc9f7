"""Comparing runs: several runs' reports, a paired comparison, uploads evaluated or pooled."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from goldset.eval.compare import compare_runs
from goldset.eval.metrics import DEFAULT_METRICS
from goldset.eval.readers import Golden, Run
from goldset.eval.report import build_report
from goldset.labeler.live.downloads import saved_uploads
from goldset.labeler.live.figures import BOOTSTRAP, SEED, report_table
from goldset.labeler.live.formats import FIGURE_COLUMNS, JUDGED
from goldset.labeler.live.project import CUTOFF
from goldset.labeler.store import Store

__all__ = ["compare_pair", "evaluate_runs", "holes_preview", "queue_holes"]

_EMPTY_REPORT = {"queries": {"answerable": 0}, "metrics": {}, "slices": {}}  # a table's columns


def evaluate_runs(
    golden: Golden,
    runs: Sequence[Run],
    bootstrap: int = BOOTSTRAP,
    seed: int = SEED,
    keep_order: bool = False,
) -> tuple[pd.DataFrame, dict[str, dict]]:
    """Each run against the golden set: one table (a :func:`report_table` per run, with a
    ``run`` column) and the reports by run name. ``keep_order``: rank each run in its own
    order (its file's lines, the project's stored lists) instead of by score (as
    ``goldset eval --keep-order``)."""
    reports = {}
    for run in runs:
        report = build_report(
            golden, run, DEFAULT_METRICS, bootstrap=bootstrap, seed=seed, keep_order=keep_order
        )
        report.pop("per_query")
        reports[run.name] = report
    tables = [report_table(report).assign(run=name) for name, report in reports.items()]
    table = pd.concat(tables, ignore_index=True) if tables else report_table(_EMPTY_REPORT)
    return table[["run", *FIGURE_COLUMNS, JUDGED]], reports


def compare_pair(
    golden: Golden,
    baseline: Run,
    candidate: Run,
    bootstrap: int = BOOTSTRAP,
    seed: int = SEED,
    keep_order: bool = False,
) -> dict:
    """The paired comparison of two runs, as ``goldset compare --json`` prints it
    (``keep_order`` as in :func:`evaluate_runs`)."""
    return compare_runs(
        golden,
        baseline,
        candidate,
        DEFAULT_METRICS,
        bootstrap=bootstrap,
        seed=seed,
        keep_order=keep_order,
    )


def holes_preview(store: Store, file_name: str, data: bytes, depth: int = CUTOFF) -> dict:
    """What :func:`queue_holes` would do, nothing written: the documents it adds, over
    how many queries, the done queries it gives holes to judge and those already exact for
    the run (see :meth:`Store.pool_preview`)."""
    with saved_uploads((file_name, data)) as saved:
        return store.pool_preview(saved, depth)


def queue_holes(store: Store, file_name: str, data: bytes, depth: int = CUTOFF) -> dict:
    """Add an uploaded run's unjudged top ``depth`` docs as work for the annotators, through
    the store's pooling (judged docs are reused; only docs not yet in the pool are queued;
    a done query keeps its place in the golden set while its holes wait). An admin's action.
    Returns the pooling counts, with ``new_work`` and ``already_exact`` of
    :func:`holes_preview` read just before."""
    with saved_uploads((file_name, data)) as saved:
        preview = store.pool_preview(saved, depth)
        counts = store.pool(None, None, saved, depth)
    return {**counts, "new_work": preview["new_work"], "already_exact": preview["already_exact"]}
