"""Ranking a run the way trec_eval does, joined with the judgements, for all queries at once.

A run becomes a :class:`Ranking`: the retrieved rows of every scored query, sorted as
trec_eval sorts them (query, then score descending, then doc_id descending in byte order),
each with its rank and its judged grade. The metrics (:mod:`goldset.eval.metrics`) are small
functions over those flat arrays.

Ranking ten million rows stays cheap because little work touches every row: runs are
usually written query by query, best first, so most often no row moves at all; only the
top rows that the metrics look at (and the rows tied with the last of them) have their
doc ids compared or joined with the judgements. A ranking built that way knows how deep it
goes (:attr:`Ranking.ranked_to`) and refuses a question about ranks it does not hold.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from goldset.eval.columns import (
    PairIndex,
    as_strings,
    filter_rows,
    lookup,
    sort_order,
    take_distinct,
    take_rows,
)
from goldset.eval.groups import ranges
from goldset.eval.readers import Golden, Run
from goldset.eval.threads import concurrently, worth_threads

if TYPE_CHECKING:  # a small file's ids are numpy arrays: pyarrow is imported only for a large one
    import pyarrow as pa

NOT_RANKED = np.iinfo(np.int64).max  # first_relevant_rank of a query with no relevant doc
FIRST_HIT = "first_hit"  # the golden set's labelling mode where only the first hit is known


def comparable_scores(scores: np.ndarray, single_precision: bool = False) -> np.ndarray:
    """Scores as trec_eval compares them: as doubles (trec_eval 10.0), or with
    ``single_precision`` as C floats (trec_eval 9 and pytrec_eval), where ``1.00000001``
    ties with ``1.0`` (broken by doc id) and a double beyond float32's range is infinite.
    Every comparison of scores in eval (ranking, ties at a cutoff, abstention) goes through this.

    >>> comparable_scores(np.array([1.00000001, 1.0, 1e300]), single_precision=True)
    array([ 1.,  1., inf], dtype=float32)
    """
    as_double = np.asarray(scores, dtype=np.float64)
    if not single_precision:
        return as_double
    with np.errstate(over="ignore"):
        return as_double.astype(np.float32)


# A counting sort of the ideal grades takes a count per query and grade: worth it while there
# are no more counts than this many per positive judgement (see _ideal_grades).
COUNTING_CELLS_PER_GRADE = 8


@dataclass(frozen=True, eq=False)
class Ranking:
    """A run ranked and joined with the judgements; rows grouped by query, best first.

    Per row: ``query_index`` (into ``query_ids``), ``rank`` (1-based), ``score`` (as compared,
    see :func:`comparable_scores`), ``grade``
    (0 when unjudged), ``judged`` and ``relevant``. Per query: ``retrieved`` (docs the run
    returned, within ``depth``; more than the rows kept when only the top ranks are needed),
    ``relevant_count`` (judged docs with grade >= threshold), ``ideal_grades`` (the
    grades > 0 of all its judged docs, sorted best first, as a padded 2-D array) and
    ``first_hit`` (labelled in first-hit mode: only its first relevant doc is known).

    ``ranked_to`` is how many top ranks each query holds (None: all of them), and
    ``to_first_relevant`` whether queries with no relevant doc among those were ranked
    further, down to their first relevant doc. Questions about deeper ranks are refused
    (:meth:`top`, :meth:`first_relevant_within`) rather than answered from missing rows.
    """

    query_ids: np.ndarray
    query_index: np.ndarray
    rank: np.ndarray
    score: np.ndarray
    grade: np.ndarray
    judged: np.ndarray
    relevant: np.ndarray
    retrieved: np.ndarray
    relevant_count: np.ndarray
    ideal_grades: np.ndarray
    first_hit: np.ndarray
    ranked_to: int | None = None
    to_first_relevant: bool = False

    @property
    def query_count(self) -> int:
        return len(self.query_ids)

    def per_query_sum(self, weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Sum ``weights`` over the rows selected by ``mask``, per query."""
        return np.bincount(
            self.query_index[mask], weights=weights[mask], minlength=self.query_count
        )

    def top(self, k: int) -> np.ndarray:
        """The rows ranked within the top ``k`` (a mask), once it is sure they are all here."""
        if self.ranked_to is not None and k > self.ranked_to:
            raise ValueError(
                f"this ranking holds only the top {self.ranked_to} ranks of each query; "
                f"a cutoff of {k} needs the top {k}: rank the run for that metric "
                "(rank_run's metrics) or for every rank (metrics=None)"
            )
        return self.rank <= k

    def first_relevant_within(self, k: int | None) -> np.ndarray:
        """Rank of each query's first relevant row within the top ``k`` (None: at any rank);
        ``NOT_RANKED`` where there is none."""
        if k is not None:
            self.top(k)  # refuses a cutoff deeper than the ranking
        elif self.ranked_to is not None and not self.to_first_relevant:
            raise ValueError(
                f"this ranking holds only the top {self.ranked_to} ranks of each query; "
                "mrr without a cutoff needs each query ranked down to its first relevant doc: "
                "rank the run for 'mrr' (rank_run's metrics) or for every rank (metrics=None)"
            )
        first = self.first_relevant_rank
        return first if k is None else np.where(first <= k, first, NOT_RANKED)

    @cached_property
    def first_relevant_rank(self) -> np.ndarray:
        """Rank of each query's first relevant row among the rows held; ``NOT_RANKED`` where
        there is none."""
        first = np.full(self.query_count, NOT_RANKED, dtype=np.int64)
        relevant_queries = self.query_index[self.relevant]
        # Rows are sorted by query then rank, so a query's first relevant row comes first.
        starts = np.flatnonzero(np.diff(relevant_queries, prepend=-1) != 0)
        first[relevant_queries[starts]] = self.rank[self.relevant][starts]
        return first


