"""Pooling several systems' runs into one set of candidates."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eval.readers import InputError
from labeler import golden
from labeler.importing import (
    Task,
)
from labeler.pooling import (
    PooledRun,
    fuse,
    fusion_scores,
    line_of_doc,
    read_corpus,
    read_pooled_run,
    read_queries,
)
from labeler.store.connection import _chunks, _marks
from labeler.store.imports import Imports
from labeler.store.log import IMPORT_RUN


class Pool(Imports):
    """Pooling several systems' runs into one set of candidates."""

    def pool(
        self,
        corpus: str | Path | None,
        queries: str | Path | None,
        runs: Sequence[str | Path],
        depth: int,
    ) -> dict:
        """Pool several systems' TREC runs over a BEIR corpus and queries file, to depth ``depth``.

        Each run's top ``depth`` per query (trec_eval order: score desc, doc_id desc) is added
        to the query's candidates, deduplicated, with provenance (run -> rank); candidates are
        shown in reciprocal-rank-fused order so no system is favoured. Pooling a new run later
        adds only docs not yet in the pool; judgements are keyed by (query, doc) and reused,
        and queries the new run reopens go back to the queue. The whole corpus is stored (for
        full-text search); queries of the file not answered by any run get no candidates.
        Without ``corpus`` or ``queries``, the documents and queries already in the project
        are used: ``pool(None, None, [new_run], 10)`` adds a new system's unjudged top 10 as
        work. All-or-nothing, like imports. Returns counts and the run names.
        """
        corpus_docs = {doc.doc_id: doc for doc in read_corpus(corpus)} if corpus else {}
        pool_queries = read_queries(queries) if queries else []
        pooled = [read_pooled_run(path, depth) for path in runs]
        names = [run.name for run in pooled]
        if len(set(names)) != len(names) or IMPORT_RUN in names:
            raise ValueError(f"run names must be distinct and not {IMPORT_RUN!r}: {names}")
        documents = {
            doc.doc_id: (
                doc.line,
                "",
                {"title": doc.title, "text": doc.text, "metadata": doc.metadata},
            )
            for doc in corpus_docs.values()
        }
        # The bulk of the work, the corpus and the pools of new queries under new runs, is
        # staged in short transactions (invisible: no query, no run reaches it yet); the one
        # publishing transaction adds the queries and runs, and the pools of known queries.
        with self._import_lock(), self._batch(str(corpus or runs[0])) as batch, self._staging():
            new_documents, fill_ins = self._new_documents(documents, str(corpus))
            self._stage_documents(new_documents, batch)
            new_queries = self._new_pool_queries(pool_queries, str(queries))
            counts = self._stage_queries(
                [(t.query_id, t.query, t.slice, t.metadata, t.content_hash) for t in new_queries],
                str(queries),
            )
            corpus_name = f"the corpus {corpus}" if corpus else "the project"
            known_queries = {q.query_id for q in pool_queries} | set(
                self._content_hashes([q for run in pooled for q in run.rankings])
            )
            self._check_pooled_docs(pooled, known_queries, corpus_name)
            fresh = {task.query_id for task in new_queries}
            new_runs = {run.name for run in pooled} - {
                row[0] for row in self.conn.execute("SELECT name FROM runs")
            }
            staged, pooled_fresh = self._stage_fresh_pools(pooled, fresh, new_runs, batch)
            with self._writing():
                self._register_runs(pooled)
                for doc_id, (title, text) in fill_ins.items():
                    self._rewrite_document(doc_id, title, text)
                self._publish_queries()
                self._add_counts(counts)
                added, touched = self._add_pool_ranks(pooled, known_queries, fresh, new_runs)
                for query_id in touched:
                    self._reorder_candidates(query_id)
                    self._refresh(query_id)
                self._publish(batch)
        added += staged
        queries_added = len(new_queries)
        documents_added = len(new_documents)
        answered = {q for run in pooled for q in run.rankings}
        return {
            "runs": names,
            "queries_added": queries_added,
            "documents_added": documents_added,
            "candidates_added": added,
            "queries_touched": len(touched | pooled_fresh),
            "run_queries_ignored": len(answered - known_queries),
        }

    def _register_runs(self, pooled: Sequence[PooledRun]) -> None:
        for run in pooled:
            row = self.conn.execute(
                "SELECT sha256 FROM runs WHERE name = ?", (run.name,)
            ).fetchone()
            if row and row[0] != run.sha256:
                problem = f"a different run named {run.name!r} is already pooled: rename the file"
                raise InputError(run.path, None, None, problem)
            self.conn.execute(
                "INSERT INTO runs (name, path, sha256, depth, pooled_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET depth = max(depth, excluded.depth)",
                (run.name, run.path, run.sha256, run.depth, golden.now()),
            )

    def _new_pool_queries(self, pool_queries: Sequence, source: str) -> list[Task]:
        """The queries of a queries file not yet in the project; a known query_id with other
        content is an error naming its line."""
        tasks = [Task(q.query_id, q.query, q.slice, q.metadata, (), q.line) for q in pool_queries]
        known = self._content_hashes([task.query_id for task in tasks])
        for task in tasks:
            if task.query_id in known and known[task.query_id] != task.content_hash:
                problem = (
                    f"query {task.query_id!r} is already in the database with different content"
                )
                raise InputError(source, task.line, "_id", problem)
        return [t for t in tasks if t.query_id not in known]

    def _stage_fresh_pools(
        self, pooled: Sequence[PooledRun], fresh: set[str], new_runs: set[str], batch: int
    ) -> tuple[int, set[str]]:
        """Stage, in short transactions, the candidates of the new queries (``fresh``) in
        fused order over every pooled run, and their ranks under the runs not yet pooled
        (``new_runs``). Nothing reaches them before the publishing transaction adds their
        queries and runs; returns how many candidates were staged, and for which queries."""
        rankings: dict[str, dict[str, list[str]]] = {}
        for run in sorted(pooled, key=lambda run: run.name):  # as _context orders them
            for query_id, ranking in run.rankings.items():
                if query_id in fresh:
                    rankings.setdefault(query_id, {})[run.name] = [doc for doc, _ in ranking]
        candidates = []
        for query_id, runs in rankings.items():
            scores = fusion_scores(runs)
            candidates += [
                (query_id, doc_id, position, scores[doc_id], None)
                for position, doc_id in enumerate(fuse(runs), start=1)
            ]
        ranks = [
            (query_id, run.name, rank, doc_id, score)
            for run in pooled
            if run.name in new_runs
            for query_id, ranking in run.rankings.items()
            if query_id in fresh
            for rank, (doc_id, score) in enumerate(ranking, start=1)
        ]
        self._stage_candidates(candidates, batch)
        self._stage_ranks(ranks)
        return len(candidates), set(rankings)

    def _check_pooled_docs(
        self, pooled: Sequence[PooledRun], known_queries: set[str], corpus: str
    ) -> None:
        for run in pooled:
            doc_ids = {
                d for q, ranking in run.rankings.items() if q in known_queries for d, _ in ranking
            }
            stored = set()
            for chunk in _chunks(list(doc_ids)):
                stored.update(
                    row[0]
                    for row in self.conn.execute(
                        f"SELECT doc_id FROM documents WHERE doc_id IN ({_marks(chunk)})", chunk
                    )
                )
            missing = doc_ids - stored
            if missing:
                doc_id = min(missing)
                query_id = next(q for q, r in run.rankings.items() if doc_id in dict(r))
                line = line_of_doc(run.path, query_id, doc_id)
                problem = f"doc {doc_id!r} (query {query_id!r}) is not in {corpus}"
                raise InputError(run.path, line, "docno", problem)

    def _add_pool_ranks(
        self,
        pooled: Sequence[PooledRun],
        known_queries: set[str],
        fresh: set[str],
        new_runs: set[str],
    ) -> tuple[int, set[str]]:
        """Store provenance, add new (query, doc) candidates; return (added, queries touched).
        A new query's ranks under a new run are staged already (:meth:`_stage_fresh_pools`)."""
        touched: set[str] = set()
        added = 0
        for run in pooled:
            for query_id, ranking in run.rankings.items():
                if query_id not in known_queries or (query_id in fresh and run.name in new_runs):
                    continue
                rows = [
                    (query_id, run.name, rank, doc_id, score)
                    for rank, (doc_id, score) in enumerate(ranking, start=1)
                ]
                cursor = self.conn.executemany(
                    "INSERT OR IGNORE INTO pool_ranks (query_id, run, rank, doc_id, score) "
                    "VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
                if cursor.rowcount:
                    touched.add(query_id)
                cursor = self.conn.executemany(
                    "INSERT OR IGNORE INTO candidates (query_id, doc_id, position) "
                    "VALUES (?, ?, 0)",
                    [(query_id, doc_id) for doc_id, _ in ranking],
                )
                added += cursor.rowcount
        return added, touched

    def _reorder_candidates(self, query_id: str) -> None:
        """Display positions and scores of a pooled query: reciprocal-rank fusion of its runs."""
        rankings = self._context(query_id).rankings
        scores = fusion_scores(rankings)
        self.conn.executemany(
            "UPDATE candidates SET position = ?, score = ? WHERE query_id = ? AND doc_id = ?",
            [
                (position, scores[doc_id], query_id, doc_id)
                for position, doc_id in enumerate(fuse(rankings), start=1)
            ],
        )

    def add_corpus(self, path: str | Path) -> int:
        """Add a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``) to the project's
        documents, searchable from the label page; returns how many were new. A known doc
        keeps its text (a different one is an error naming the line). All-or-nothing."""
        return self.pool(path, None, [], depth=1)["documents_added"]
