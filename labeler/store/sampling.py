"""Sampled labelling: the queries the humans label first, drawn at random (stratified by
slice) or actively (more likely where a machine judge is unsure), each with its inclusion
probability, so that an estimate from the humans' labels on them can be trusted (see
docs/labelling.md, "Sampled labelling").

Membership in the sample is decided when it is drawn and changes only when it is drawn
again (``goldset sample``): what annotators skip, reopen or relabel changes labels, never
which queries are in it.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from goldset.labeler import golden
from goldset.labeler.store.machine import MachineJudges

SAMPLING_MODES = ("off", "random", "active")
SAMPLING_KEY = "sampling"  # the settings row holding the sampling settings, as JSON

# Active sampling: each query's inclusion probability is at least this share of the uniform
# one (budget / queries), so that no inverse-probability weight exceeds 1 / FLOOR_SHARE times
# a uniform sample's: a few unlucky queries cannot dominate the estimate.
FLOOR_SHARE = 0.2


def stratified_order(slices: list[str], rng: np.random.Generator) -> np.ndarray:
    """A random order of the queries (given by their slices) in which every prefix holds each
    slice in proportion to its share of the whole, within one query (proportional allocation).

    Systematic within each slice: the slice's queries are shuffled, and its k-th of ``N_s``
    gets the key ``(k + u_s) / N_s`` with one uniform offset ``u_s`` per slice; sorting all the
    keys interleaves the slices evenly. Returns the indices of the queries in that order.
    """
    names = np.asarray(slices, dtype=object)
    keys = np.empty(len(names))
    for name in sorted(set(slices)):
        members = np.flatnonzero(names == name)
        shuffled = rng.permutation(members)
        keys[shuffled] = (np.arange(len(shuffled)) + rng.uniform()) / len(shuffled)
    tie_break = rng.permutation(len(names))  # two slices' keys may be equal
    return np.lexsort((tie_break, keys))


def active_probabilities(uncertainty: np.ndarray, budget: int) -> np.ndarray:
    """Inclusion probabilities rising with ``uncertainty`` (one value >= 0 per query), of
    mean ``budget / len(uncertainty)`` before capping at 1, and at least ``FLOOR_SHARE`` of
    that mean: ``pi_q = min(1, (budget / N) * (FLOOR + (1 - FLOOR) * u_q / mean(u)))``.
    Without any uncertainty (all zero), every query gets the uniform probability."""
    uniform = min(1.0, budget / len(uncertainty))
    mean = float(uncertainty.mean())
    if mean <= 0:
        return np.full(len(uncertainty), uniform)
    share = FLOOR_SHARE + (1 - FLOOR_SHARE) * uncertainty / mean
    return np.minimum(1.0, uniform * share)


# The sample's progress as human_sample counts it, in one statement: labelled, the drawn
# queries before the first one not done; missing, those not done before the last done one.
_PROGRESS_SQL = """
WITH drawn AS (
  SELECT s.rank, q.status = 'done' AS done FROM sample s JOIN queries q ON q.query_id = s.query_id
), bounds AS (
  SELECT (SELECT min(rank) FROM drawn WHERE NOT done) AS first_open,
    (SELECT max(rank) FROM drawn WHERE done) AS last_done
)
SELECT (SELECT value FROM settings WHERE key = ?) AS settings,
  count(*) AS drawn,
  sum(first_open IS NULL OR rank < first_open) AS labelled,
  sum(NOT done AND rank < last_done) AS missing,
  sum(done) AS done