def rank(
    golden: Golden,
    run: Run,
    *,
    top: int | None = None,
    to_first_relevant: bool = False,
    rel_threshold: int = 1,
    depth: int | None = None,
    keep_order: bool = False,
    abstain_below: float | None = None,
    single_precision: bool = False,
) -> Ranking:
    """Rank ``run`` over the golden set's scored queries (answerable and done).

    Rows are in :func:`run_order` (ties in score broken by doc_id descending, as trec_eval
    does); ``keep_order`` uses the file's own order instead. ``depth`` keeps only each
    query's top ``depth`` docs (trec_eval ``-M``). With ``abstain_below``, a query whose best
    score is below it returns nothing. ``single_precision``: scores compare as trec_eval 9's
    (:func:`comparable_scores`).
    Queries absent from the run are kept with no rows, so every metric gives them 0.

    ``top`` keeps only each query's top ``top`` ranks (None: all rows), extended over a score
    tie at the last of them so that the tie-break decides what is in: joining fewer rows with
    the judgements is faster. ``to_first_relevant`` ranks in full the queries that have no
    relevant doc in those ranks (what ``mrr`` without a cutoff needs), and only those.
    """
    query_ids = golden.scored_query_ids()
    limit = min((cutoff for cutoff in (depth, top) if cutoff is not None), default=None)

    def query_runs() -> tuple[_QueryRuns, np.ndarray]:
        runs = _query_runs(run, query_ids, not keep_order, single_precision)
        if abstain_below is not None:
            floor = comparable_scores(abstain_below, single_precision)
            runs = runs.select(_best_scores(runs) >= floor)
        retrieved = np.zeros(len(query_ids), dtype=np.int64)
        retrieved[runs.query] = runs.length if depth is None else np.minimum(runs.length, depth)
        return runs, retrieved

    def graded(runs: _QueryRuns) -> _Ranked:
        ranked = _Ranked.of(run, runs, limit, keep_order, len(query_ids))
        return ranked.with_grades(judgments, rel_threshold)

    # The judgements' side needs only the golden set: it is indexed while the run's rows are
    # grouped (unless a caller indexed it already, see prepare). Then each half of the
    # queries is ranked and graded on its own thread.
    threads = worth_threads(len(run.query_index))
    judgments, (runs, retrieved) = concurrently(
        lambda: _judgments_of(golden), query_runs, threads=threads
    )
    halves = runs.split(2 if threads else 1)
    rows = _Ranked.joined(
        concurrently(*(partial(graded, half) for half in halves), threads=threads)
    )
    if to_first_relevant and limit is not None:
        found = np.zeros(len(query_ids), dtype=bool)
        found[rows.query_index[rows.relevant]] = True
        kept = np.bincount(rows.query_index, minlength=len(query_ids))
        deeper = ~found & (retrieved > kept)
        if deeper.any():
            more = _Ranked.of(
                run, runs.select(deeper[runs.query]), depth, keep_order, len(query_ids)
            )
            rows = rows.replaced_by(more.with_grades(judgments, rel_threshold), deeper)
    return Ranking(
        query_ids=query_ids,
        query_index=rows.query_index,
        rank=rows.rank,
        score=rows.score,
        grade=rows.grade,
        judged=rows.judged,
        relevant=rows.relevant,
        retrieved=retrieved,
        relevant_count=judgments.relevant_count(rel_threshold),
        ideal_grades=judgments.ideal_grades,
        first_hit=first_hit_queries(golden, query_ids),
        ranked_to=top,
        to_first_relevant=to_first_relevant,
    )


