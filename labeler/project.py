"""``goldset.Project``: a project database for Python callers, as the ``goldset`` commands
see it.

Each method opens the project for what it does and closes it again (a read gets a read-only
connection, as the read commands do), so a :class:`Project` holds no connection and may be
kept in a notebook while the app serves the same file::

    project = goldset.Project("project.db", create=True)
    project.configure(mode="first_hit", max_grade=3)
    project.import_tasks("tasks.jsonl")     # or pool runs: project.pool(["bm25.trec"], 10, ...)
    project.progress()                      # queries done / pending / ... per slice
    project.evaluate("dense.trec").summary()
    project.export_golden("golden.jsonl")
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from goldset.eval.api import Comparison, Evaluation, RunInput
from goldset.eval.metrics import DEFAULT_METRICS
from goldset.labeler.store import Store

if TYPE_CHECKING:
    import pandas as pd

    from goldset.eval.readers import Golden, Run


class Project:
    """The goldset project at ``path``. An existing file must be a goldset project (else
    :class:`~goldset.labeler.store.ProjectError`); a missing one is made only with
    ``create=True`` (by its first :meth:`import_tasks`)."""

    def __init__(self, path: str | Path, *, create: bool = False):
        self.path = Path(path)
        self._create = create
        if self.path.exists() or not create:
            Store.open_project(self.path, write=False).close()  # refused here, not later

    def __repr__(self) -> str:
        return f"Project({str(self.path)!r})"

    @contextmanager
    def _store(self, *, write: bool = False) -> Iterator[Store]:
        create = write and self._create and not self.path.exists()
        store = Store.open_project(self.path, write=write, create=create)
        try:
            yield store
        finally:
            store.close()

    def import_tasks(self, tasks: str | Path, corpus: str | Path | None = None) -> dict:
        """Import a tasks file (and a corpus), all or nothing, as ``goldset import``. Returns
        the counts: queries added and unchanged, candidates and documents added."""
        with self._store(write=True) as store:
            return store.import_tasks(tasks, corpus=corpus)

    def pool(
        self,
        runs: Sequence[str | Path] | str | Path,
        depth: int,
        *,
        corpus: str | Path | None = None,
        queries: str | Path | None = None,
    ) -> dict:
        """Pool TREC runs to ``depth`` over a BEIR corpus and queries file, as ``goldset
        pool``: a new run adds only docs not yet in the pool, a done query keeps its labels
        and gets the new run's holes. ``runs`` may be one path. Returns the counts."""
        # One path is one run: a string iterated would be read as a run per character.
        runs = [runs] if isinstance(runs, str | Path) else runs
        with self._store(write=True) as store:
            return store.pool(corpus, queries, runs, depth)

    def configure(
        self,
        *,
        mode: str | None = None,
        depth: int | None = None,
        max_grade: int | None = None,
        rel_threshold: int | None = None,
        by: str = "python",
    ) -> dict:
        """Set the labelling protocol, as ``goldset configure`` (logged with ``by``); a setting
        left None keeps its value. Returns the protocol whole."""
        with self._store(write=True) as store:
            return store.configure(
                mode=mode, depth=depth, max_grade=max_grade, rel_threshold=rel_threshold, by=by
            )

    def status(self) -> dict:
        """What ``goldset status --json`` shows of the project: queries, documents, events,
        annotators, pooled runs and per slice the queries in each state."""
        with self._store() as store:
            return store.status()

    def progress(self) -> pd.DataFrame:
        """One row per slice ("" for none): the queries done, pending, skipped, unanswerable."""
        import pandas as pd

        with self._store() as store:  # the counters alone, not status()'s table counts
            slices = store.progress()
        return pd.DataFrame(slices).T.rename_axis("slice")

    def golden_records(self) -> list[dict]:
        """The golden set as golden-JSONL records, one per query (docs/formats.md)."""
        with self._store() as store:
            return store.golden_records()

    def golden_set(self) -> Golden:
        """The golden set as :func:`goldset.evaluate` reads it."""
        from goldset.eval.readers import golden_from_records

        return golden_from_records(self.golden_records(), source=str(self.path))

    def candidates(self) -> Run:
        """The candidate lists stored in the project, as a run (``goldset eval --db`` with no
        ``--run``)."""
        from goldset.labeler.live.project import project_run

        with self._store() as store:
            return project_run(store, depth=None)

    def evaluate(
        self, run: RunInput | None = None, metrics: Sequence[str] = DEFAULT_METRICS, **options
    ) -> Evaluation:
        """Evaluate ``run`` (the stored candidates when None) on the project's golden set, as
        ``goldset eval --db``; ``options`` as :func:`goldset.evaluate`'s."""
        from goldset.eval.api import evaluate

        run = self.candidates() if run is None else run
        return evaluate(self.golden_set(), run, metrics, **options)

    def compare(
        self,
        baseline: RunInput,
        candidate: RunInput,
        metrics: Sequence[str] = DEFAULT_METRICS,
        **options,
    ) -> Comparison:
        """Compare two runs on the project's golden set, as ``goldset compare --db``."""
        from goldset.eval.api import compare

        return compare(self.golden_set(), baseline, candidate, metrics, **options)

    def export_golden(self, path: str | Path) -> int:
        """Write the golden-set JSONL (every query); returns how many queries it holds."""
        with self._store() as store:
            return store.write_jsonl(path)

    def export_qrels(self, path: str | Path) -> int:
        """Write TREC qrels of the scored queries; returns how many judgements it holds."""
        with self._store() as store:
            return store.write_qrels(path)
