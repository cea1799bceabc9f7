"""Pooling several systems' runs into one set of candidates."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from goldset.eval.readers import InputError
from goldset.labeler import golden
from goldset.labeler.golden import QueryContext
from goldset.labeler.importing import (
    Task,
)
from goldset.labeler.pooling import (
    PooledRun,
    corpus_documents,
    fuse,
    line_of_doc,
    read_corpus,
    read_pooled_run,
    read_queries,
    run_settled,
)
from goldset.labeler.store.connection import CANDIDATES_NEXT, CANDIDATES_RETIRED, chunks, qmarks
from goldset.labeler.store.imports import POOL_COLUMNS, Imports
from goldset.labeler.store.log import IMPORT_RUN, JOINED, query_context


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
        adds only docs not yet in the pool; judgements are keyed by (query, doc) and reused.
        A done query stays done (in the golden set): the new run's unjudged docs above its
        first relevant one are its holes, which put it back in the queue as work (see
        :meth:`pool_preview` for what a pool would do, read without writing). The whole
        corpus is stored (for full-text search); queries of the file not answered by any run
        get no candidates.
        Without ``corpus`` or ``queries``, the documents and queries already in the project
        are used: ``pool(None, None, [new_run], 10)`` adds a new system's unjudged top 10 as
        work. All-or-nothing, like imports. Returns counts and the run names.
        """
        corpus_docs = {doc.doc_id: doc for doc in read_corpus(corpus)} if corpus else {}
        pool_queries = read_queries(queries) if queries else []
        pooled = [read_pooled_run(path, depth) for path in runs]
        _check_run_names(pooled)
        documents = corpus_documents(corpus_docs.values())
        # Every refusal comes before the first write (the checks only read): a refused pool
        # leaves the file byte for byte as it was, as a refused import does.
        with self._import_lock():
            new_documents, fill_ins = self._new_documents(documents, str(corpus))
            new_queries = self._new_pool_queries(pool_queries, str(queries))
            known_queries = {q.query_id for q in pool_queries} | set(
                self._content_hashes([q for run in pooled for q in run.rankings])
            )
            corpus_name = f"the corpus {corpus}" if corpus else "the project"
            self._check_pooled_docs(pooled, known_queries, set(corpus_docs), corpus_name)
            self._check_pooled_files(pooled)
            with self._batch(str(corpus or runs[0])) as batch, self._staging():
                counts = self._stage_pool(
                    pooled, new_documents, fill_ins, new_queries, known_queries, batch, str(queries)
                )
        return {"runs": [run.name for run in pooled], **counts}

    def pool_preview(self, runs: Sequence[str | Path], depth: int) -> dict:
        """What ``pool(None, None, runs, depth)`` would do, read without writing anything.

        ``documents``: new candidates (docs of the runs' top ``depth`` not yet in their
        query's pool), over ``queries`` queries. Of the project's done queries that
        the runs rank: ``new_work``, those where some run ranks an unjudged doc above its
        first relevant one (holes to judge: the query stays in the golden set meanwhile; on
        a query done by a verdict, any doc it did not cover), and ``already_exact``, those
        where every run's MRR@depth and hit@depth are exact already.
        ``run_queries_ignored``: queries of the runs that the project does not hold.
        Refuses what :meth:`pool` refuses of the runs themselves.
        """
        pooled = [read_pooled_run(path, depth) for path in runs]
        _check_run_names(pooled)
        threshold = self.settings()["rel_threshold"]
        answered = sorted({query_id for run in pooled for query_id in run.rankings})
        with self._reading():
            labels, positions = {}, {}
            for chunk in chunks(answered):
                labels.update(self._golden(chunk))
                positions.update(self._positions(chunk))
        new_docs: dict[str, set[str]] = {}
        new_work, already_exact = 0, 0
        for query_id in labels:
            rankings = [
                [doc for doc, _ in run.rankings[query_id]]
                for run in pooled
                if query_id in run.rankings
            ]
            fresh = {doc for ranking in rankings for doc in ranking} - set(
                positions.get(query_id, ())
            )
            if fresh:
                new_docs[query_id] = fresh
            label = labels[query_id]
            if label.status != "done":
                continue
            if all(run_settled(ranking, label.grades, threshold) for ranking in rankings):
                already_exact += 1
            else:
                new_work += 1
        return {
            "runs": [run.name for run in pooled],
            "documents": sum(len(docs) for docs in new_docs.values()),
            "queries": len(new_docs),
            "new_work": new_work,
            "already_exact": already_exact,
            "run_queries_ignored": len(answered) - len(labels),
        }

    def _stage_pool(
        self,
        pooled: Sequence[PooledRun],
        new_documents: list[tuple],
        fill_ins: Mapping[str, tuple[str, str]],
        new_queries: Sequence[Task],
        known_queries: set[str],
        batch: int,
        queries_source: str,
    ) -> dict:
        """Write a checked pool (see :meth:`pool`): stage its rows, then publish them in one
        short transaction; returns the counts :meth:`pool` reports."""
        # The bulk of the work, the corpus and every rank under a new run (and the pools of
        # new queries), is staged in short transactions (invisible: no published query or
        # registered run reaches it yet); the known queries' new candidates and fused order
        # go into a copy of the candidates table (see _build_next_candidates), also in short
        # transactions; the rest is computed outside the lock and staged in TEMP tables, the
        # labelled queries' states under their new order too (see Projections._rederive).
        # The one publishing transaction adds the queries and runs, copies in the ranks under
        # known runs, swaps the copy in and writes the states that changed, a statement a
        # table (before, upserting the new order in place and refreshing the labelled queries
        # one by one held the lock for seconds on a large project: bench/README.md, "Figures
        # behind design choices").
        self._stage_documents(new_documents, batch)
        progress = self._stage_queries(
            [(t.query_id, t.query, t.slice, t.metadata, t.content_hash) for t in new_queries],
            queries_source,
        )
        fresh = {task.query_id for task in new_queries}
        new_runs = {run.name for run in pooled} - {
            row[0] for row in self.conn.execute("SELECT name FROM runs")
        }
        staged, pooled_fresh = self._stage_fresh_pools(pooled, fresh, new_runs, batch)
        settings = self.settings()
        added, touched, order, context = self._stage_known_pools(
            pooled, known_queries, fresh, new_runs, settings
        )
        try:
            if order:
                self._build_next_candidates(order, batch)
            # the labelled queries' states in their new order, derived outside the lock
            found = self._rederive(settings, touched, context)
            with self._writing():
                self._register_runs(pooled)
                for doc_id, (title, text) in fill_ins.items():
                    self._rewrite_document(doc_id, title, text)
                self._publish_queries()
                self._add_counts(progress)
                self._publish_staged("pool_ranks", POOL_COLUMNS)
                if order:
                    self.conn.execute(f"ALTER TABLE candidates RENAME TO {CANDIDATES_RETIRED}")
                    self.conn.execute(f"ALTER TABLE {CANDIDATES_NEXT} RENAME TO candidates")
                self._seal(batch)  # the new candidates' join mark, read by what follows
                self._publish_rederived(found)
                self._publish(batch)
        finally:  # the old table once swapped out, or the copy if anything failed
            self._drop_tables(CANDIDATES_NEXT, CANDIDATES_RETIRED)
        answered = {q for run in pooled for q in run.rankings}
        return {
            "queries_added": len(new_queries),
            "documents_added": len(new_documents),
            "candidates_added": added + staged,
            "queries_touched": len(touched | pooled_fresh),
            "run_queries_ignored": len(answered - known_queries),
        }

    def _check_pooled_files(self, pooled: Sequence[PooledRun]) -> None:
        """Refuse a run whose name a different file already has in the project (its name is
        its file's: two files cannot share one)."""
        for run in pooled:
            row = self.conn.execute(
                "SELECT sha256 FROM runs WHERE name = ?", (run.name,)
            ).fetchone()
            if row and row[0] != run.sha256:
                problem = f"a different run named {run.name!r} is already pooled: rename the file"
                raise InputError(run.path, None, None, problem)

    def _register_runs(self, pooled: Sequence[PooledRun]) -> None:
        """Inside the publishing transaction: record each run (checked by
        :meth:`_check_pooled_files`), or deepen one pooled before."""
        for run in pooled:
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
        candidates = [
            (query_id, doc_id, position, score, None)
            for query_id, fused in fuse(rankings).items()
            for position, (doc_id, score) in enumerate(fused, start=1)
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
        self,
        pooled: Sequence[PooledRun],
        known_queries: set[str],
        corpus_ids: set[str],
        corpus: str,
    ) -> None:
        """Refuse a run that ranks, for a query of the project or of the queries file, a doc
        that is neither in the corpus file (``corpus_ids``) nor in the project."""
        for run in pooled:
            doc_ids = {
                d
                for q, ranking in run.rankings.items()
                if q in known_queries
                for d, _ in ranking
                if d not in corpus_ids
            }
            stored = set()
            for chunk in chunks(list(doc_ids)):
                stored.update(
                    row[0]
                    for row in self.conn.execute(
                        f"SELECT doc_id FROM documents WHERE doc_id IN ({qmarks(chunk)})", chunk
                    )
                )
            missing = doc_ids - stored
            if missing:
                doc_id = min(missing)
                query_id = next(q for q, r in run.rankings.items() if doc_id in dict(r))
                line = line_of_doc(run.path, query_id, doc_id)
                problem = f"doc {doc_id!r} (query {query_id!r}) is not in {corpus}"
                raise InputError(run.path, line, "doc_id", problem)

    def _stage_known_pools(
        self,
        pooled: Sequence[PooledRun],
        known_queries: set[str],
        fresh: set[str],
        new_runs: set[str],
        settings: Mapping[str, object],
    ) -> tuple[int, set[str], list[tuple], Callable[[str], QueryContext]]:
        """Stage the ranks not yet stored of the project's queries (and of new queries under
        runs already pooled) — those under new runs written in place, the others in a TEMP
        table for the publishing transaction — and compute the new
        display order of each known query that gained any: its new candidates and every
        candidate's fused position, as :meth:`_context` would rank them once the ranks are
        in. Read and computed outside the lock; an import or pool is the only writer of
        ranks and candidates, and it holds :meth:`_import_lock`. Returns (candidates added,
        known queries touched, their order as (query_id, doc_id, position, score) rows, and
        the context of a touched query once they are in, under ``settings``)."""
        wanted = sorted(
            {
                query_id
                for run in pooled
                for query_id in run.rankings
                if query_id in known_queries and not (query_id in fresh and run.name in new_runs)
            }
        )
        ranks: dict[str, dict[tuple[str, int], str]] = {}
        candidates: dict[str, dict[str, tuple[int, int | None]]] = {}
        for chunk in chunks([q for q in wanted if q not in fresh]):
            marks = qmarks(chunk)
            for query_id, run, rank, doc_id in self.conn.execute(
                f"SELECT query_id, run, rank, doc_id FROM pool_ranks WHERE query_id IN ({marks})",
                chunk,
            ):
                ranks.setdefault(query_id, {})[run, rank] = doc_id
            for query_id, doc_id, *place in self.conn.execute(
                f"SELECT query_id, doc_id, position, imported_rank, {JOINED} FROM candidates c "
                f"WHERE query_id IN ({marks})",
                chunk,
            ):
                candidates.setdefault(query_id, {})[doc_id] = tuple(place)
        wanted_set = set(wanted)
        new_ranks, touched, order, added = [], set(), [], 0
        for run in pooled:
            for query_id, ranking in run.rankings.items():
                if query_id not in wanted_set or (query_id in fresh and run.name in new_runs):
                    continue
                stored = ranks.setdefault(query_id, {})
                for rank, (doc_id, score) in enumerate(ranking, start=1):
                    if (run.name, rank) not in stored:
                        stored[run.name, rank] = doc_id
                        new_ranks.append((query_id, run.name, rank, doc_id, score))
                        touched.add(query_id)

        def context(query_id: str) -> QueryContext:
            return query_context(
                [(doc_id, *place) for doc_id, place in candidates[query_id].items()],
                [(run, rank, d) for (run, rank), d in ranks[query_id].items()],
                settings,
            )

        pools = {}
        for query_id in sorted(touched - fresh):  # fresh ones are fused already
            mine = candidates.setdefault(query_id, {})
            for doc_id in ranks[query_id].values():
                if doc_id not in mine:
                    # as a new candidate is inserted: position 0, joining after every event
                    # the derivation sees (see _seal)
                    mine[doc_id] = (0, None, golden.JOINS_LATER)
                    added += 1
            pools[query_id] = context(query_id).rankings  # as _context ranks them, ranks in
        for query_id, fused in fuse(pools).items():
            mine = candidates[query_id]
            for position, (doc_id, score) in enumerate(fused, start=1):
                order.append((query_id, doc_id, position, score))
                mine[doc_id] = (position, *mine[doc_id][1:])  # its place once the order is in
        # ranks under a new run count only once it is registered (see corpus.POOLED_RUN):
        # they are written now, in short transactions; the others wait for the publishing
        self._stage_ranks([row for row in new_ranks if row[1] in new_runs])
        self._stage_rows("pool_ranks", POOL_COLUMNS, [r for r in new_ranks if r[1] not in new_runs])
        return added, touched - fresh, order, context

    def _build_next_candidates(self, order: Sequence[tuple], batch: int) -> None:
        """Write :data:`CANDIDATES_NEXT`, in short transactions: a copy of ``candidates``
        (same columns, indexes under the other of two names) with the new fused ``order``
        (query_id, doc_id, position, score) of the touched known queries upserted, a new
        candidate under the pool's ``batch`` (its join mark: see :meth:`_seal`), for the
        publishing transaction to rename into place. No reader looks at it; the copy stays
        exact because only imports and pools, which hold :meth:`_import_lock`, write
        candidates. A crash leaves it behind, dropped at the next import or pool."""
        self._drop_tables(CANDIDATES_NEXT)
        with self._writing() as conn:
            for (sql,) in conn.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'candidates' AND sql IS NOT NULL "
                "ORDER BY type = 'index'"  # the table first
            ).fetchall():
                conn.execute(_copied_schema(sql))
        names = ", ".join(row[1] for row in self.conn.execute("PRAGMA table_info(candidates)"))
        query_ids = self.conn.execute(
            "SELECT DISTINCT query_id FROM candidates ORDER BY query_id"
        ).fetchall()
        (rows,) = self.conn.execute("SELECT count(*) FROM candidates").fetchone()

        def copy(conn: sqlite3.Connection, chunk: Sequence[tuple]) -> None:
            conn.execute(
                f"INSERT INTO {CANDIDATES_NEXT} ({names}) SELECT {names} FROM candidates "
                "WHERE query_id BETWEEN ? AND ?",
                (chunk[0][0], chunk[-1][0]),
            )

        upsert = (
            f"INSERT INTO {CANDIDATES_NEXT} ({', '.join(_ORDER_COLUMNS)}, batch) "
            f"VALUES ({qmarks(_ORDER_COLUMNS)}, {int(batch)}) ON CONFLICT (query_id, doc_id) "
            "DO UPDATE SET position = excluded.position, score = excluded.score"
        )
        with self._foreign_keys_off():  # fresh queries' candidates come before their queries
            # its first transaction about 1,000 rows, as the upsert's: the pace sets the rest
            first = max(1, 1_000 * len(query_ids) // max(rows, 1))
            self._in_short_transactions(query_ids, copy, size=first)
            self._in_short_transactions(order, lambda conn, chunk: conn.executemany(upsert, chunk))

    def add_corpus(self, path: str | Path) -> int:
        """Add a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``) to the project's
        documents, searchable from the label page; returns how many were new. A known doc
        keeps its text (a different one is an error naming the line). All-or-nothing."""
        return self.pool(path, None, [], depth=1)["documents_added"]


_ORDER_COLUMNS = ("query_id", "doc_id", "position", "score")  # a candidate's fused place


def _check_run_names(pooled: Sequence[PooledRun]) -> None:
    """Refuse, naming its file, a run whose name (its file's, without the extension) another
    run of the same pool has, or that is the imported candidates' own ``import``."""
    first: dict[str, str] = {}
    for run in pooled:
        if run.name == IMPORT_RUN:
            problem = f"a run cannot be named {IMPORT_RUN!r} (the imported lists' name): rename it"
            raise InputError(run.path, None, None, problem)
        if run.name in first:
            problem = f"run name {run.name!r} is also that of {first[run.name]}: rename one"
            raise InputError(run.path, None, None, problem)
        first[run.name] = run.path


_SCHEMA_NAME = re.compile(r'^(CREATE (?:TABLE|INDEX) )"?(\w+)"?( ON "?candidates"?)?')


def _copied_schema(sql: str) -> str:
    """The CREATE statement of ``candidates`` or one of its indexes, for
    :data:`CANDIDATES_NEXT`. SQLite cannot rename an index, so the copy's indexes take the
    other of two names, ``NAME`` and ``NAME_alt``, and the swapped-in table keeps them:
    nothing refers to an index by name."""

    def renamed(match: re.Match) -> str:
        create, name, on = match.groups()
        if not on:  # the table
            return create + CANDIDATES_NEXT
        name = name.removesuffix("_alt") if name.endswith("_alt") else name + "_alt"
        return f"{create}{name} ON {CANDIDATES_NEXT}"

    return _SCHEMA_NAME.sub(renamed, sql, count=1)
