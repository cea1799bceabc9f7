"""Queries, candidates and documents: reading them and full-text search."""

from __future__ import annotations

import json
import re

from goldset.labeler.store.connection import Connection

# Documents of an import batch not yet published are not found by search.
UNPUBLISHED_HIDDEN = (
    "batch IS NULL OR batch IN (SELECT id FROM import_batches WHERE published_at IS NOT NULL)"
)

# Pool ranks are written before their run is registered (see Pool.pool): a rank counts once
# its run does.
POOLED_RUN = "run IN (SELECT name FROM runs)"


def published(column: str = "query_id") -> str:
    """SQL true for a row whose query (``column``) is published: an import writes the labels,
    states, golden judgments and candidates of its queries before it publishes them, so a
    reader that does not reach those rows through the queries table filters with this. The
    first test is constant (evaluated once): with no import under way no row is looked up."""
    return (
        "(NOT EXISTS (SELECT 1 FROM import_batches WHERE published_at IS NULL) "
        f"OR {column} IN (SELECT query_id FROM queries))"
    )


class Corpus(Connection):
    """Queries, candidates and documents: reading them and full-text search."""

    def has_queries(self) -> bool:
        """True when at least one query has been imported or pooled."""
        return bool(self._value("SELECT EXISTS (SELECT 1 FROM queries)"))

    def query(self, query_id: str) -> dict:
        """A query: query_id, query, slice, metadata (dict), position, status, answerable and
        the number of candidates. Raises ValueError for an unknown id."""
        rows = self._rows(
            "SELECT query_id, query, slice, metadata, position, status, answerable, "
            "(SELECT count(*) FROM candidates c WHERE c.query_id = q.query_id) AS candidates "
            "FROM queries q WHERE query_id = ?",
            (query_id,),
        )
        if not rows:
            raise ValueError(f"unknown query {query_id!r}")
        row = rows[0]
        return {
            **row,
            "metadata": json.loads(row["metadata"]),
            "answerable": bool(row["answerable"]),
        }

    def search(self, text: str, limit: int = 20) -> list[dict]:
        """Full-text search over documents (FTS5, porter stemming), best first by bm25: doc_id,
        title, text. A document matches when it holds ANY of the words of ``text``, each as a
        prefix (``auth`` finds ``authenticate``); more and rarer words rank higher. Words are
        runs of letters and digits, each quoted for FTS5, so punctuation and FTS operators
        (``"``, ``-``, ``AND``, ``*``) in ``text`` are taken literally, never as syntax."""
        words = dict.fromkeys(re.findall(r"[^\W_]+", text.lower()))
        if not words:
            return []
        match = " OR ".join(f'"{word}"*' for word in words)
        with self._lock:
            return list(
                self.db["documents"].search(
                    match,
                    columns=["doc_id", "title", "text"],
                    limit=limit,
                    quote=False,
                    where=UNPUBLISHED_HIDDEN,
                )
            )

    def document(self, doc_id: str) -> dict:
        """One document: doc_id, title, text, metadata. Raises ValueError when unknown."""
        rows = self._rows(
            "SELECT doc_id, title, text, metadata FROM documents WHERE doc_id = ?", (doc_id,)
        )
        if not rows:
            raise ValueError(f"unknown document {doc_id!r}")
        return {**rows[0], "metadata": json.loads(rows[0]["metadata"] or "{}")}
