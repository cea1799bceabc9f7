"""The store as eval inputs: the project's golden set and the runs it holds, at a
moment (:class:`ProjectState`) that caches key on. The one adapter from the store to eval."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from goldset.eval.readers import Golden, Run, run_from_frame
from goldset.labeler.store import Store

__all__ = [
    "CANDIDATES",
    "CUTOFF",
    "golden_at",
    "golden_set",
    "KeptGolden",
    "project_run",
    "project_runs",
    "ProjectState",
    "run_at",
]

CUTOFF = 10  # the k of MRR@k, hit@k, miss@k and judged@k on the dashboard
CANDIDATES = "candidates"  # the run name of the project's own candidate lists (as `goldset eval`)


@dataclass(frozen=True)
class ProjectState:
    """A project database at one moment: its path and the store's dashboard marks.

    Figures computed from a state hold until the marks change, so caches key on it.
    """

    path: str
    marks: tuple[tuple[str, object], ...]

    @classmethod
    def of(cls, store: Store) -> ProjectState:
        """The state of ``store``'s database now (one cheap SQL statement)."""
        return cls(str(store.path), tuple(store.dashboard_marks().items()))

    def candidates(self) -> ProjectState:
        """The part of the state that the runs held in the project depend on: the queries,
        the pooled runs and the settings, not the labels."""
        kept = ("queries", "runs", "settings")
        return ProjectState(self.path, tuple((k, v) for k, v in self.marks if k in kept))


class KeptGolden(Golden):
    """A golden set that the app keeps and reads many times: each query column is converted
    from its frame once, instead of at every figure (with the positions of a ranking's query
    ids, which every golden set keeps): converted at every figure, they were a large part of
    a dashboard refresh on a large project (measured: bench/README.md, "Figures behind design
    choices")."""

    def query_column(self, name: str) -> np.ndarray:
        """:meth:`Golden.query_column`, converted on first use."""
        columns = self.__dict__.setdefault("_kept_columns", {})
        if name not in columns:
            columns[name] = super().query_column(name)
        return columns[name]


def golden_set(store: Store) -> Golden:
    """The project's golden set as eval reads it (the same as ``goldset eval --db``)."""
    queries, judgments = store.golden_frames()
    return KeptGolden(queries, judgments)


def project_run(store: Store, run: str | None = None, depth: int | None = CUTOFF + 1) -> Run:
    """A run held in the project: its candidate lists (``None``) or a pooled run by name.

    By default only each query's top ``CUTOFF + 1`` is read: the @10 metrics, judged@10 and
    the ties at the cutoff depend on nothing below, so the figures equal ``goldset eval --db``
    (with ``--run`` for a pooled run). ``depth=None`` reads every rank (what the CLI evaluates).
    """
    frame = store.candidate_run_frame(run) if depth is None else store.top_ranked_frame(run, depth)
    return run_from_frame(frame, name=run or CANDIDATES, source=str(store.path))


def project_runs(store: Store) -> list[str | None]:
    """The runs a project holds: ``None`` (its candidate lists), then the pooled runs."""
    return [None, *store.pooled_run_names()]


def golden_at(state: ProjectState) -> Golden:
    """:func:`golden_set` of the project at ``state`` (a pure function of it, to cache)."""
    with Store(state.path) as store:
        return golden_set(store)


def run_at(state: ProjectState, run: str | None = None) -> Run:
    """:func:`project_run` of the project at ``state`` (key it on ``state.candidates()``)."""
    with Store(state.path) as store:
        return project_run(store, run)
