"""The golden set as records, JSONL and TREC qrels."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from pathlib import Path

from goldset.eval import validation
from goldset.eval.errors import InputError
from goldset.labeler import golden
from goldset.labeler.golden import QueryContext
from goldset.labeler.store.connection import CHUNK, ProjectError, qmarks
from goldset.labeler.store.corpus import POOLED_RUN
from goldset.labeler.store.log import IMPORT_RUN
from goldset.labeler.store.states import States


class Export(States):
    """The golden set as records, JSONL and TREC qrels."""

    def golden_records(self) -> list[dict]:
        """The golden set: one dict per query, in queue order (the golden-set JSONL, see
        docs/formats.md).

        Every query is there: done, skipped and unanswerable ones, and pending ones (status
        ``pending``, with whatever was judged so far). Unjudged docs are absent, never 0. The
        golden grades, status and mode are the golden projection's (see :meth:`_refresh`).
        """
        return list(self.iter_golden_records())

    def iter_golden_records(self) -> Iterator[dict]:
        """:meth:`golden_records` as a generator, reading the database in chunks of queries."""
        with self._reading():
            settings = self.settings()
            last_position = 0
            while True:
                queries = self._rows(
                    "SELECT query_id, query, slice, metadata, position FROM queries "
                    "WHERE position > ? ORDER BY position LIMIT ?",
                    (last_position, CHUNK),
                )
                if not queries:
                    return
                yield from self._golden_records(queries, settings)
                last_position = queries[-1]["position"]

    def golden_records_of(self, query_ids: Sequence[str]) -> list[dict]:
        """The :meth:`golden_records` of ``query_ids`` only (unknown ids are left out), in
        queue order within each chunk of ids: what changed, read without reading the rest."""
        records: list[dict] = []
        with self._reading():
            settings = self.settings()
            for start in range(0, len(query_ids), CHUNK):
                chunk = list(query_ids[start : start + CHUNK])
                queries = self._rows(
                    "SELECT query_id, query, slice, metadata, position FROM queries "
                    f"WHERE query_id IN ({qmarks(chunk)}) ORDER BY position",
                    chunk,
                )
                records += self._golden_records(queries, settings)
        return records

    def _golden_records(self, queries: list[dict], settings: dict) -> Iterator[dict]:
        """The golden record of each of ``queries`` (rows of the queries table)."""
        ids = [query["query_id"] for query in queries]
        positions = self._positions(ids)
        rankings = self._rankings(ids)
        states = self._states(ids)
        labels = self._golden(ids)
        decisions = self._decisions(ids)
        for query in queries:
            query["metadata"] = json.loads(query["metadata"])
            context = QueryContext(
                rankings.get(query["query_id"], {}),
                positions.get(query["query_id"], {}),
                settings["rel_threshold"],
                settings["mode"],
            )
            yield golden.export_record(
                query,
                states.get(query["query_id"], {}),
                context,
                labels[query["query_id"]],
                decisions.get(query["query_id"]),
            )

    def _rankings(self, query_ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        """Each query's rankings as :meth:`_context` gives them: the imported list, then
        each pooled run (by name), docs in rank order."""
        marks = qmarks(query_ids)
        rows = self.conn.execute(
            "SELECT query_id, ?, imported_rank, doc_id FROM candidates "
            f"WHERE query_id IN ({marks}) AND imported_rank IS NOT NULL "
            "UNION ALL SELECT query_id, run, rank, doc_id FROM pool_ranks "
            f"WHERE query_id IN ({marks}) AND {POOLED_RUN}",
            [IMPORT_RUN, *query_ids, *query_ids],
        ).fetchall()
        rows.sort(key=lambda row: (row[0], row[1] != IMPORT_RUN, row[1], row[2]))
        rankings: dict[str, dict[str, list[str]]] = {}
        for query_id, run, _, doc_id in rows:
            rankings.setdefault(query_id, {}).setdefault(run, []).append(doc_id)
        return rankings

    def write_jsonl(self, path: str | Path) -> int:
        """Export the golden set as JSONL (see :meth:`golden_records`); returns the query count."""
        self.check_export_path(path)
        # Closed here, not whenever it is collected: after the store, its clean-up would fail.
        with closing(self.iter_golden_records()) as records:
            return golden.write_jsonl(records, path)

    def write_qrels(self, path: str | Path) -> int:
        """Export TREC qrels of the scored queries (see :func:`goldset.labeler.golden.write_qrels`);
        returns the line count.

        An id that TREC cannot hold (one with whitespace, which only a project made before
        ids were checked for it may have) refuses the whole export with an
        :class:`InputError` naming every such id, and leaves ``path`` as it was.
        """
        self.check_export_path(path)
        with closing(self.iter_golden_records()) as records:
            return golden.write_qrels(_checked_for_qrels(records, str(self.path)), path)

    def check_export_path(self, path: str | Path) -> None:
        """Refuse an export aimed at the project's own file (or its journal): the export
        replaces its target whole, and would replace the project with its golden set."""
        project = self.path.resolve()
        own = {
            project,
            *(project.with_name(project.name + end) for end in ("-wal", "-shm", "-journal")),
        }
        if Path(path).resolve() in own:
            raise ProjectError(f"{path} is the project itself: export to another file")


SHOWN_IDS = 5  # ids named in the refusal of a qrels export; the rest are counted


def _checked_for_qrels(records: Iterable[dict], source: str) -> Iterator[dict]:
    """The golden records, without the scored ones (done, answerable: those that
    :func:`goldset.labeler.golden.write_qrels` writes) holding an id that TREC qrels cannot hold;
    once all are read, an :class:`InputError` naming those ids if there were any. Raised from the
    writer's loop, it leaves the file being replaced as it was."""
    unwritable: list[str] = []
    for record in records:
        if record["status"] == "done" and record["answerable"]:
            named = [f"query_id {record['query_id']!r}"] if _unfit(record["query_id"]) else []
            named += [
                f"doc_id {doc_id!r} of query {record['query_id']!r}"
                for doc_id in record["judgments"]
                if _unfit(doc_id)
            ]
            if named:
                unwritable += named
                continue
        yield record
    if unwritable:
        more = len(unwritable) - SHOWN_IDS
        listed = ", ".join(unwritable[:SHOWN_IDS]) + (f" and {more} more" if more > 0 else "")
        problem = (
            "cannot be exported as TREC qrels, whose fields whitespace separates: ids holding "
            f"whitespace ({len(unwritable)}): {listed}; export --format jsonl, which keeps them"
        )
        raise InputError(source, None, None, problem)


def _unfit(an_id: str) -> bool:
    """Whether TREC cannot hold ``an_id`` (a project made before ids were checked for
    whitespace may hold one: see eval.validation)."""
    return not an_id or validation.id_character(an_id) is not None
