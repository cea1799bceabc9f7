"""Team work: assignments, overlap and reviewers' adjudications."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from goldset.labeler import golden
from goldset.labeler.store.connection import chunks, qmarks
from goldset.labeler.store.corpus import published
from goldset.labeler.store.projections import TO_DO, Projections


class Team(Projections):
    """Team work: assignments, overlap and reviewers' adjudications."""

    def assign(self, annotator: str, query_ids: Sequence[str]) -> int:
        """Give queries to an annotator (appended to their queue; already assigned ones are
        kept as they are: nobody gets the same query twice). From then on :meth:`next_query`
        offers them only their assigned queries. Returns how many were newly assigned."""
        return self.assign_plan({annotator: query_ids})[annotator]

    def assign_plan(self, plan: Mapping[str, Sequence[str]]) -> dict[str, int]:
        """Give each annotator their queries (see :meth:`assign`) in one transaction: the whole
        plan or, on any error (an unknown query), nothing. Returns newly assigned per annotator."""
        with self._writing():
            for query_ids in plan.values():
                for query_id in query_ids:
                    self._require_query(query_id)
            return {
                annotator: self._assign(annotator, query_ids)
                for annotator, query_ids in plan.items()
            }

    def _assign(self, annotator: str, query_ids: Sequence[str]) -> int:
        if not isinstance(annotator, str) or not annotator:
            raise ValueError("annotator must be a non-empty string")
        conn = self.conn
        start = conn.execute(
            "SELECT coalesce(max(position), 0) FROM assignments WHERE annotator = ?",
            (annotator,),
        ).fetchone()[0]
        added = 0
        for query_id in dict.fromkeys(query_ids):
            # Still to do for them, as projections._is_open says: not done nor skipped, or
            # done with holes left (no state yet: to do).
            to_do = conn.execute(
                "SELECT status NOT IN ('done', 'skipped') OR holes > 0 FROM query_state "
                "WHERE query_id = ? AND annotator = ?",
                (query_id, annotator),
            ).fetchone()
            cursor = conn.execute(
                "INSERT OR IGNORE INTO assignments (annotator, query_id, position, open, "
                "assigned_at) VALUES (?, ?, ?, ?, ?)",
                (
                    annotator,
                    query_id,
                    start + added + 1,
                    int(to_do is None or bool(to_do[0])),
                    golden.now(),
                ),
            )
            if cursor.rowcount:
                added += 1
                slice_name = self._value(
                    "SELECT slice FROM queries WHERE query_id = ?", (query_id,)
                )
                self._count(annotator, slice_name, "assigned", 1)
        return added

    def assignment_counts(self) -> dict[str, dict[str, int]]:
        """Per annotator with assignments: ``assigned`` queries and how many are still ``open``
        (still to do for them: neither done nor skipped, or done with holes left)."""
        return {
            row["annotator"]: {"assigned": row["assigned"], "open": row["open"]}
            for row in self._rows(
                "SELECT annotator, count(*) AS assigned, sum(open) AS open FROM assignments "
                "GROUP BY annotator ORDER BY annotator"
            )
        }

    def assignees(self) -> dict[str, list[str]]:
        """Who each assigned query went to: query_id -> annotators (by name), in queue order."""
        assigned: dict[str, list[str]] = {}
        for row in self._rows(
            "SELECT a.query_id, a.annotator FROM assignments a "
            "JOIN queries q ON q.query_id = a.query_id ORDER BY q.position, a.annotator"
        ):
            assigned.setdefault(row["query_id"], []).append(row["annotator"])
        return assigned

    def dealable_queries(self, slices: Sequence[str] | None = None) -> list[dict]:
        """Queries that can still be dealt out, in queue order: not done and assigned to nobody
        (of these ``slices`` when given); in sampled labelling the drawn ones first, in drawn
        order (see :meth:`draw_sample`), so that a deal spreads the sample evenly. Each is a
        dict: query_id, slice, and ``labelled_by``, the annotators who already worked on it
        (it must not go to them again)."""
        where, params = "", []
        if slices is not None:
            where, params = f"AND q.slice IN ({qmarks(slices)})", list(slices)
        with self._reading():
            rows = self._rows(
                "SELECT q.query_id, q.slice FROM queries q LEFT JOIN sample s "
                f"ON s.query_id = q.query_id WHERE {TO_DO} AND NOT "
                "EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = q.query_id) "
                f"{where} ORDER BY s.rank IS NULL, s.rank, q.position",
                params,
            )
            labelled_by: dict[str, list[str]] = {}
            for query_id, annotator in self.conn.execute(
                "SELECT s.query_id, s.annotator FROM query_state s JOIN queries q "
                f"ON q.query_id = s.query_id WHERE {TO_DO} ORDER BY s.annotator"
            ):
                labelled_by.setdefault(query_id, []).append(annotator)
        return [{**row, "labelled_by": labelled_by.get(row["query_id"], [])} for row in rows]

    def assignments(self, annotator: str) -> list[str]:
        """The annotator's assigned query ids, in queue order."""
        return [
            row["query_id"]
            for row in self._rows(
                "SELECT query_id FROM assignments WHERE annotator = ? ORDER BY position",
                (annotator,),
            )
        ]

    def adjudicate(
        self,
        query_id: str,
        reviewer: str,
        judgments: Mapping[str, int],
        answerable: bool,
        *,
        adopted: str | None = None,
        note: str = "",
    ) -> int:
        """Record a reviewer's decision on a query; returns the decision id.

        From then on the query's golden label is the decision — these grades, this
        answerability, status done — whatever its annotators' labels say; their labels stay in
        the log and in the export beside it. Decisions are an append-only log: deciding again
        appends a new decision, which counts from then on. Who may decide is the team's rule
        (:func:`goldset.labeler.team.decide` checks it); grades run 0..max_grade; each doc must be a
        candidate of the query or a known document (one found by search); ``adopted`` names
        the annotator whose labels the decision accepts as they were, if any.
        """
        if not isinstance(answerable, bool):
            raise ValueError(f"answerable must be true or false, got {answerable!r}")
        if not isinstance(note, str):
            raise ValueError("a note must be a string")
        for grade in judgments.values():
            self._check_grade(grade)
        with self._writing() as conn:
            self._require_query(query_id)
            for doc_id in judgments:
                if not self._value("SELECT 1 FROM documents WHERE doc_id = ?", (doc_id,)):
                    raise ValueError(f"unknown document {doc_id!r}")
            cursor = conn.execute(
                "INSERT INTO adjudications (query_id, reviewer, judgments, answerable, adopted, "
                "note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    query_id,
                    reviewer,
                    json.dumps(dict(judgments), ensure_ascii=False),
                    int(answerable),
                    adopted,
                    note,
                    golden.now(),
                ),
            )
            self._refresh(query_id)
        return int(cursor.lastrowid)

    def overlap_states(self) -> list[dict]:
        """The doubly judged queries — done by two or more annotators — in queue order, for
        agreement and adjudication. Each is a dict: query_id, query, slice, position,
        ``positions`` (doc_id -> display position of each candidate) and ``states``
        (annotator -> :class:`goldset.labeler.golden.QueryState`, only those who completed it)."""
        with self._reading():
            ids = [
                row[0]
                for row in self.conn.execute(
                    f"SELECT query_id FROM query_state WHERE status = 'done' AND {published()} "
                    "GROUP BY query_id HAVING count(*) >= 2"
                )
            ]
            overlap = []
            for chunk in chunks(ids):
                states, positions = self._states(chunk), self._positions(chunk)
                for query in self._rows(
                    "SELECT query_id, query, slice, position FROM queries "
                    f"WHERE query_id IN ({qmarks(chunk)})",
                    chunk,
                ):
                    done = {
                        name: state
                        for name, state in states[query["query_id"]].items()
                        if state.status == "done"
                    }
                    overlap.append(
                        {
                            **query,
                            "positions": positions.get(query["query_id"], {}),
                            "states": done,
                        }
                    )
        return sorted(overlap, key=lambda query: query["position"])
