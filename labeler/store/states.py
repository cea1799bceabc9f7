"""Per-query state: the grades and the labelling state of one query, as the projections
keep them, and the query as an annotator works on it (:class:`QuerySheet`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from goldset.labeler import golden
from goldset.labeler.golden import Decision, GoldenLabel, QueryContext, QueryState
from goldset.labeler.pooling import next_to_judge
from goldset.labeler.store.connection import chunks, qmarks
from goldset.labeler.store.corpus import POOLED_RUN, UNPUBLISHED_HIDDEN, Corpus
from goldset.labeler.store.golden_rows import (
    latest_decisions,
    stored_golden,
    stored_state,
    stored_states,
)
from goldset.labeler.store.log import IMPORT_RUN, JOIN_MARK, RANKS_JSON, Log, query_context

# SQL: a REAL as a JSON number with 17 significant digits (JSON's own 15 would not give the
# stored double back).
EXACT = "json(printf('%!.17g', {}))"
# SQL: a stored state ``s`` (a query_state row) as :func:`stored_state` reads it, one JSON object.
STORED_STATE_JSON = (
    "json_object('status', s.status, 'answerable', s.answerable, "
    "'needs_verdict', s.needs_verdict, 'mode', s.mode, "
    "'first_relevant_position', s.first_relevant_rank, 'judged_depth', s.judged_depth, "
    f"'seconds', {EXACT.format('s.seconds')}, 'last_event_id', s.last_event_id, "
    "'updated_at', s.updated_at, 'note', s.note, 'holes', s.holes)"
)
# Queries ``:ids`` (a JSON array) as ``:annotator`` works on them (see QuerySheet): a row per
# query, its state, cards (candidates with their documents, the annotator's label and the
# action that gave it), pooled ranks and attached documents each a JSON value.
_SHEETS_SQL = f"""
SELECT q.query_id, q.query, q.slice, q.metadata, q.position, q.status, q.answerable,
  (SELECT count(*) FROM candidates c WHERE c.query_id = q.query_id) AS candidates,
  (SELECT {STORED_STATE_JSON} FROM query_state s
   WHERE s.query_id = q.query_id AND s.annotator = :annotator) AS state,
  (SELECT json_group_array(json_array(c.doc_id, c.position, c.imported_rank, {JOIN_MARK},
     c.score, d.title, d.text, l.grade, e.action))
   FROM candidates c JOIN documents d ON d.doc_id = c.doc_id
   LEFT JOIN labels l
     ON l.query_id = c.query_id AND l.annotator = :annotator AND l.doc_id = c.doc_id
   LEFT JOIN events e ON e.id = l.event_id
   WHERE c.query_id = q.query_id) AS cards,
  {RANKS_JSON} AS ranks,
  (SELECT json_group_array(json_array(l.doc_id, d.title, d.text, d.metadata, l.grade, l.event_id))
   FROM labels l JOIN documents d ON d.doc_id = l.doc_id
   WHERE l.query_id = q.query_id AND l.annotator = :annotator AND NOT EXISTS
     (SELECT 1 FROM candidates c WHERE c.query_id = l.query_id AND c.doc_id = l.doc_id)
  ) AS attached
