"""The golden set as records, JSONL and TREC qrels."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from labeler import golden
from labeler.golden import QueryContext
from labeler.store.connection import CHUNK
from labeler.store.states import States


class Export(States):
    """The golden set as records, JSONL and TREC qrels."""

    def golden_records(self) -> list[dict]:
        """The golden set: one dict per query, in queue order, as DESIGN.md's golden-set JSONL.

        Every query is there: done, skipped and unanswerable ones, and pending ones (status
        ``pending``, with whatever was judged so far). Unjudged docs are absent, never 0.
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
                ids = [query["query_id"] for query in queries]
                positions = self._positions(ids)
                states = self._states(ids)
                decisions = self._decisions(ids)
                for query in queries:
                    query["metadata"] = json.loads(query["metadata"])
                    context = QueryContext(
                        {},
                        positions.get(query["query_id"], {}),
                        settings["rel_threshold"],
                        settings["mode"],
                    )
                    yield golden.golden_record(
                        query,
                        states.get(query["query_id"], {}),
                        context,
                        decisions.get(query["query_id"]),
                    )
                last_position = queries[-1]["position"]

    def write_jsonl(self, path: str | Path) -> int:
        """Export the golden set as JSONL (see :meth:`golden_records`); returns the query count."""
        return golden.write_jsonl(self.iter_golden_records(), path)

    def write_qrels(self, path: str | Path) -> int:
        """Export TREC qrels of the scored queries (see :func:`labeler.golden.write_qrels`);
        returns the line count."""
        return golden.write_qrels(self.iter_golden_records(), path)
