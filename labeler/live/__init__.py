"""Live figures for the app: the dashboard, the cost planner, the run comparison and the run
history, each computed by ``eval`` on the store's golden set
(:func:`goldset.eval.report.build_report`,
:func:`goldset.eval.compare.compare_runs`, :mod:`goldset.eval.stats`, :mod:`goldset.eval.cost`,
:mod:`goldset.eval.gate`).
No SQL (the store's bulk frames read the database) and no Streamlit (the pages cache and draw).

The package by page concern, bottom up: ``project`` (the one adapter from the store to eval:
the golden set and the runs a project holds), ``formats`` (how each kind of figure is
written), ``figures`` (tables of one run and of several), ``downloads`` (files in and out),
``planning`` (how many more queries, labelling cost), ``dashboard`` (one snapshot and its
alerts), ``refresher`` (recomputing in the background), ``compare`` (several runs, paired) and
``history`` (the run history: a run's hash and tags, its records and flags). Pages call them
through this module (``live.snapshot(...)``).

A page, in short::

    store = Store("project.db")
    snap = snapshot(golden_set(store), project_run(store), cost_summary(store))
    snap.table.query("slice == 'all'")
"""

from __future__ import annotations

from goldset.labeler.live import (
    compare,
    dashboard,
    downloads,
    figures,
    formats,
    history,
    planning,
    project,
    refresher,
)
from goldset.labeler.live.compare import *  # noqa: F403
from goldset.labeler.live.dashboard import *  # noqa: F403
from goldset.labeler.live.downloads import *  # noqa: F403
from goldset.labeler.live.figures import *  # noqa: F403
from goldset.labeler.live.formats import *  # noqa: F403
from goldset.labeler.live.history import *  # noqa: F403
from goldset.labeler.live.planning import *  # noqa: F403
from goldset.labeler.live.project import *  # noqa: F403
from goldset.labeler.live.refresher import *  # noqa: F403

# The public names are each module's own list: one list, kept beside the definitions.
__all__ = [
    *compare.__all__,
    *dashboard.__all__,
    *downloads.__all__,
    *figures.__all__,
    *formats.__all__,
    *history.__all__,
    *planning.__all__,
    *project.__all__,
    *refresher.__all__,
]