FROM queries q WHERE q.query_id IN (SELECT value FROM json_each(:ids))
"""


def next_doc(context: QueryContext, grades: Mapping[str, int], mode: str) -> str | None:
    """The candidate to judge next, given the annotator's ``grades``, or None when none is
    left: in full mode the first unjudged one; in first-hit mode see
    :func:`goldset.labeler.pooling.next_to_judge` (None once every pooled run is settled)."""
    display = sorted(context.positions, key=context.positions.get)
    if mode == "full":
        return next((doc_id for doc_id in display if doc_id not in grades), None)
    candidate_grades = {d: g for d, g in grades.items() if d in context.positions}
    return next_to_judge(context.rankings, candidate_grades, context.threshold, display)


def state_dict(query_id: str, state: QueryState, asserted: frozenset[str]) -> dict:
    """A state as :meth:`States.query_state` gives it."""
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
        "asserted": sorted(asserted),  # graded 0 by a verdict, not pressed
    }


@dataclass(frozen=True)
class QuerySheet:
    """One query as an annotator works on it, read from the projections (see
    :meth:`States.sheets`).

    ``query``: as :meth:`Corpus.query` gives it; ``state``: as :meth:`States.query_state`;
    ``mode``: the annotator's own once they judged a candidate, else the protocol's;
    ``candidates``: as :meth:`States.candidates` gives them, within the protocol's depth;
    ``attached``: the documents they judged that are not candidates (doc_id, title, text,
    metadata, grade), in the order they were attached; ``asserted``: the candidates a
    verdict graded 0; ``next_doc``: the candidate to judge next (see :func:`next_doc`).
    """

    query: dict
    state: dict
    mode: str
    candidates: list[dict]
    attached: list[dict]
    asserted: frozenset[str]
    next_doc: str | None

    @classmethod
    def of(cls, row: Mapping, settings: Mapping[str, object]) -> QuerySheet:
        """The sheet of a row of :data:`_SHEETS_SQL` under the protocol ``settings``."""
        cards = sorted(json.loads(row["cards"]), key=lambda card: card[1])
        ranks = [tuple(rank) for rank in json.loads(row["ranks"])]
        context = query_context([tuple(card[:4]) for card in cards], ranks, settings)
        candidates = _sheet_candidates(cards, ranks)
        attached = _sheet_attached(json.loads(row["attached"]))
        grades = {c["doc_id"]: c["grade"] for c in candidates if c["grade"] is not None}
        grades.update((doc["doc_id"], doc["grade"]) for doc in attached)
        asserted = frozenset(card[0] for card in cards if card[8] in golden.VERDICTS)
        stored = json.loads(row["state"]) if row["state"] else None
        # a query the annotator never acted on is in the state of no events
        state = stored_state(stored, []) if stored else golden.derive_state([], context)
        mode = state.mode if state.judged_depth else settings["mode"]
        return cls(
            query=_sheet_query(row),
            state=state_dict(row["query_id"], state, asserted),
            mode=mode,
            candidates=candidates[: settings["depth"]] if settings["depth"] else candidates,
            attached=attached,
            asserted=asserted,
            next_doc=next_doc(context, grades, mode),
        )


def _sheet_candidates(cards: list[list], ranks: list[tuple]) -> list[dict]:
    """A query's candidates as :meth:`States.candidates` gives them, from the cards and ranks
    of a row of :data:`_SHEETS_SQL` (cards in display order)."""
    provenance: dict[str, dict[str, int]] = {}
    for run, rank, doc_id in ranks:
        provenance.setdefault(doc_id, {})[run] = rank
    candidates = []
    for doc_id, position, imported_rank, _, score, title, text, grade, _ in cards:
        runs = provenance.get(doc_id, {})
        candidates.append(
            {
                **{"doc_id": doc_id, "title": title, "text": text, "position": position},
                "score": score,
                "provenance": {IMPORT_RUN: imported_rank, **runs} if imported_rank else runs,
                "grade": grade,
            }
        )
    return candidates


def _sheet_attached(rows: list[list]) -> list[dict]:
    """The documents judged on a query that are not its candidates (doc_id, title, text,
    metadata, grade), in the order they were attached, from the rows of a row of
    :data:`_SHEETS_SQL` (doc_id, title, text, metadata, grade, event_id)."""
    return [
        {"doc_id": doc_id, "title": title, "text": text, "grade": grade}
        | {"metadata": json.loads(metadata or "{}")}
        for doc_id, title, text, metadata, grade, _ in sorted(rows, key=lambda doc: doc[5])
    ]


def _sheet_query(row: Mapping) -> dict:
    """A query as :meth:`Corpus.query` gives it, from a row of :data:`_SHEETS_SQL`."""
    return {key: row[key] for key in ("query_id", "query", "slice", "position", "status")} | {
        "metadata": json.loads(row["metadata"]),
        "answerable": bool(row["answerable"]),
        "candidates": row["candidates"],
    }


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

    def sheets(self, query_ids: Sequence[str], annotator: str) -> dict[str, QuerySheet]:
        """These queries as ``annotator`` works on them (see :class:`QuerySheet`), read from
        the projections in one statement: query_id -> sheet (unknown ids are left out)."""
        settings = self.settings()
        rows = self._rows(_SHEETS_SQL, {"ids": json.dumps(list(query_ids)), "annotator": annotator})
        return {row["query_id"]: QuerySheet.of(row, settings) for row in rows}

    def query_state(self, query_id: str, annotator: str | None = None) -> dict:
        """Where a query stands, for one annotator or (None) for the golden set, as the
        projections keep it.

        Keys: status (pending | in_progress | skipped | done), holes (docs a pooled run ranks
        above its first relevant one, still to judge on a done query), complete (done with
        no holes left), answerable,
        needs_verdict (every candidate that matters judged non-relevant: the annotator must
        choose unanswerable or miss), first_relevant_rank (display position, None if none),
        judged_depth (judged candidates), mode, note, asserted (the candidates a verdict
        graded 0).
        """
        with self._reading():
            if annotator is not None:
                sheet = self.sheets([query_id], annotator).get(query_id)
                if sheet is None:
                    raise ValueError(f"unknown query {query_id!r}")
                return sheet.state
            query = self.query(query_id)
            context = self._context(query_id)
            states = self._states([query_id]).get(query_id, {})
            label = self._golden([query_id])[query_id]
            decision = self._decisions([query_id]).get(query_id)
        record = golden.export_record(query, states, context, label, decision)
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
        return state_dict(query_id, state, state.asserted)

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
            for chunk in chunks(ids):
                found.update(self._decisions(chunk))
        return found

    def _decisions(self, query_ids: Sequence[str]) -> dict[str, Decision]:
        return latest_decisions(self.conn, query_ids)

    def _positions(self, query_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        positions: dict[str, dict[str, int]] = {}
        for query_id, doc_id, position in self.conn.execute(
            "SELECT query_id, doc_id, position FROM candidates "
            f"WHERE query_id IN ({qmarks(query_ids)})",
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
