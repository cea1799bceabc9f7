"""Keeping the dashboard fresh: figures recomputed in the background, paced by their cost,
and kept in the project database so that a server start shows the last ones at once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from goldset.eval.readers import Run
from goldset.labeler.live.dashboard import Dashboard, coverage, snapshot, throughput
from goldset.labeler.live.incremental import LiveGolden, LiveWork
from goldset.labeler.live.kept import figures_from_json, figures_json
from goldset.labeler.live.planning import DEFAULT_RATE, TARGET_HALF_WIDTH, cost_summary
from goldset.labeler.live.project import ProjectState, project_run
from goldset.labeler.store import Store, is_busy

__all__ = ["dashboard_refresher", "PACE", "QUICK", "REFRESH_SECONDS", "Refresher"]

REFRESH_SECONDS = 5  # the dashboard reruns this often, showing the newest figures
PACE = 4.0  # after a computation of t seconds, figures wait PACE x t before the next one
QUICK = 0.5  # seconds: computations quicker than this are made while the page waits


class Refresher:
    """The newest figures of a project, computed again only when the project changed.

    ``compute(state)`` makes the figures of a :class:`ProjectState`. :meth:`get` returns the
    figures already made while the state is unchanged, and also while a changed state comes
    less than ``pace`` × t seconds after the end of the last computation (of t seconds): slow
    figures take at most a share of a core, however often they are asked for. Otherwise it
    computes them again: right away when the last computation took under ``quick`` seconds
    (the caller gets the new figures), else in a background thread while the previous
    figures are served, so that a page showing them never waits for a slow computation.
    ``kept`` (state, figures, seconds taken) from an earlier server life are served from the
    start, and ``keep(state, figures, seconds)`` is called after every computation, to keep
    them for the next.
    One computation at a time; safe to share between threads.
    """

    def __init__(
        self,
        compute,
        *,
        pace: float = PACE,
        quick: float = QUICK,
        clock=time.monotonic,
        kept: tuple[ProjectState, object, float] | None = None,
        keep: Callable[[ProjectState, object, float], None] | None = None,
    ):
        self._compute, self._pace, self._quick, self._clock = compute, pace, quick, clock
        self._keep = keep
        # (state, figures, seconds taken, next due time). Kept figures (an earlier server
        # life's) are served at once, and their cost says how a newer state is computed.
        self._latest: tuple | None = None if kept is None else (*kept, clock())
        self._computing = threading.Lock()
        self._error: BaseException | None = None

    def get(self, state: ProjectState):
        """The figures for ``state``, or the previous ones (see the class docstring)."""
        error, self._error = self._error, None
        if error is not None:  # the last background computation failed: say so once
            raise error
        latest = self._latest
        if latest is not None and (latest[0] == state or self._clock() < latest[3]):
            return latest[1]
        if latest is not None and latest[2] >= self._quick:
            if self._computing.acquire(blocking=False):
                threading.Thread(target=self._in_background, args=(state,), daemon=True).start()
            return latest[1]
        with self._computing:
            if self._latest is latest:  # nobody computed them meanwhile
                self._update(state)
        return self._latest[1]

    def warm_up(self, state: ProjectState) -> None:
        """Compute the figures of ``state`` in the background now (unless a computation runs),
        with no pace after it: a server start serving kept figures readies what the next
        new label's update needs (the run, the golden set) before that label comes."""
        if self._computing.acquire(blocking=False):
            threading.Thread(target=self._in_background, args=(state, False), daemon=True).start()

    def computing(self) -> bool:
        """Whether a computation is under way."""
        return self._computing.locked()

    def current(self, state: ProjectState) -> bool:
        """Whether :meth:`get` serves the figures of ``state`` itself (not earlier ones)."""
        latest = self._latest
        return latest is not None and latest[0] == state

    def _update(self, state: ProjectState, paced: bool = True) -> None:
        started = self._clock()
        figures = self._compute(state)
        finished = self._clock()
        took = finished - started
        self._latest = (state, figures, took, finished + self._pace * took * paced)
        if self._keep is not None:
            self._keep(state, figures, took)

    def _in_background(self, state: ProjectState, paced: bool = True) -> None:
        try:
            self._update(state, paced)
        except Exception as error:  # kept for the next get(), which raises it
            self._error = error
        finally:
            self._computing.release()


def dashboard_refresher(
    path: str,
    run: str | None,
    target: float = TARGET_HALF_WIDTH,
    rate: float = DEFAULT_RATE,
    pace: float = PACE,
    quick: float = QUICK,
) -> Refresher:
    """A :class:`Refresher` of the :class:`Dashboard` of ``run`` in the project at ``path``.

    It keeps the run's top k while the candidates do not change (only imports and pooling
    change them), the golden set and the run's ranking (:class:`LiveGolden`: a new label
    reads and ranks only the queries it touches) and the work figures (:class:`LiveWork`:
    only the newer events are read), so a new label costs eval's report from the ranking
    and the counts only.
    Every computation is kept in the project (:meth:`Store.save_figures`); a new refresher
    (a server start) serves the kept figures at once and computes the current ones in the
    background (:meth:`Refresher.warm_up`), so the next new label is an incremental update.
    """
    view = json.dumps({"run": run, "target": target, "rate": rate})
    held: dict[ProjectState, Run] = {}
    labels, work = LiveGolden(), LiveWork()

    def compute(state: ProjectState) -> Dashboard:
        with Store(path) as store:
            candidates = state.candidates()
            if candidates not in held:
                held.clear()
                held[candidates] = project_run(store, run)
            labelled = labels.update(store, state, held[candidates])
            work.update(store, state)
            status = store.status()
            measured = cost_summary(
                store, rate, seconds=work.seconds, depths=work.depths, status=status
            )
            figures = snapshot(
                labelled.golden,
                held[candidates],
                measured,
                store.eval_history(),
                target=target,
                ranking=labelled.ranking,
                version=labelled.version,
            )
            per_hour = throughput(store, per_hour=work.per_hour)
            return Dashboard(figures, coverage(store), per_hour, status, measured)

    def keep(state: ProjectState, figures: Dashboard, seconds: float) -> None:
        try:
            with Store(path) as store:
                marks = json.dumps(state.marks)
                store.save_figures(view, marks, figures_json(figures), seconds)
        except Exception as error:  # annotators' writes hold the lock: kept next time
            if not is_busy(error):
                raise

    with Store(path) as store:
        now, saved = ProjectState.of(store), store.saved_figures(view)
    kept = _kept(now, saved)
    refresher = Refresher(compute, pace=pace, quick=quick, kept=kept, keep=keep)
    if kept is not None:
        refresher.warm_up(now)
    return refresher


def _kept(now: ProjectState, saved: dict | None) -> tuple[ProjectState, Dashboard, float] | None:
    """The saved figures as (the state they are of, figures, seconds taken); None without
    usable ones (figures that an older goldset kept in another shape are computed again)."""
    if saved is None:
        return None
    try:
        figures = figures_from_json(saved["figures"])
    except (TypeError, KeyError, ValueError):
        return None
    if saved["marks"] == json.dumps(now.marks):
        return now, figures, saved["seconds"]
    earlier = ProjectState(now.path, (("saved", saved["marks"]),))
    return earlier, figures, saved["seconds"]
