"""Machine judges' labels and calls, kept apart from the human log (see labeler.judges)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

import pandas as pd

from goldset.labeler import golden
from goldset.labeler.store.settings import Settings

# The queries of ``{scope}`` (SQL giving query ids) that wait for a second annotator first:
# one annotator, and only one, has started the query and finished it, nobody decided it, and
# the judge the project trusts (settings key 'second_opinion_judge') disagrees with that
# annotator on the relevance of a pair.
SECOND_OPINIONS_SQL = """
INSERT INTO second_opinions (query_id, position, first_annotator, pairs)
WITH alone AS (
    SELECT query_id, min(annotator) AS annotator FROM query_state
    WHERE query_id IN ({scope}) AND status IN ('in_progress', 'done') GROUP BY query_id
    HAVING count(*) = 1 AND min(status) = 'done'
)
SELECT a.query_id, q.position, a.annotator, count(*)
FROM alone a JOIN queries q ON q.query_id = a.query_id
JOIN labels l ON l.query_id = a.query_id AND l.annotator = a.annotator
JOIN machine_judgments m ON m.query_id = l.query_id AND m.doc_id = l.doc_id
WHERE m.judge = (SELECT value FROM settings WHERE key = 'second_opinion_judge')
AND (l.grade >= :threshold) != (m.grade >= :threshold)
AND NOT EXISTS (SELECT 1 FROM adjudications d WHERE d.query_id = a.query_id)
GROUP BY a.query_id
"""

# The settings rows naming the environment variables an admin allowed a judge's key to come
# from: one row a variable, its key this prefix and the variable's name.
KEY_ENV_SETTING = "judge_key_env:"

# The settings row holding what the trusted judge was when trusted (JSON), and the parts of it
# whose change makes the judge untrusted until calibrated again: (what it is called, its key).
TRUST = "second_opinion_binding"
TRUST_PARTS = (
    ("model", "model"),
    ("prompt", "prompt_sha256"),
    ("grade scale", "grade_scale"),
    ("golden-set version", "golden_version"),
)

JUDGE_CALL_COLUMNS = (
    *("judge", "model", "prompt_sha256", "query_id", "doc_id", "attempt", "outcome", "grade"),
    *("reason", "detail", "prompt_tokens", "completion_tokens", "seconds"),
)


class MachineJudges(Settings):
    """Machine labels under a judge identity ``machine:<name>``, and every call it made."""

    # What record_judge_calls may raise: a value the database cannot hold (ValueError,
    # OverflowError), or the database failing (a full disk, a read-only or locked file).
    RECORD_FAILURES = (ValueError, OverflowError, sqlite3.Error)

    # --- machine judges ---------------------------------------------------------------------------
    # Machine labels live in their own tables, under a judge identity "machine:<name>". Nothing
    # above reads them: the golden set, agreement, the dashboard and every metric stay human.
    # Eval, export and calibration ask for them by judge name (see labeler.judges).

    def record_judge_calls(self, rows: Sequence[Mapping[str, object]]) -> bool:
        """Append one pair's calls (rows of :func:`goldset.labeler.judges.call_rows`, one judge, one
        pair), and, when the last call is ``ok``, the pair's machine label, in one transaction.

        A pair keeps the first label its judge gave it (a rerun skips labelled pairs, so a
        second one comes only from two runs racing). Returns whether a label was stored.
        """
        if not rows:
            return False
        columns = JUDGE_CALL_COLUMNS
        created_at = golden.now()
        with self._writing() as conn:
            call_id = None
            for row in rows:
                cursor = conn.execute(
                    f"INSERT INTO judge_calls ({', '.join(columns)}, created_at) "
                    f"VALUES ({', '.join('?' * len(columns))}, ?)",
                    [row[column] for column in columns] + [created_at],
                )
                call_id = cursor.lastrowid
            last = rows[-1]
            if last["outcome"] != "ok":
                return False
            cursor = conn.execute(
                "INSERT INTO machine_judgments (judge, query_id, doc_id, grade, reason, call_id) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    last["judge"],
                    last["query_id"],
                    last["doc_id"],
                    last["grade"],
                    last["reason"],
                    call_id,
                ),
            )
            if cursor.rowcount:
                self._refresh_second_opinions([last["query_id"]])
            return bool(cursor.rowcount)

    def judge_key_envs(self) -> list[str]:
        """The environment variables an admin allowed a judge's API key to come from, besides
        those always allowed (see :func:`goldset.labeler.judges.key_env_allowed`), sorted."""
        rows = self._rows(
            "SELECT substr(key, ?) AS name FROM settings WHERE substr(key, 1, ?) = ? ORDER BY key",
            (len(KEY_ENV_SETTING) + 1, len(KEY_ENV_SETTING), KEY_ENV_SETTING),
        )
        return [row["name"] for row in rows]

    def allow_judge_key_env(self, name: str) -> None:
        """Allow a judge's API key to come from the environment variable ``name``."""
        with self._writing() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO settings (key, value) VALUES (?, '')",
                (KEY_ENV_SETTING + name,),
            )

    def forget_judge_key_env(self, name: str) -> bool:
        """Take ``name`` off the allowed variables; returns whether it was on them."""
        with self._writing() as conn:
            cursor = conn.execute("DELETE FROM settings WHERE key = ?", (KEY_ENV_SETTING + name,))
            return bool(cursor.rowcount)

    def _refresh_second_opinions(self, query_ids: Sequence[str] | None = None) -> None:
        """Re-derive whether these queries (None: all) wait for a second annotator first
        (see :meth:`second_opinions`), inside the caller's write transaction: after a machine
        label or a human event on them, or in one statement after a bulk re-derivation. A few
        index lookups per query."""
        if self.trusted_judge() is None:  # none named, or its trust no longer holds
            self.conn.execute("DELETE FROM second_opinions")
            return
        if query_ids is None:
            self.conn.execute("DELETE FROM second_opinions")
            scope, params = "SELECT query_id FROM queries", {}
        else:  # one parameter, however many queries (SQLite limits bound parameters)
            scope, params = "SELECT value FROM json_each(:ids)", {"ids": json.dumps(query_ids)}
            self.conn.execute(f"DELETE FROM second_opinions WHERE query_id IN ({scope})", params)
        self.conn.execute(
            SECOND_OPINIONS_SQL.format(scope=scope),
            {**params, "threshold": self.settings()["rel_threshold"]},
        )

    def trust_judge(self, judge: str | None, golden_version: str | None = None) -> None:
        """Name the machine judge (``machine:<name>``) whose disagreements with the one human
        who judged a query send it to a second annotator first, or None for none (the
        default): from now on, and for the labels already stored.

        The trust is bound to what the judge was calibrated as (see :meth:`trust_status`):
        its model and prompt (those of its latest call), the grade scale, and
        ``golden_version``, the version of the golden set it was measured against."""
        if judge is not None and not (isinstance(judge, str) and judge.startswith("machine:")):
            raise ValueError(f"a machine judge is named machine:<name>, got {judge!r}")
        with self._writing() as conn:
            conn.execute(f"DELETE FROM settings WHERE key IN ('second_opinion_judge', '{TRUST}')")
            if judge is not None:
                binding = {**self._judge_binding(judge), "golden_version": golden_version}
                conn.executemany(
                    "INSERT INTO settings (key, value) VALUES (?, ?)",
                    [("second_opinion_judge", judge), (TRUST, json.dumps(binding))],
                )
            self._refresh_second_opinions()

    def _judge_binding(self, judge: str) -> dict:
        """What a judge is now: the model and prompt hash of its latest call (None before it
        made one), and the project's grade scale 0..``max_grade`` it grades on (the relevance
        threshold is applied to its grades afterwards, as to the humans')."""
        call = self._rows(
            "SELECT model, prompt_sha256 FROM judge_calls WHERE judge = ? ORDER BY id DESC LIMIT 1",
            (judge,),
        )
        settings = self.settings()
        return {
            "model": call[0]["model"] if call else None,
            "prompt_sha256": call[0]["prompt_sha256"] if call else None,
            "grade_scale": settings["max_grade"],
        }

    def trust_status(self, golden_version: str | None = None) -> dict | None:
        """The trusted judge and whether its trust still holds, or None when none is named:
        a dict of ``judge``, ``trusted`` (bool), ``changed`` (what changed since it was
        trusted, among "model", "prompt", "grade scale" and "golden-set version") and
        ``bound`` / ``now`` (the binding then and now). The golden set's version is compared
        when the caller gives it (reading the golden set is the caller's); a model or prompt
        unknown when trusted (the judge had made no call) is not compared."""
        judge = self._value("SELECT value FROM settings WHERE key = 'second_opinion_judge'")
        if judge is None:
            return None
        stored = self._value("SELECT value FROM settings WHERE key = ?", (TRUST,))
        bound = json.loads(stored) if stored else {}
        now = {**self._judge_binding(judge), "golden_version": golden_version}
        if not bound:  # trusted by an older goldset, which kept no binding: calibrate again
            changed = ["binding (not recorded when trusted)"]
        else:
            changed = [
                name
                for name, key in TRUST_PARTS
                if None not in (bound[key], now[key]) and bound[key] != now[key]
            ]
        return {
            "judge": judge,
            "trusted": not changed,
            "changed": changed,
            "bound": bound,
            "now": now,
        }

    def trusted_judge(self) -> str | None:
        """The judge named by :meth:`trust_judge` while its model, prompt and grade scale are
        those it was trusted with (see :meth:`trust_status`), else None."""
        status = self.trust_status()
        return status["judge"] if status is not None and status["trusted"] else None

    def second_opinions(self) -> list[dict]:
        """The queries offered first to every annotator but the one who judged them (see
        :meth:`Store.next_query`), in queue order: query_id, first_annotator and ``pairs``, how
        many of its pairs the trusted judge (:meth:`trust_judge`) labelled otherwise (relevant
        or not) than that annotator. A query is on this list while one annotator alone has
        started it and finished it, that judge disagrees with them on a pair and no reviewer
        decided it; once a second annotator starts it, it is back in the ordinary queue."""
        return self._rows(
            "SELECT query_id, first_annotator, pairs FROM second_opinions ORDER BY position"
        )

    def machine_pairs(
        self,
        judge: str,
        *,
        run: str | None = None,
        depth: int = 10,
        pairs: Sequence[tuple[str, str]] | None = None,
        holes_only: bool = False,
        limit: int | None = None,
    ) -> list[dict]:
        """The pairs ``judge`` has not labelled yet, with what it reads: dicts of query_id,
        doc_id, query, title, text, in queue order then rank.

        Which pairs: ``pairs`` (query_id, doc_id) in their order (a new run's top k; pairs
        whose query or document the project lacks are left out), else pooled run ``run``'s
        top ``depth``, else every candidate of the project. ``holes_only`` leaves out pairs with a
        golden label (a human's, or a reviewer's decision): what is left are the holes to fill.
        """
        if pairs is not None:
            wanted = (
                "SELECT json_extract(value, '$[0]') AS query_id, "
                "json_extract(value, '$[1]') AS doc_id, CAST(key AS INTEGER) AS rank "
                "FROM json_each(:pairs)"
            )
        elif run is not None:
            if not self._value("SELECT 1 FROM runs WHERE name = ?", (run,)):
                raise ValueError(f"no pooled run named {run!r}")
            wanted = (
                "SELECT query_id, doc_id, rank FROM pool_ranks WHERE run = :run AND rank <= :depth"
            )
        else:
            wanted = "SELECT query_id, doc_id, position AS rank FROM candidates"
        holes = (  # a hole: no golden label (the one merge rule, see golden_rows)
            "AND NOT EXISTS (SELECT 1 FROM golden_judgments g WHERE g.query_id = w.query_id "
            "AND g.doc_id = w.doc_id) "
            if holes_only
            else ""
        )
        return self._rows(
            f"WITH wanted AS ({wanted}) "
            "SELECT w.query_id, w.doc_id, q.query, d.title, d.text FROM wanted w "
            "JOIN queries q ON q.query_id = w.query_id JOIN documents d ON d.doc_id = w.doc_id "
            "WHERE NOT EXISTS (SELECT 1 FROM machine_judgments m WHERE m.judge = :judge "
            f"AND m.query_id = w.query_id AND m.doc_id = w.doc_id) {holes}"
            "ORDER BY q.position, w.rank LIMIT :limit",
            {
                "judge": judge,
                "run": run,
                "depth": depth,
                "pairs": json.dumps([list(pair) for pair in pairs or ()]),
                "limit": -1 if limit is None else limit,
            },
        )

    def machine_judges(self) -> list[dict]:
        """Every machine judge with its figures: judge, labels, calls, failed calls, tokens,
        seconds (summed over calls) and the models it used. A token count that is not a
        count (negative: kept by an older goldset) is left out; the sums are taken as floats
        (``total``), so that counts near 2^63 add up instead of overflowing SQLite's integers."""
        return self._rows(
            "SELECT c.judge, coalesce(m.labels, 0) AS labels, count(*) AS calls, "
            "sum(c.outcome != 'ok') AS failed_calls, "
            "CAST(total(max(c.prompt_tokens, 0)) AS INTEGER) AS prompt_tokens, "
            "CAST(total(max(c.completion_tokens, 0)) AS INTEGER) AS completion_tokens, "
            "sum(c.seconds) AS seconds, group_concat(DISTINCT c.model) AS models "
            "FROM judge_calls c LEFT JOIN (SELECT judge, count(*) AS labels "
            "FROM machine_judgments GROUP BY judge) m ON m.judge = c.judge "
            "GROUP BY c.judge ORDER BY c.judge"
        )

    def machine_judgments_frame(self, judge: str) -> pd.DataFrame:
        """The judge's labels, as :class:`goldset.eval.readers.Golden` judgments:
        DataFrame(query_id, doc_id, grade)."""
        with self._reading():
            frame = pd.read_sql_query(
                "SELECT query_id, doc_id, grade FROM machine_judgments WHERE judge = ?",
                self.conn,
                params=(judge,),
            )
        return frame.astype({"query_id": str, "doc_id": str, "grade": "int64"})

    def judge_calls_frame(self, judge: str) -> pd.DataFrame:
        """Every call the judge made, oldest first: DataFrame(query_id, doc_id, attempt,
        outcome, model, prompt_sha256, prompt_tokens, completion_tokens, seconds, created_at)."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT query_id, doc_id, attempt, outcome, model, prompt_sha256, "
                "prompt_tokens, completion_tokens, seconds, created_at FROM judge_calls "
                "WHERE judge = ? ORDER BY id",
                self.conn,
                params=(judge,),
            )
