"""The golden projection: each query's golden label, made by the one merge rule
(:func:`goldset.labeler.golden.merge`) and kept in ``golden_judgments`` (a row per judged doc) and
``queries`` (status, answerable, golden_mode).

Functions over a connection, at the bottom of the store, because the migration that creates
the projection backfills it with them; :class:`goldset.labeler.store.projections.Projections` writes
it in the transaction of each event and decision, and every reader of the golden set (export,
``eval --db``, the dashboard) reads it instead of merging again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence

from goldset.labeler import golden
from goldset.labeler.golden import Decision, GoldenLabel, QueryState

_CHUNK = 500  # query ids per "IN (...)", well under SQLite's variable limit


def _in(query_ids: Sequence[str]) -> str:
    return f"IN ({', '.join('?' * len(query_ids))})"


def unpacked(width: int) -> str:
    """SQL selecting the ``width`` columns of each row of a JSON array of rows bound as its one
    parameter: many rows written in one statement (see :func:`write_golden`)."""
    columns = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(width))
    return f"SELECT {columns} FROM json_each(?)"


def _dicts(cursor: sqlite3.Cursor) -> list[dict]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def stored_states(
    conn: sqlite3.Connection, query_ids: Sequence[str]
) -> dict[str, dict[str, QueryState]]:
    """The stored per-annotator states (with their labels) of these queries:
    query_id -> annotator -> state."""
    labels: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    for query_id, annotator, doc_id, grade, event_id in conn.execute(
        "SELECT query_id, annotator, doc_id, grade, event_id FROM labels "
        f"WHERE query_id {_in(query_ids)} ORDER BY event_id",
        query_ids,
    ):
        labels.setdefault((query_id, annotator), []).append((doc_id, grade, event_id))
    states: dict[str, dict[str, QueryState]] = {}
    for row in _dicts(
        conn.execute(
            "SELECT query_id, annotator, status, answerable, needs_verdict, mode, "
            "first_relevant_rank AS first_relevant_position, judged_depth, seconds, "
            "last_event_id, updated_at, note, holes "
            f"FROM query_state WHERE query_id {_in(query_ids)}",
            query_ids,
        )
    ):
        query_id, annotator = row.pop("query_id"), row.pop("annotator")
        states.setdefault(query_id, {})[annotator] = stored_state(
            row, labels.get((query_id, annotator), [])
        )
    return states


def stored_state(row: Mapping, labels: Iterable[tuple[str, int, int]]) -> QueryState:
    """A state as stored: its ``query_state`` row (status, answerable, needs_verdict, mode,
    first_relevant_position, judged_depth, seconds, last_event_id, updated_at, note, holes)
    and its ``labels`` rows (doc_id, grade, event_id), oldest first."""
    labels = list(labels)
    return QueryState(
        **{
            **row,
            "answerable": bool(row["answerable"]),
            "needs_verdict": bool(row["needs_verdict"]),
        },
        grades={doc_id: grade for doc_id, grade, _ in labels},
        label_events={doc_id: event_id for doc_id, _, event_id in labels},
    )


def latest_decisions(conn: sqlite3.Connection, query_ids: Sequence[str]) -> dict[str, Decision]:
    """The decision that counts (the latest) on each of these queries that has one."""
    rows = _dicts(
        conn.execute(
            "SELECT id, query_id, reviewer, judgments, answerable, adopted, note, created_at "
            f"FROM adjudications a WHERE query_id {_in(query_ids)} AND id = "
            "(SELECT max(id) FROM adjudications b WHERE b.query_id = a.query_id)",
            query_ids,
        )
    )
    return {row["query_id"]: stored_decision(row) for row in rows}


def stored_decision(row: Mapping) -> Decision:
    """A decision as stored: its ``adjudications`` row (judgments as JSON text)."""
    return Decision(
        **{**row, "judgments": json.loads(row["judgments"]), "answerable": bool(row["answerable"])}
    )


def golden_rows(
    labels: Iterable[tuple[str, GoldenLabel]], before: Mapping[str, GoldenLabel] | None = None
) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """What replacing the golden projection of these queries by their labels (query_id,
    label) writes: the (query_id,) whose ``golden_judgments`` rows are replaced, their new
    rows (query_id, doc_id, grade, seq, source, decision_id), and the (query_id, status,
    answerable, golden_mode, holes) of ``queries`` rows that change. ``before``: the labels stored
    now, where known; what did not change is not written again (a press that changes one
    query's status leaves its judgements' pages alone, and the reverse)."""
    before = before or {}
    replaced, rows, heads = [], [], []
    for query_id, label in labels:
        old = before.get(query_id)
        if old is None or _judgments(old) != _judgments(label):
            replaced.append((query_id,))
            rows += _judgment_rows(query_id, label)
        if old is None or _head(old) != _head(label):
            heads.append((query_id, *_head(label)))
    return replaced, rows, heads


def _judgment_rows(query_id: str, label: GoldenLabel) -> list[tuple]:
    """The ``golden_judgments`` rows of a label."""
    return [
        (query_id, doc_id, grade, label.order[doc_id], label.sources[doc_id], label.decision_id)
        for doc_id, grade in label.grades.items()
    ]


def write_golden(
    conn: sqlite3.Connection,
    labels: Iterable[tuple[str, GoldenLabel]],
    before: Mapping[str, GoldenLabel] | None = None,
) -> None:
    """Replace the golden projection of these queries by their labels (query_id, label),
    inside the caller's write transaction, writing only what changed (see
    :func:`golden_rows`): where the label stored now is known (``before``), only the rows
    that changed (a press that judges one doc writes one row). Index lookups only: no table
    scan."""
    before, labels = before or {}, list(labels)
    replaced, rows, heads = golden_rows([item for item in labels if item[0] not in before])
    changed, gone, moved = _changes([item for item in labels if item[0] in before], before)
    rows, heads = rows + changed, heads + moved
    conn.executemany("DELETE FROM golden_judgments WHERE query_id = ?", replaced)
    conn.executemany(
        "DELETE FROM golden_judgments WHERE query_id = ? AND doc_id IN "
        "(SELECT value FROM json_each(?))",
        gone,
    )
    conn.executemany(
        "INSERT OR REPLACE INTO golden_judgments "
        f"(query_id, doc_id, grade, seq, source, decision_id) {unpacked(6)}",
        [(json.dumps(rows[start : start + _CHUNK]),) for start in range(0, len(rows), _CHUNK)],
    )
    conn.executemany(
        "UPDATE queries SET status = ?2, answerable = ?3, golden_mode = ?4, holes = ?5 "
        "WHERE query_id = ?1",
        heads,
    )


def _changes(
    labels: Sequence[tuple[str, GoldenLabel]], before: Mapping[str, GoldenLabel]
) -> tuple[list[tuple], list[tuple[str, str]], list[tuple]]:
    """What replacing the ``before`` labels of these queries by their labels changes: the
    ``golden_judgments`` rows new or changed, the (query_id, JSON array of doc ids) of those
    gone, and the ``queries`` rows (as :func:`golden_rows` gives them) that change."""
    rows, gone, heads = [], [], []
    for query_id, label in labels:
        old = before[query_id]
        stored = set(_judgment_rows(query_id, old))
        rows += [row for row in _judgment_rows(query_id, label) if row not in stored]
        if dropped := [doc_id for doc_id in old.grades if doc_id not in label.grades]:
            gone.append((query_id, json.dumps(dropped)))
        if _head(old) != _head(label):
            heads.append((query_id, *_head(label)))
    return rows, gone, heads


def _head(label: GoldenLabel) -> tuple:
    """What the query's own row keeps of its golden label."""
    return label.status, label.answerable, label.mode, label.holes