class RunOrder(NamedTuple):
    """A run's rows in eval's order (:func:`run_order`): per row kept, its position in the
    run's file (``row``), its query (``query_index``, into the run's ``query_ids``) and its
    ``rank`` (1-based)."""

    row: np.ndarray
    query_index: np.ndarray
    rank: np.ndarray


def run_order(run: Run, top: int | None = None, *, single_precision: bool = False) -> RunOrder:
    """goldset's one order of a run: each query's rows best first, by score descending (as
    compared, :func:`comparable_scores`), ties by doc_id descending in byte order (trec_eval's
    order); every query of ``run.query_ids`` in turn, each cut to its top ``top`` ranks (None:
    every row). :func:`rank` orders a run through the same steps, and pooling pools and fuses
    runs with this function, so a pool's depth k of a run holds the docs eval ranks in its
    top k.

    >>> ids = np.array(["q1"], dtype=object)
    >>> run = Run(ids, np.zeros(3, np.int64), np.array(["a", "c", "b"], dtype=object),
    ...           np.array([1.0, 2.0, 1.0]), "r")
    >>> run_order(run).row.tolist()  # c (2.0), then the tie of a and b: b first
    [1, 2, 0]
    """
    runs = _query_runs(run, run.query_ids, True, single_precision)
    ranked = _Ranked.of(run, runs, top, False, len(run.query_ids))
    return RunOrder(ranked.rows, ranked.query_index, ranked.rank)


# Each golden set's judgements indexed for rank, kept while the golden set lives: indexing
# is half the cost of a ranking, and every run ranked against one golden set shares it.
_INDEXED: weakref.WeakKeyDictionary[Golden, _Judgments] = weakref.WeakKeyDictionary()


def prepare(golden: Golden) -> Golden:
    """Do now the work of :func:`rank` that needs only the golden set (index its judgements)
    and hash its :attr:`~eval.readers.Golden.version`; returns it.

    What it computes is kept with the golden set, so a caller reading a run meanwhile (on
    another thread, see :func:`concurrently`) takes it off the ranking's critical path.
    """
    threads = worth_threads(len(golden.judgment_column("grade")))
    concurrently(lambda: _judgments_of(golden), lambda: golden.version, threads=threads)
    return golden


def _judgments_of(golden: Golden) -> _Judgments:
    """The golden set's judgements of its scored queries, indexed once per golden set."""
    judgments = _INDEXED.get(golden)
    if judgments is None:
        judgments = _INDEXED[golden] = _Judgments.of(golden, golden.scored_query_ids())
    return judgments


def first_hit_queries(golden: Golden, query_ids: np.ndarray) -> np.ndarray:
    """Per query id, whether the golden set says it was labelled in first-hit mode."""
    return (golden.query_values("mode", query_ids) == FIRST_HIT).astype(bool)


