"""The dashboard's golden set and first relevant ranks kept up to date label by label: after
new labels only the queries they touch are read from the store and ranked again."""

from __future__ import annotations

import pandas as pd

from eval.readers import Golden, Run, golden_from_records, run_from_frame
from labeler.live.figures import first_relevant
from labeler.live.project import ProjectState, golden_set
from labeler.store import Store


class LiveGolden:
    """A project's golden set and a run's :func:`first_relevant` ranks at the last state seen.

    :meth:`update` reads the whole golden set once (and again when the queries, runs or
    settings change); afterwards only the records of the queries with a newer event or
    decision (:meth:`Store.labels_changed_since`), which replace theirs, and only those
    queries are ranked again. The result equals :func:`golden_set` and :func:`first_relevant`
    of the whole project (the tests hold them equal).
    """

    def __init__(self) -> None:
        self._seen: tuple[ProjectState, Run, Golden, pd.Series] | None = None
        self.changed: list[str] | None = None  # queries read by the last update (None: all)

    def update(self, store: Store, state: ProjectState, run: Run) -> tuple[Golden, pd.Series]:
        """The golden set of ``store`` (at ``state`` or later) and ``run``'s first ranks."""
        seen = self._seen
        if seen is None or seen[0].candidates() != state.candidates() or seen[1] is not run:
            golden = golden_set(store)
            first, self.changed = first_relevant(golden, run), None
        else:
            marks = dict(seen[0].marks)
            self.changed = store.labels_changed_since(marks["events"], marks["adjudications"])
            golden, first = seen[2], seen[3]
            if self.changed:
                golden, first = _patched(golden, first, store, run, self.changed)
        self._seen = (state, run, golden, first)
        return golden, first


def _patched(
    golden: Golden, first: pd.Series, store: Store, run: Run, changed: list[str]
) -> tuple[Golden, pd.Series]:
    """``golden`` and ``first`` with the records and first ranks of ``changed`` read anew."""
    fresh = golden_from_records(store.golden_records_of(changed), source=str(store.path))
    rows = fresh.queries.set_index("query_id")
    queries = golden.queries.copy()
    at = queries["query_id"].isin(rows.index)
    columns = [name for name in queries.columns if name != "query_id"]
    queries.loc[at, columns] = rows.loc[queries.loc[at, "query_id"], columns].to_numpy()
    old = golden.judgments
    judgments = pd.concat(
        [old[~old["query_id"].isin(rows.index)], fresh.judgments.astype(old.dtypes.to_dict())],
        ignore_index=True,
    )
    patched = Golden(queries.astype(golden.queries.dtypes.to_dict()), judgments)
    ranked = first_relevant(fresh, _only(run, rows.index))  # ranks only the changed queries
    scored = pd.Index(patched.scored_query_ids(), name="query_id")
    kept = first[~first.index.isin(rows.index)]
    return patched, pd.concat([kept, ranked]).reindex(scored)


def _only(run: Run, query_ids: pd.Index) -> Run:
    """``run`` cut to the results of ``query_ids`` (its results frame is built once)."""
    results = run.results
    return run_from_frame(results[results["query_id"].isin(query_ids)], name=run.name)