FROM drawn, bounds
"""


class Sampling(MachineJudges):
    """Sampled labelling: the drawn queries, their order and inclusion probabilities."""

    def sampling(self) -> dict:
        """The sampling settings: ``mode`` (off | random | active), ``seed``, ``budget`` (how
        many queries were to be drawn; None: every query), ``judge`` (active: whose
        uncertainty), ``drawn_at``; and the sample's progress: ``drawn`` (queries in it),
        ``labelled`` (counted: see :meth:`human_sample`), ``missing`` (drawn queries not
        done before the last labelled one: skipped or still open) and ``waiting`` (done, but
        after a missing one, so not counted yet)."""
        settings = {"mode": "off", "seed": None, "budget": None, "judge": None, "drawn_at": None}
        # Counted in SQL, not read whole: the dashboard asks on every refresh.
        (row,) = self._rows(_PROGRESS_SQL, (SAMPLING_KEY,))
        stored = row.pop("settings")
        settings.update(json.loads(stored) if stored else {})
        counts = {key: int(value or 0) for key, value in row.items()}
        done = counts.pop("done")
        return {**settings, **counts, "waiting": done - counts["labelled"]}

    def human_sample(self) -> pd.DataFrame:
        """The drawn queries in drawn order: DataFrame(query_id, slice, probability, rank,
        labelled, done); empty when the project is not in sampled mode.

        ``probability`` is the query's inclusion probability (1.0: every query is drawn);
        ``done`` whether its golden status is done (by an annotator or a reviewer);
        ``labelled`` whether it is done *and counted*: every query drawn before it is done
        too. A skipped or unfinished query stops the count there until it is labelled, so
        that skipping the hard queries cannot make the sample look easier than it is.
        """
        with self._reading():
            frame = pd.read_sql_query(
                "SELECT s.query_id, q.slice, s.probability, s.rank, q.status = 'done' AS done "
                "FROM sample s JOIN queries q ON q.query_id = s.query_id ORDER BY s.rank",
                self.conn,
            )
        frame = frame.astype(
            {"query_id": str, "slice": str, "probability": float, "rank": "int64", "done": bool}
        )
        frame["labelled"] = frame["done"].cumprod().astype(bool)
        return frame[["query_id", "slice", "probability", "rank", "labelled", "done"]]

    def draw_sample(
        self,
        mode: str,
        *,
        seed: int = 0,
        budget: int | None = None,
        judge: str | None = None,
    ) -> dict:
        """Draw the sample the humans label first, replacing any earlier one; returns
        :meth:`sampling`.

        ``random``: a seeded random order over every query, stratified by slice
        (:func:`stratified_order`); with ``budget``, its first ``budget`` queries, each slice's
        inclusion probability being its share drawn. ``active``: each query drawn
        independently with probability rising with ``judge``'s uncertainty on it
        (:func:`active_probabilities`, about ``budget`` queries in all), in a random order.
        ``off``: no sample; the queue is the ordinary one.
        """
        if mode not in SAMPLING_MODES:
            raise ValueError(f"sampling mode must be one of {SAMPLING_MODES}, got {mode!r}")
        if budget is not None and (isinstance(budget, bool) or budget < 1):
            raise ValueError(f"the budget must be a number of queries >= 1, got {budget!r}")
        if mode == "active" and (judge is None or budget is None):
            raise ValueError("active sampling needs a judge and a budget")
        rows = self._sample_rows(mode, np.random.default_rng(seed), budget, judge)
        settings = {"mode": mode, "seed": seed, "budget": budget, "judge": judge}
        settings["drawn_at"] = golden.now()
        with self._writing() as conn:
            conn.execute("DELETE FROM sample")
            conn.executemany(
                "INSERT INTO sample (query_id, probability, rank, drawn_at) VALUES (?, ?, ?, ?)",
                [(*row, settings["drawn_at"]) for row in rows],
            )
            conn.execute(
                "INSERT INTO settings (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (SAMPLING_KEY, json.dumps(settings)),
            )
        return self.sampling()

    def _sample_rows(
        self, mode: str, rng: np.random.Generator, budget: int | None, judge: str | None
    ) -> list[tuple[str, float, int]]:
        """The drawn queries as (query_id, probability, rank), rank 1 first."""
        if mode == "off":
            return []
        queries = self._rows("SELECT query_id, slice FROM queries ORDER BY position")
        if not queries:
            raise ValueError("the project holds no query to draw a sample from")
        ids = [query["query_id"] for query in queries]
        if mode == "random":
            order = stratified_order([query["slice"] for query in queries], rng)
            drawn = order[: budget or len(order)]
            probability = self._stratum_shares([queries[i]["slice"] for i in drawn], queries)
            return [(ids[i], probability[queries[i]["slice"]], n + 1) for n, i in enumerate(drawn)]
        probabilities = active_probabilities(self._uncertainty(judge, ids), budget)
        drawn = np.flatnonzero(rng.uniform(size=len(ids)) < probabilities)
        return [
            (ids[i], float(probabilities[i]), n + 1) for n, i in enumerate(rng.permutation(drawn))
        ]

    @staticmethod
    def _stratum_shares(drawn_slices: list[str], queries: list[dict]) -> dict[str, float]:
        """Each slice's inclusion probability: its queries drawn over its queries."""
        sizes = pd.Series([query["slice"] for query in queries]).value_counts()
        drawn = pd.Series(drawn_slices, dtype=object).value_counts()
        return {name: float(drawn.get(name, 0) / size) for name, size in sizes.items()}

    def _uncertainty(self, judge: str, query_ids: list[str]) -> np.ndarray:
        """The judge's uncertainty on each query: the share of its candidates the judge left
        unlabelled, or graded at the edge of relevance: the lowest relevant grade or the
        highest irrelevant one, neither end of the scale (0 and the top grade are no close
        call; a binary scale has no edge grade)."""
        if not self._value("SELECT 1 FROM machine_judgments WHERE judge = ?", (judge,)):
            raise ValueError(f"judge {judge!r} has labelled nothing: run goldset judge first")
        settings = self.settings()
        threshold, top = settings["rel_threshold"], settings["max_grade"]
        edge = [grade for grade in (threshold - 1, threshold) if 0 < grade < top]
        rows = self._rows(
            "SELECT c.query_id, avg(m.grade IS NULL OR m.grade IN (SELECT value FROM "
            "json_each(:edge))) AS unsure FROM candidates c LEFT JOIN machine_judgments m "
            "ON m.judge = :judge AND m.query_id = c.query_id AND m.doc_id = c.doc_id "
            "GROUP BY c.query_id",
            {"judge": judge, "edge": json.dumps(edge)},
        )
        unsure = {row["query_id"]: row["unsure"] for row in rows}
        return np.array([unsure.get(query_id, 1.0) for query_id in query_ids], dtype=float)
