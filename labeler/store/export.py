"""The golden set as records, JSONL and TREC qrels."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from labeler import golden
from labeler.golden import QueryContext
from labeler.store.connection import CHUNK, _marks
from labeler.store.corpus import POOLED_RUN
from labeler.store.log import IMPORT_RUN
from labeler.store.states import States


class Export(States):
    """The golden set as records, JSONL and TREC qrels."""

    def golden_records(self) -> list[dict]:
        """The golden set: one dict per query, in queue order, as DESIGN.md's golden-set JSONL.

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
                    f"WHERE query_id IN ({_marks(chunk)}) ORDER BY position",
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
            yield golden.golden_record(
                query,
                states.get(query["query_id"], {}),
                context,
                labels[query["query_id"]],
                decisions.get(query["query_id"]),
            )

    def _rankings(self, query_ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        """Each query's rankings as :meth:`_context` gives them: the imported list, then
        each pooled run (by name), docs in rank order."""
        marks = _marks(query_ids)
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
        return golden.write_jsonl(self.iter_golden_records(), path)

    def write_qrels(self, path: str | Path) -> int:
        """Export TREC qrels of the scored queries (see :func:`labeler.golden.write_qrels`);
        returns the line count."""
        return golden.write_qrels(self.iter_golden_records(), path)
