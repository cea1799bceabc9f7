"""Per-query state: the grades and the labelling state of one query, computed from the log."""

from __future__ import annotations

from collections.abc import Sequence

from goldset.labeler import golden
from goldset.labeler.golden import Decision, GoldenLabel, QueryState
from goldset.labeler.store.connection import _chunks, _marks
from goldset.labeler.store.corpus import POOLED_RUN, UNPUBLISHED_HIDDEN, Corpus
from goldset.labeler.store.golden_rows import latest_decisions, stored_golden, stored_states
from goldset.labeler.store.log import IMPORT_RUN, Log


class States(Corpus, Log):
    """Per-query state: the grades and the labelling state of one query, computed from the log."""

    def candidates(self, query_id: str, annotator: str | None = None) -> list[dict]:
        """The query's candidates in display order, each a dict: doc_id, title, text, position,
        score, provenance ({run: rank}; an imported list is the run ``"import"``) and grade
        (the annotator's current grade, None when unjudged; with no annotator, the golden
        grade: the latest given by anyone)."""
        with self._reading():
            rows = self._rows(
                "SELECT c.doc_id, d.title, d.text, c.position, c.score, c.imported_rank "
                "FROM candidates c JOIN documents d ON d.doc_id = c.doc_id "
                "WHERE c.query_id = ? ORDER BY c.position",
                (query_id,),
            )
            provenance: dict[str, dict[str, int]] = {}
            for doc_id, run, rank in self.conn.execute(
                f"SELECT doc_id, run, rank FROM pool_ranks WHERE query_id = ? AND {POOLED_RUN}",
                (query_id,),
            ):
                provenance.setdefault(doc_id, {})[run] = rank
            grades = self._grades(query_id, annotator)
        for row in rows:
            imported_rank = row.pop("imported_rank")
            runs = provenance.get(row["doc_id"], {})
            row["provenance"] = {IMPORT_RUN: imported_rank, **runs} if imported_rank else runs
            row["grade"] = grades.get(row["doc_id"])
        return rows

    def _grades(self, query_id: str, annotator: str | None) -> dict[str, int]:
        if annotator is not None:
            return dict(
                self.conn.execute(
                    "SELECT doc_id, grade FROM labels WHERE query_id = ? AND annotator = ?",
                    (query_id, annotator),
                ).fetchall()
            )
        return self._golden([query_id]).get(query_id, GoldenLabel()).grades

    def labels(self, query_id: str, annotator: str | None = None) -> dict[str, int]:
        """Current grades of the query's judged docs (candidates and attached ones) by the
        annotator, or the golden grades when ``annotator`` is None."""
        with self._reading():
            return self._grades(query_id, annotator)

    def _mode_of(self, query_id: str, annotator: str) -> str:
        mode = self.conn.execute(
            "SELECT mode FROM query_state WHERE query_id = ? AND annotator = ?",
            (query_id, annotator),
        ).fetchone()
        return mode[0] if mode else self.settings()["mode"]

    def query_state(self, query_id: str, annotator: str | None = None) -> dict:
        """Where a query stands, for one annotator or (None) for the golden set.

        Keys: status (pending | in_progress | skipped | done), holes (docs a pooled run ranks
        above its first relevant one, still to judge on a done query), complete (done with
        no holes left), answerable,
        needs_verdict (every candidate that matters judged non-relevant: the annotator must
        choose unanswerable or miss), first_relevant_rank (display position, None if none),
        judged_depth (judged candidates), mode, note.
        """
        with self._reading():
            self.query(query_id)
            context = self._context(query_id)
            if annotator is None:
                states = self._states([query_id]).get(query_id, {})
                label = self._golden([query_id])[query_id]
                decision = self._decisions([query_id]).get(query_id)
                record = golden.export_record(
                    self.query(query_id), states, context, label, decision
                )
                state = QueryState(
                    status=label.status,
                    answerable=label.answerable,
                    needs_verdict=any(s.needs_verdict for s in states.values()),
                    mode=record["mode"],
                    first_relevant_position=record["first_relevant_rank"],
                    judged_depth=record["judged_depth"],
                    note=record["notes"],
                    holes=label.holes,
                )
            else:
                state = golden.derive_state(self._events(query_id, annotator), context)
        return {
            "query_id": query_id,
            "status": state.status,
            "holes": state.holes,
            "complete": state.complete,
            "answerable": state.answerable,
            "needs_verdict": state.needs_verdict,
            "first_relevant_rank": state.first_relevant_position,
            "judged_depth": state.judged_depth,
            "mode": state.mode,
            "note": state.note,
            "asserted": sorted(state.asserted),  # graded 0 by a verdict, not pressed
        }

    def decision(self, query_id: str) -> Decision | None:
        """The decision that counts on a query (the latest), or None when none was made."""
        with self._reading():
            return self._decisions([query_id]).get(query_id)

    def decisions(self) -> dict[str, Decision]:
        """The decision that counts on every adjudicated query: query_id -> Decision."""
        with self._reading():
            ids = [
                row[0]
                for row in self.conn.execute(
                    f"SELECT DISTINCT query_id FROM adjudications WHERE {UNPUBLISHED_HIDDEN}"
                )
            ]
            found: dict[str, Decision] = {}
            for chunk in _chunks(ids):
                found.update(self._decisions(chunk))
        return found

    def _decisions(self, query_ids: Sequence[str]) -> dict[str, Decision]:
        return latest_decisions(self.conn, query_ids)

    def _positions(self, query_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        positions: dict[str, dict[str, int]] = {}
        for query_id, doc_id, position in self.conn.execute(
            "SELECT query_id, doc_id, position FROM candidates "
            f"WHERE query_id IN ({_marks(query_ids)})",
            query_ids,
        ):
            positions.setdefault(query_id, {})[doc_id] = position
        return positions

    def _states(self, query_ids: Sequence[str]) -> dict[str, dict[str, QueryState]]:
        """Stored per-annotator states (with their labels) of these queries."""
        return stored_states(self.conn, query_ids)

    def _golden(self, query_ids: Sequence[str]) -> dict[str, GoldenLabel]:
        """The golden labels of these queries, as the golden projection holds them."""
        return stored_golden(self.conn, query_ids)
