"""The dashboard's golden set and the run's ranking kept up to date label by label: after new
labels only the queries they touch are read from the store and ranked again, and the ranking
and the golden set's version of the whole set are spliced (:mod:`goldset.eval.splice`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from goldset.eval.columns import as_strings, filter_rows, lookup
from goldset.eval.metrics import DEFAULT_METRICS, Ranking, rank_run
from goldset.eval.readers import Golden, Run, golden_from_records, version_of
from goldset.eval.splice import spliced_ranking, updated_digests
from goldset.labeler.live.project import KeptGolden, ProjectState, golden_set
from goldset.labeler.store import Store


@dataclass(frozen=True)
class Labelled:
    """A project's golden set at one state, a run ranked on it for the dashboard's metrics
    (eval's default metrics) and the golden set's version."""

    golden: Golden
    ranking: Ranking
    version: str
    digests: tuple[int, int]  # the golden set's Golden.digests


class LiveGolden:
    """A project's golden set and a run's ranking on it (:class:`Labelled`) at the last state
    seen.

    :meth:`update` reads the whole golden set and ranks the whole run once (and again when
    the queries, runs or settings change); afterwards only the records of the queries with a
    newer event or decision (:meth:`Store.labels_changed_since`), which replace theirs, and
    only those queries are ranked again. The result equals :func:`golden_set` of the whole
    project, eval's ranking of the run on it and its version (the tests hold them equal).
    """

    def __init__(self) -> None:
        self._seen: tuple[ProjectState, Run, Labelled] | None = None
        self.changed: list[str] | None = None  # queries read by the last update (None: all)

    def update(self, store: Store, state: ProjectState, run: Run) -> Labelled:
        """The golden set of ``store`` (at ``state`` or later) and ``run`` ranked on it."""
        seen = self._seen
        if seen is None or seen[0].candidates() != state.candidates() or seen[1] is not run:
            golden = golden_set(store)
            digests = golden.digests
            ranking = rank_run(golden, run, DEFAULT_METRICS)
            labelled, self.changed = Labelled(golden, ranking, version_of(digests), digests), None
        else:
            marks = dict(seen[0].marks)
            self.changed = store.labels_changed_since(marks["events"], marks["adjudications"])
            labelled = seen[2]
            if self.changed:
                labelled = _patched(labelled, store, run, self.changed)
        self._seen = (state, run, labelled)
        return labelled


def _patched(labelled: Labelled, store: Store, run: Run, changed: list[str]) -> Labelled:
    """``labelled`` with the records of ``changed`` read anew and those queries ranked again."""
    golden = labelled.golden
    fresh = golden_from_records(store.golden_records_of(changed), source=str(store.path))
    rows = fresh.queries.set_index("query_id")
    queries = golden.queries.copy()
    at = queries["query_id"].isin(rows.index)
    columns = [name for name in queries.columns if name != "query_id"]
    queries.loc[at, columns] = rows.loc[queries.loc[at, "query_id"], columns].to_numpy()
    old = golden.judgments
    judged_before = old["query_id"].isin(rows.index)
    judgments = pd.concat(
        [old[~judged_before], fresh.judgments.astype(old.dtypes.to_dict())], ignore_index=True
    )
    patched = KeptGolden(queries.astype(golden.queries.dtypes.to_dict()), judgments)
    before = Golden(golden.queries[at], old[judged_before])  # the same queries' old labels
    digests = updated_digests(labelled.digests, before, fresh)
    ranked = rank_run(fresh, _only(run, rows.index), DEFAULT_METRICS)  # the changed queries
    ranking = spliced_ranking(labelled.ranking, ranked, patched.scored_query_ids())
    return Labelled(patched, ranking, version_of(digests), digests)


def _only(run: Run, query_ids: pd.Index) -> Run:
    """``run`` cut to the results of ``query_ids``, in the run's order (its arrays filtered)."""
    wanted = np.flatnonzero(
        lookup(as_strings(run.query_ids), query_ids.to_numpy(dtype=object)) >= 0
    )
    renumbered = np.full(len(run.query_ids), -1, dtype=np.int64)
    renumbered[wanted] = np.arange(len(wanted))
    rows = renumbered[run.query_index] >= 0
    return Run(
        query_ids=run.query_ids[wanted],
        query_index=renumbered[run.query_index[rows]],
        doc_ids=filter_rows(run.doc_ids, rows),
        scores=run.scores[rows],
        name=run.name,
    )


JUDGEMENTS = ("judge", "attach")  # the events that count as judgements made (undone ones too)


class LiveWork:
    """The dashboard's work figures kept up to date event by event: the active seconds of
    every action, the docs read and seconds of every completed pass and the judgements per
    hour and annotator. :meth:`update` reads the whole log once (and again when the queries,
    runs or settings change); afterwards only the newer events, and the passes of the
    queries they touch. :attr:`seconds`, :attr:`depths` and :meth:`per_hour` equal
    :meth:`Store.active_seconds`, :meth:`Store.completed_depths` and
    :meth:`Store.judgements_per_hour` (the tests hold them equal).
    """

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, candidates: ProjectState | None) -> None:
        self._candidates = candidates
        self._last: int | None = None  # the last event read
        self.seconds = pd.DataFrame()  # annotator, action, seconds: a row per event, log order
        self._depths = pd.DataFrame()  # query_id, annotator, docs_read, seconds
        hours = pd.MultiIndex.from_arrays([[], []], names=["hour", "annotator"])
        self._hours = pd.Series([], index=hours, dtype="int64")  # judgements per hour, annotator

    @property
    def depths(self) -> pd.DataFrame:
        """Every completed pass: DataFrame(annotator, docs_read, seconds)."""
        return self._depths[["annotator", "docs_read", "seconds"]]

    def update(self, store: Store, state: ProjectState) -> None:
        """Bring the figures up to the events of ``store`` now (``state`` or later)."""
        if self._candidates != state.candidates():
            self._reset(state.candidates())
        events = store.events_after(self._last)
        if self._last is None:
            self._depths = store.completed_depths_of()
        elif len(events):
            touched = list(dict.fromkeys(events["query_id"]))
            kept = self._depths[~self._depths["query_id"].isin(touched)]
            self._depths = pd.concat([kept, store.completed_depths_of(touched)], ignore_index=True)
        if self._last is None or len(events):
            self.seconds = pd.concat(
                [self.seconds, events[["annotator", "action", "seconds"]]], ignore_index=True
            ).astype({"seconds": "float64"})
            judged = events[events["action"].isin(JUDGEMENTS)]
            counts = judged.groupby(["hour", "annotator"]).size()
            self._hours = self._hours.add(counts, fill_value=0).astype("int64")
            self._last = int(events["id"].max()) if len(events) else (self._last or 0)

    def per_hour(self, since: str = "") -> pd.DataFrame:
        """Judgements per UTC hour and annotator from the hour ``since`` on, as
        :meth:`Store.judgements_per_hour`: DataFrame(hour, annotator, judgements)."""
        counts = self._hours[self._hours.index.get_level_values(0) >= since]
        frame = counts.rename("judgements").rename_axis(["hour", "annotator"]).reset_index()
        return frame.sort_values(["hour", "annotator"], ignore_index=True)
