"""Bulk frames for eval and the dashboard, and the run history."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pandas as pd

from goldset.labeler import golden
from goldset.labeler.store.corpus import UNPUBLISHED_HIDDEN, published
from goldset.labeler.store.settings import Settings

JUDGEMENT_ACTIONS = ("judge", "attach")  # the events that are judgements made

# Each done pass (one annotator's work on one query): the docs it read and its active seconds
# (all its events', idle capped). A doc read is one the pass holds a grade for: judged one by
# one, attached from search, or answered for by its verdict — U/M grades 0 every candidate
# not judged before it, and saying that none is relevant takes reading them.
DONE_PASSES = (
    "SELECT s.query_id, s.annotator, (SELECT count(*) FROM labels l "
    "WHERE l.query_id = s.query_id AND l.annotator = s.annotator) AS docs_read, s.seconds "
    f"FROM query_state s WHERE s.status = 'done' AND {published('s.query_id')}"
)


class Frames(Settings):
    """Bulk frames for eval and the dashboard, and the run history."""

    def events_frame(self, query_id: str | None = None) -> pd.DataFrame:
        """The judgement log as a DataFrame (id, query_id, doc_id, annotator, action, grade,
        mode, seconds, note, undoes, created_at, undone), oldest first."""
        where, params = ("WHERE query_id = ?", (query_id,)) if query_id is not None else ("", ())
        where = f"{where or 'WHERE true'} AND ({UNPUBLISHED_HIDDEN})"
        with self._reading():
            frame = pd.read_sql_query(
                "SELECT id, query_id, doc_id, annotator, action, grade, mode, seconds, note, "
                f"undoes, created_at, EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id) "
                f"AS undone FROM events e {where} ORDER BY id",
                self.conn,
                params=params,
            )
        return frame.astype({"undone": bool})

    def dashboard_marks(self) -> dict[str, object]:
        """Cheap marks that change whenever a dashboard figure can change: the last
        ``events``, ``adjudications``, ``queries`` and ``records`` (run history), the pooled
        ``runs`` and the ``settings``. Caches key on them."""
        names = ("events", "adjudications", "queries", "records", "runs")
        with self._reading():
            marks = self.conn.execute(
                "SELECT (SELECT max(id) FROM events), (SELECT max(id) FROM adjudications), "
                "(SELECT max(position) FROM queries), (SELECT max(id) FROM eval_records), "
                "(SELECT count(*) || ':' || total(depth) FROM runs)"
            ).fetchone()
            settings = tuple(sorted(self.settings().items()))
        return {**dict(zip(names, marks, strict=True)), "settings": settings}

    def pooled_run_names(self) -> list[str]:
        """The names of the pooled runs, sorted (a cheap read, unlike :meth:`status`)."""
        return [row["name"] for row in self._rows("SELECT name FROM runs ORDER BY name")]

    def golden_frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The golden set as the two frames of :class:`goldset.eval.readers.Golden`, read in bulk
        from the golden projection (the labels of :meth:`golden_records`, without building a
        record per query).

        ``queries``: query_id, query, slice, status (done, skipped or pending), answerable and
        mode, in queue order. ``judgments`` (in no particular order): query_id, doc_id, grade.
        """
        with self._reading():
            queries = pd.read_sql_query(
                "SELECT query_id, query, slice, status, answerable, "
                "coalesce(golden_mode, :mode) AS mode FROM queries ORDER BY position",
                self.conn,
                params={"mode": self.settings()["mode"]},
            )
            judgments = pd.read_sql_query(
                f"SELECT query_id, doc_id, grade FROM golden_judgments WHERE {published()}",
                self.conn,
            )
        queries["status"] = queries["status"].map(golden.EXPORTED_STATUS)
        return (
            queries.astype({"answerable": bool}),
            judgments.astype({"query_id": str, "doc_id": str, "grade": "int64"}),
        )

    def top_ranked_frame(self, run: str | None, depth: int) -> pd.DataFrame:
        """:meth:`candidate_run_frame` cut to each query's top ``depth``, read in bulk: all
        that metrics with cutoffs below ``depth`` look at. DataFrame(query_id, doc_id, score)."""
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, got {depth!r}")
        with self._reading():
            if run is None:
                frame = pd.read_sql_query(
                    "SELECT query_id, doc_id, imported_rank AS rank FROM candidates "
                    f"WHERE imported_rank <= :depth AND {published()} UNION ALL "
                    "SELECT query_id, doc_id, position FROM candidates WHERE position <= :depth "
                    f"AND {published()} AND query_id NOT IN "
                    "(SELECT query_id FROM candidates WHERE imported_rank IS NOT NULL)",
                    self.conn,
                    params={"depth": depth},
                )
                frame["score"] = 1.0 / frame.pop("rank")  # as candidate_run_frame scores them
            else:
                if not self._value("SELECT 1 FROM runs WHERE name = ?", (run,)):
                    raise ValueError(f"no pooled run named {run!r}")
                frame = pd.read_sql_query(
                    "SELECT query_id, doc_id, score FROM pool_ranks WHERE run = ? AND rank <= ?",
                    self.conn,
                    params=(run, depth),
                )
        return frame.astype({"query_id": str, "doc_id": str, "score": "float64"})

    def active_seconds(self) -> pd.DataFrame:
        """The idle-capped active seconds of every action in the log — judgements, U/M
        verdicts, skips, attachments (with the search before them), undone ones too: the time
        was spent. Their sum is the time spent labelling: DataFrame(annotator, action, seconds)."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT annotator, action, seconds FROM events "
                f"WHERE ({UNPUBLISHED_HIDDEN}) ORDER BY id",
                self.conn,
            )

    def judgement_seconds(self) -> pd.DataFrame:
        """Active seconds of every judgement in the log (judge and attach events, undone ones
        too): DataFrame(annotator, seconds)."""
        seconds = self.active_seconds()
        judgements = seconds[seconds["action"].isin(JUDGEMENT_ACTIONS)]
        return judgements[["annotator", "seconds"]].reset_index(drop=True)

    def completed_depths(self) -> pd.DataFrame:
        """Every completed pass (one per query and annotator done): the docs it read and its
        active seconds (see :data:`DONE_PASSES`): DataFrame(annotator, docs_read, seconds)."""
        with self._reading():
            return pd.read_sql_query(
                f"SELECT annotator, docs_read, seconds FROM ({DONE_PASSES})", self.conn
            )

    def judgements_per_hour(self, since: str = "") -> pd.DataFrame:
        """Judgements (judge and attach events) per UTC hour and annotator, from the log time
        ``since`` on: DataFrame(hour ``YYYY-MM-DDTHH``, annotator, judgements), oldest first."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT substr(created_at, 1, 13) AS hour, annotator, count(*) AS judgements "
                "FROM events WHERE action IN ('judge', 'attach') AND created_at >= ? "
                f"AND ({UNPUBLISHED_HIDDEN}) "
                "GROUP BY hour, annotator ORDER BY hour, annotator",
                self.conn,
                params=(since,),
            )

    def record_eval(
        self,
        *,
        run: str,
        run_sha256: str,
        golden_version: str,
        tags: Mapping[str, str],
        queries: Mapping,
        metrics: Mapping[str, float | None],
        slices: Mapping[str, Mapping[str, float | None]],
    ) -> int:
        """Keep one evaluation's figures in the run history; returns the record id.

        ``queries`` is the report's query accounting, ``metrics`` {metric: mean} and ``slices``
        {slice: {metric: mean}}: :func:`goldset.labeler.history.record_report` reads them off a
        report.
        """
        record = {
            "recorded_at": golden.now(),
            "run": run,
            "run_sha256": run_sha256,
            "golden_version": golden_version,
            "tags": json.dumps(dict(tags), sort_keys=True),
            "queries": json.dumps(queries),
            "metrics": json.dumps(metrics),
            "slices": json.dumps(slices),
        }
        with self._writing():
            cursor = self.conn.execute(
                f"INSERT INTO eval_records ({', '.join(record)}) "
                f"VALUES ({', '.join('?' * len(record))})",
                list(record.values()),
            )
        return int(cursor.lastrowid)

    def eval_history(self) -> list[dict]:
        """Every recorded evaluation, oldest first, with its JSON fields decoded."""
        rows = self._rows("SELECT * FROM eval_records ORDER BY id")
        for row in rows:
            for field in ("tags", "queries", "metrics", "slices"):
                row[field] = json.loads(row[field])
        return rows

    def candidate_run_frame(self, run: str | None = None) -> pd.DataFrame:
        """A run to evaluate straight from the database: DataFrame(query_id, doc_id, score).

        With no ``run``: the imported candidate lists (the system that produced them) — for a
        pooled query without an imported list, its fused display order. Scores are derived
        from the rank (1 / rank), so trec_eval's ordering reproduces the list order exactly.
        With a pooled run's name: that run's top-k as pooled, with its own scores.
        """
        with self._reading():
            if run is None:
                rows = self.conn.execute(
                    "SELECT query_id, doc_id, coalesce(imported_rank, position) FROM candidates c "
                    f"WHERE {published('c.query_id')} AND (imported_rank IS NOT NULL OR NOT EXISTS "
                    "(SELECT 1 FROM candidates i WHERE i.query_id = c.query_id "
                    "AND i.imported_rank IS NOT NULL)) "
                    "ORDER BY query_id, 3"
                ).fetchall()
                rows = [(query_id, doc_id, 1.0 / rank) for query_id, doc_id, rank in rows]
            else:
                if not self._value("SELECT 1 FROM runs WHERE name = ?", (run,)):
                    raise ValueError(f"no pooled run named {run!r}")
                rows = self.conn.execute(
                    "SELECT query_id, doc_id, score FROM pool_ranks WHERE run = ? "
                    "ORDER BY query_id, rank",
                    (run,),
                ).fetchall()
        frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
        return frame.astype({"query_id": str, "doc_id": str, "score": "float64"})