def _judgments(label: GoldenLabel) -> tuple:
    """What the golden_judgments rows keep of a golden label (no rows keep no decision id)."""
    return label.grades, label.order, label.sources, label.decision_id if label.grades else None


def stored_golden(conn: sqlite3.Connection, query_ids: Sequence[str]) -> dict[str, GoldenLabel]:
    """The golden labels of these queries as the projection holds them: query_id -> label."""
    rows: dict[str, list[tuple[str, int, int, str, int | None]]] = {}
    for query_id, *row in conn.execute(
        "SELECT query_id, doc_id, grade, seq, source, decision_id FROM golden_judgments "
        f"WHERE query_id {_in(query_ids)}",
        query_ids,
    ):
        rows.setdefault(query_id, []).append(tuple(row))
    return {
        query_id: stored_label(head, rows.get(query_id, []))
        for query_id, *head in conn.execute(
            f"SELECT query_id, status, answerable, golden_mode, holes FROM queries WHERE query_id "
            f"{_in(query_ids)}",
            query_ids,
        )
    }


def stored_label(head: Sequence, rows: Sequence[Sequence]) -> GoldenLabel:
    """A golden label as stored: its query's (status, answerable, golden_mode, holes) and its
    ``golden_judgments`` rows (doc_id, grade, seq, source, decision_id)."""
    status, answerable, mode, holes = head
    return GoldenLabel(
        status,
        bool(answerable),
        mode,
        grades={doc_id: grade for doc_id, grade, *_ in rows},
        order={doc_id: seq for doc_id, _, seq, *_ in rows},
        sources={doc_id: source for doc_id, _, _, source, _ in rows},
        decision_id=rows[0][4] if rows else None,
        holes=holes,
    )


def golden_labels(
    conn: sqlite3.Connection, query_ids: Sequence[str]
) -> Iterator[tuple[str, GoldenLabel]]:
    """(query_id, golden label) of each of these queries, merged from their stored states
    and decisions, read in chunks."""
    for start in range(0, len(query_ids), _CHUNK):
        chunk = query_ids[start : start + _CHUNK]
        states, decisions = stored_states(conn, chunk), latest_decisions(conn, chunk)
        for query_id in chunk:
            yield query_id, golden.merge(states.get(query_id, {}), decisions.get(query_id))


def backfill(conn: sqlite3.Connection) -> None:
    """Write the golden projection of every query with a stored state or a decision (the
    migration that creates the projection, and the one that adds holes to it). A project
    older than the holes columns is written by the latter (the projection's columns then
    exist), its done queries without holes (done used to mean every run settled)."""
    if "holes" not in {row[1] for row in conn.execute("PRAGMA table_info(queries)")}:
        return
    ids = [
        row[0]
        for row in conn.execute(
            "SELECT query_id FROM query_state UNION SELECT query_id FROM adjudications"
        )
    ]
    write_golden(conn, golden_labels(conn, ids))
