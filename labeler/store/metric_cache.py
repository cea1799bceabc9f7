"""The dashboard's figures kept between server lives (the SQL; the encoding is live.kept's)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from goldset.labeler import golden
from goldset.labeler.store.connection import Connection, chunks, qmarks
from goldset.labeler.store.corpus import UNPUBLISHED_HIDDEN
from goldset.labeler.store.frames import DONE_PASSES


class MetricCache(Connection):
    """The last figures the dashboard computed for each view, with the marks of their state."""

    def saved_figures(self, view: str) -> dict | None:
        """The figures kept for ``view``: ``{"marks", "figures", "seconds", "saved_at"}`` (JSON
        texts, the seconds computing them took, a UTC time), or None when none were kept."""
        rows = self._rows(
            "SELECT marks, figures, seconds, saved_at FROM dashboard_figures WHERE view = ?",
            (view,),
        )
        return rows[0] if rows else None

    def labels_changed_since(self, event: int | None, adjudication: int | None) -> list[str]:
        """The queries whose golden labels may differ from what they were when ``event`` and
        ``adjudication`` were the last ids (the ``events`` and ``adjudications`` dashboard
        marks; None: there were none): the queries of every later event and decision."""
        return [
            row["query_id"]
            for row in self._rows(
                "SELECT query_id FROM events WHERE id > ? UNION "
                "SELECT query_id FROM adjudications WHERE id > ?",
                (event or 0, adjudication or 0),
            )
        ]

    def save_figures(self, view: str, marks: str, figures: str, seconds: float) -> None:
        """Keep ``figures`` (JSON) for ``view``, computed at the state with ``marks`` (JSON)
        in ``seconds``, in place of the figures kept before. The dashboard marks do not move
        (no label, record or setting changes), so saving never makes the figures stale."""
        with self._writing():
            self.conn.execute(
                "INSERT INTO dashboard_figures (view, marks, figures, seconds, saved_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (view) DO UPDATE SET marks = excluded.marks, "
                "figures = excluded.figures, seconds = excluded.seconds, "
                "saved_at = excluded.saved_at",
                (view, marks, figures, seconds, golden.now()),
            )

    def events_after(self, event: int | None) -> pd.DataFrame:
        """The log's events after id ``event`` (None: all), as the dashboard's work figures
        need them: DataFrame(id, query_id, annotator, action, seconds, hour), ``hour`` the
        UTC hour of the event (``YYYY-MM-DDTHH``), in id order. An unpublished import's
        events are left out, as :meth:`judgement_seconds` leaves them out (its publication
        adds queries: the dashboard marks move, and the dashboard reads every event again)."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT id, query_id, annotator, action, seconds, substr(created_at, 1, 13) "
                f"AS hour FROM events WHERE id > ? AND ({UNPUBLISHED_HIDDEN}) ORDER BY id",
                self.conn,
                params=(event or 0,),
            )

    def completed_depths_of(self, query_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """:meth:`completed_depths` of ``query_ids`` only (None: of every query), with the
        query: DataFrame(query_id, annotator, docs_read, seconds)."""
        with self._reading():
            if query_ids is None:
                return pd.read_sql_query(DONE_PASSES, self.conn)
            frames = [
                pd.read_sql_query(
                    f"{DONE_PASSES} AND s.query_id IN ({qmarks(ids)})", self.conn, params=ids
                )
                for ids in chunks(query_ids)
            ]
        columns = ["query_id", "annotator", "docs_read", "seconds"]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