# The ranking's own records are named tuples, not dataclasses: a dataclass is built at import,
# on the start-up of every eval, and a named tuple is much quicker to build (measured:
# bench/README.md, "Figures behind design choices").
class _Ranked(NamedTuple):
    """Ranked rows, grouped by query (ascending) and best first: per row its query index,
    rank, score, doc id and position in the run; once ``with_grades``, its grade, judged and
    relevant flags instead of the last two."""

    query_index: np.ndarray
    rank: np.ndarray
    score: np.ndarray
    doc_ids: pa.Array | np.ndarray | None
    grade: np.ndarray | None = None
    judged: np.ndarray | None = None
    relevant: np.ndarray | None = None
    rows: np.ndarray | None = None  # each row's position in the run (until graded)

    @classmethod
    def of(
        cls, run: Run, runs: _QueryRuns, limit: int | None, keep_order: bool, query_count: int
    ) -> _Ranked:
        """The top ``limit`` rows (all when None) of each query of ``runs``."""
        query_index, score, doc_ids, rows = _ranked_rows(run.doc_ids, runs, limit, keep_order)
        rank = _rank_within_groups(query_index, query_count)
        if limit is not None:
            top = rank <= limit
            query_index, score, rank, rows = query_index[top], score[top], rank[top], rows[top]
            doc_ids = filter_rows(doc_ids, top)
        return cls(query_index, rank, score, doc_ids, rows=rows)

    def with_grades(self, judgments: _Judgments, rel_threshold: int) -> _Ranked:
        """These rows with their grades (the doc ids are no longer needed)."""
        grade, judged = judgments.grades_of(self.query_index, self.doc_ids)
        relevant = judged & (grade >= rel_threshold)
        return _Ranked(self.query_index, self.rank, self.score, None, grade, judged, relevant)

    @staticmethod
    def joined(parts: Sequence[_Ranked]) -> _Ranked:
        """Graded rows of consecutive ranges of queries (see :meth:`_QueryRuns.split`), as one."""
        if len(parts) == 1:
            return parts[0]
        fields = ("query_index", "rank", "score", "grade", "judged", "relevant")
        joined = {name: np.concatenate([getattr(part, name) for part in parts]) for name in fields}
        return _Ranked(**joined, doc_ids=None)

    def replaced_by(self, other: _Ranked, queries: np.ndarray) -> _Ranked:
        """These judged rows, where the queries flagged in ``queries`` take ``other``'s rows."""
        keep = ~queries[self.query_index]
        fields = ("query_index", "rank", "score", "grade", "judged", "relevant")
        joined = {
            name: np.concatenate([getattr(self, name)[keep], getattr(other, name)])
            for name in fields
        }
        # Each query's rows come from one side, already best first: a stable sort by query
        # puts the queries back in order without moving any row within its query.
        order = np.argsort(joined["query_index"], kind="stable")
        return _Ranked(**{name: values[order] for name, values in joined.items()}, doc_ids=None)


