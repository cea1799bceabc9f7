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
        mine = labels.get((query_id, annotator), [])
        states.setdefault(query_id, {})[annotator] = QueryState(
            **{
                **row,
                "answerable": bool(row["answerable"]),
                "needs_verdict": bool(row["needs_verdict"]),
            },
            grades={doc_id: grade for doc_id, grade, _ in mine},
            label_events={doc_id: event_id for doc_id, _, event_id in mine},
        )
    return states


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
    return {
        row["query_id"]: Decision(
            **{
                **row,
                "judgments": json.loads(row["judgments"]),
                "answerable": bool(row["answerable"]),
            }
        )
        for row in rows
    }


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
            rows += [
                (query_id, doc_id, grade, label.order[doc_id], label.sources[doc_id])
                + (label.decision_id,)
                for doc_id, grade in label.grades.items()
            ]
        if old is None or _head(old) != _head(label):
            heads.append((query_id, label.status, int(label.answerable), label.mode, label.holes))
    return replaced, rows, heads


def write_golden(
    conn: sqlite3.Connection,
    labels: Iterable[tuple[str, GoldenLabel]],
    before: Mapping[str, GoldenLabel] | None = None,
) -> None:
    """Replace the golden projection of these queries by their labels (query_id, label),
    inside the caller's write transaction, writing only what changed (see
    :func:`golden_rows`). Index lookups only: no table scan."""
    replaced, rows, heads = golden_rows(labels, before)
    conn.executemany("DELETE FROM golden_judgments WHERE query_id = ?", replaced)
    conn.executemany(
        "INSERT INTO golden_judgments (query_id, doc_id, grade, seq, source, decision_id) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.executemany(
        "UPDATE queries SET status = ?2, answerable = ?3, golden_mode = ?4, holes = ?5 "
        "WHERE query_id = ?1",
        heads,
    )


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
    found = {}
    for query_id, status, answerable, mode, holes in conn.execute(
        f"SELECT query_id, status, answerable, golden_mode, holes FROM queries WHERE query_id "
        f"{_in(query_ids)}",
        query_ids,
    ):
        mine = rows.get(query_id, [])
        found[query_id] = GoldenLabel(
            status,
            bool(answerable),
            mode,
            grades={doc_id: grade for doc_id, grade, *_ in mine},
            order={doc_id: seq for doc_id, _, seq, *_ in mine},
            sources={doc_id: source for doc_id, _, _, source, _ in mine},
            decision_id=mine[0][4] if mine else None,
            holes=holes,
        )
    return found


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