class _QueryRuns(NamedTuple):
    """A run's rows for the scored queries, laid out so that each query's rows, ranked,
    hold consecutive positions.

    ``order`` maps positions to rows of the run (None: each position is that row);
    ``score`` is the score at each position. Per query, in ascending ``query`` (index into
    the scored query ids): ``start`` and ``length`` of its positions. Within a query, rows
    are in score order (equal scores in file order), or in file order for ``keep_order``.
    """

    order: np.ndarray | None
    score: np.ndarray
    start: np.ndarray
    length: np.ndarray
    query: np.ndarray

    def select(self, keep: np.ndarray) -> _QueryRuns:
        """Only the queries where ``keep`` (booleans, or a slice) is true."""
        return _QueryRuns(
            self.order, self.score, self.start[keep], self.length[keep], self.query[keep]
        )

    def split(self, parts: int) -> list[_QueryRuns]:
        """These queries in ``parts`` consecutive ranges of about as many rows each."""
        if parts == 1:
            return [self]
        total = np.cumsum(self.length)
        ends = np.searchsorted(total, total[-1] * np.arange(1, parts) / parts) if len(total) else []
        bounds = [0, *(int(end) for end in ends), len(self.length)]
        return [self.select(slice(a, b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _query_runs(
    run: Run, query_ids: np.ndarray, by_score: bool, single_precision: bool
) -> _QueryRuns:
    """Group the run's rows by scored query (``query_ids``), ranked by score when ``by_score``."""
    score = comparable_scores(run.scores, single_precision)
    # Where each run of rows of one query begins, and that query's index in query_ids.
    query_index = run.query_index
    begins_run = np.ones(len(query_index), dtype=bool)
    begins_run[1:] = query_index[1:] != query_index[:-1]
    starts = np.flatnonzero(begins_run)
    scored_position = (
        np.arange(len(query_ids))  # a run of the golden set's queries, in its order: no lookup
        if same_ids(run.query_ids, query_ids)
        else lookup(as_strings(run.query_ids), query_ids)
    )
    run_query = scored_position[query_index[starts]]
    in_order = not by_score or _descending_within(score, starts)
    lengths = np.diff(starts, append=len(score))
    scored = run_query >= 0
    starts, lengths, run_query = starts[scored], lengths[scored], run_query[scored]
    by_query = np.argsort(run_query, kind="stable")
    if in_order and np.all(np.diff(run_query[by_query]) > 0):
        # Run files are usually written query by query, best first: then no row moves,
        # and only the top rows of each query are ever gathered.
        return _QueryRuns(None, score, starts[by_query], lengths[by_query], run_query[by_query])
    row_query = np.repeat(run_query, lengths)
    rows = ranges(starts, lengths)
    # A stable sort: equal scores keep the file's order.
    keys = (-score[rows], row_query) if by_score else (row_query,)
    by_rank = np.lexsort(keys)
    order, row_query = rows[by_rank], row_query[by_rank]
    new_starts = np.flatnonzero(np.diff(row_query, prepend=-1) != 0)
    return _QueryRuns(
        order,
        score[order],
        new_starts,
        np.diff(new_starts, append=len(order)),
        row_query[new_starts],
    )


def same_ids(ids: np.ndarray, others: np.ndarray) -> bool:
    """Whether two arrays of ids hold the same ids in the same order (a run and its golden
    set usually do): a compare, quicker than a lookup, which would hash both."""
    return len(ids) == len(others) and bool(np.array_equal(ids, others))


def _descending_within(score: np.ndarray, starts: np.ndarray) -> bool:
    """Whether the scores never rise from one row to the next inside a run of rows (the
    runs begin at ``starts``)."""
    rises = score[1:] > score[:-1]
    rises[starts[1:] - 1] = False  # from the last row of a run to the first of the next
    return not rises.any()


def _best_scores(runs: _QueryRuns) -> np.ndarray:
    """The highest score of each query."""
    if len(runs.start) == 0:
        return np.zeros(0)
    offsets = np.cumsum(runs.length) - runs.length
    return np.maximum.reduceat(runs.score[ranges(runs.start, runs.length)], offsets)


def _top_positions(
    runs: _QueryRuns, limit: int | None, with_ties: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The positions of each query's top ``limit`` rows (all rows when None), grouped by
    query, and the query index of each.

    ``with_ties`` also keeps the rows tied in score with the last one kept: the tie-break
    (doc_id) decides which of them are in the top, so all of them must be ranked.
    """
    length = runs.length if limit is None else np.minimum(runs.length, limit)
    if with_ties and limit is not None:
        length = _extend_over_ties(runs, length)
    return ranges(runs.start, length), np.repeat(runs.query, length)


def _ranked_rows(
    doc_ids: pa.Array | pa.ChunkedArray | np.ndarray,
    runs: _QueryRuns,
    limit: int | None,
    keep_order: bool,
) -> tuple[np.ndarray, np.ndarray, pa.Array | np.ndarray, np.ndarray]:
    """The rows that may rank within ``limit`` (all rows when None), in ranking order:
    the query index, score, doc id and position in the run of each."""
    positions, query_index = _top_positions(runs, limit, with_ties=not keep_order)
    # Adding 0.0 turns -0.0 into 0.0, which it equals (and ties with, as in trec_eval).
    score = runs.score[positions] + 0.0
    rows = positions if runs.order is None else runs.order[positions]
    # One gather from the run's doc ids: everything after works on the few rows kept.
    doc_ids = take_distinct(doc_ids, rows)
    if not keep_order:
        # Breaking ties moves docs only within equal (query, score): query_index, score stay.
        by_doc = _doc_order_within_ties(query_index, score, doc_ids)
        doc_ids, rows = take_rows(doc_ids, by_doc), rows[by_doc]
    return query_index, score, doc_ids, rows


def _extend_over_ties(runs: _QueryRuns, length: np.ndarray) -> np.ndarray:
    """Lengthen each query's kept range over the rows tied with its last kept row.

    Scores fall within a query, so the tied rows follow the last kept one: a binary search
    per query (all queries at once) finds where they end.
    """
    last_score = runs.score[runs.start + np.maximum(length, 1) - 1]
    low, high = runs.start + length, runs.start + runs.length
    searching = (low < high) & (length > 0)
    while searching.any():
        middle = (low + high) // 2
        tied = searching & (runs.score[np.minimum(middle, len(runs.score) - 1)] == last_score)
        low = np.where(tied, middle + 1, low)
        high = np.where(searching & ~tied, middle, high)
        searching = low < high
    return low - runs.start


def _doc_order_within_ties(
    query_index: np.ndarray, score: np.ndarray, doc_ids: pa.Array | np.ndarray
) -> np.ndarray:
    """The order that sorts each run of equal (query, score) rows by doc_id descending,
    trec_eval's tie-break, leaving every other row in place.

    Only tied rows have their doc ids compared: usually a small share of the rows.
    """
    # Scores compared, not subtracted: inf - inf is NaN, which would split a tie at ±inf.
    new_group = np.r_[True, (query_index[1:] != query_index[:-1]) | (score[1:] != score[:-1])]
    group = np.cumsum(new_group) - 1
    tied = np.flatnonzero(np.bincount(group)[group] > 1) if len(group) else group
    order = np.arange(len(query_index))
    if len(tied):
        by_doc = sort_order(group[tied], take_rows(doc_ids, tied), descending=True)
        order[tied] = tied[by_doc]
    return order


def _rank_within_groups(group: np.ndarray, group_count: int) -> np.ndarray:
    """1-based position of each row within its group; rows are already grouped and ordered."""
    starts = np.searchsorted(group, np.arange(group_count))
    return np.arange(len(group)) - starts[group] + 1


class _Judgments(NamedTuple):
    """The judgements of the scored queries, indexed to be matched with ranked rows.

    Per judgement: ``query_index`` (into the scored query ids) and ``grade``; ``pairs``
    finds a (query, doc) among them; ``ideal_grades`` holds each query's positive grades,
    best first, padded with 0 to the longest list.
    """

    query_index: np.ndarray
    grade: np.ndarray
    pairs: PairIndex
    ideal_grades: np.ndarray

    @classmethod
    def of(cls, golden: Golden, query_ids: np.ndarray) -> _Judgments:
        """The golden set's judgements of ``query_ids`` (the others are of no use here)."""
        grade = golden.judgment_column("grade")
        every_query = len(query_ids) == len(golden.query_column("query_id"))
        if every_query and golden.judgments_of_listed_queries:
            # Every query is scored (as in qrels), in the golden set's order, and every
            # judgement is of one: the golden set's own index of the pairs serves as it is.
            pairs = golden.pairs
            query_index = pairs.groups
        else:
            query_index = lookup(golden.judgment_column("query_id"), query_ids)
            known = query_index >= 0
            query_index, grade = query_index[known], grade[known]
            pairs = PairIndex(query_index, filter_rows(golden.judgment_column("doc_id"), known))
        return cls(query_index, grade, pairs, _ideal_grades(query_index, grade, len(query_ids)))

    def grades_of(
        self, query_index: np.ndarray, doc_ids: pa.Array | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Grade and judged flag of each ranked row, matched on (query, doc)."""
        match = self.pairs.find(query_index, doc_ids)
        found = match >= 0
        grade = np.zeros(len(match), dtype=np.int64)
        grade[found] = self.grade[match[found]]
        # A negative grade means "pooled but not judged" in TREC qrels: not a judgement.
        return grade, found & (grade >= 0)

    def relevant_count(self, rel_threshold: int) -> np.ndarray:
        """Per query, the judged docs with grade >= ``rel_threshold``."""
        relevant = self.grade >= rel_threshold
        return np.bincount(self.query_index[relevant], minlength=len(self.ideal_grades))


def _ideal_grades(query_index: np.ndarray, grade: np.ndarray, query_count: int) -> np.ndarray:
    """Each query's positive grades, best first, padded with 0 to the longest list.

    Grades are usually few (1-3): then each query's list is written out from its count of
    each grade, a counting sort with no sort of the judgements, quicker than sorting them and
    placing each (measured: bench/README.md, "Figures behind design choices"); many different
    grades are sorted.
    """
    positive = grade > 0
    query_index, grades = query_index[positive], grade[positive]
    top = int(grades.max(initial=0))
    if top * query_count <= COUNTING_CELLS_PER_GRADE * len(grades):
        # counts[q * top + (top - g)]: query q's judgements of grade g, the best one first.
        keys = query_index.astype(np.int64) * top + (top - grades)
        counts = np.bincount(keys, minlength=query_count * top)
        grades = np.repeat(np.tile(np.arange(top, 0, -1), query_count), counts)
        per_query = counts.reshape(query_count, top).sum(axis=1)
    else:
        grades = grades[np.lexsort((-grades, query_index))]
        per_query = np.bincount(query_index, minlength=query_count)
    width = max(int(per_query.max(initial=0)), 1)
    # The grades, in query order and best first, fill the first cells of their query's row.
    ideal = np.zeros((query_count, width), dtype=np.int64)
    ideal[np.arange(width) < per_query[:, None]] = grades
    return ideal
