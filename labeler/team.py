"""Team labelling over the store: dealing queries with a blind overlap, agreement figures,
and the adjudication queue (who may decide is :mod:`goldset.labeler.accounts`' role check).

Composition only: every read and write goes through :class:`goldset.labeler.store.Store` (no SQL
here) and every statistic through :mod:`goldset.eval.agreement` (no formula here). No Streamlit
either: the review and admin pages, and the CLI, call these functions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from goldset.eval import agreement, metrics
from goldset.eval.ranking import NOT_RANKED
from goldset.labeler import golden
from goldset.labeler.accounts import authorize, has_role
from goldset.labeler.golden import QueryState
from goldset.labeler.store import Store

MRR_CUTOFF = 10  # the queue is ordered by the effect on MRR@10
FIGURE_NAMES = {
    "relevance_kappa": "kappa (relevant or not)",
    "grade_alpha": "alpha (grades, ordinal)",
    "first_relevant_rank": "same first relevant rank",
    "unanswerable_vs_miss": "same unanswerable/miss call",
}


# --- dealing queries ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deal:
    """What :func:`deal` handed out: each annotator's new queries, and the overlapping ones
    (dealt to two or more annotators, blind to each other)."""

    plan: dict[str, list[str]]
    overlapping: list[str]

    @property
    def queries(self) -> int:
        """How many distinct queries were dealt."""
        return len({query_id for query_ids in self.plan.values() for query_id in query_ids})


def deal(
    store: Store,
    annotators: Sequence[str],
    *,
    overlap: float = 0.1,
    judges: int = 2,
    slices: Sequence[str] | None = None,
    seed: int = 0,
) -> Deal:
    """Deal the queries nobody has yet (not done, assigned to no one; of ``slices`` if given)
    to registered ``annotators``, a share ``overlap`` of them to ``judges`` annotators each.

    The overlapping queries are a seeded random sample, ``round(overlap × n)`` in all, spread
    over the slices in proportion to their size (largest remainders), so that agreement can
    be measured per slice. Each query goes to the least-loaded annotators (open assigned
    work; ties by name), never twice to the same one, and never to someone who already
    worked on it. Annotators label their assigned queries only, and each sees only their own
    labels (blind overlap). All-or-nothing: the whole deal is written in one transaction.
    """
    annotators = list(dict.fromkeys(annotators))
    if not annotators:
        raise ValueError("give at least one annotator to deal queries to")
    unknown = [name for name in annotators if store.annotator(name) is None]
    if unknown:
        raise ValueError(f"not registered users: {', '.join(unknown)} (goldset user add NAME)")
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be a share between 0 and 1, got {overlap}")
    if overlap > 0 and not 2 <= judges <= len(annotators):
        raise ValueError(
            f"an overlapping query needs 2 to {len(annotators)} judges here, got {judges}"
        )
    queries = store.dealable_queries(slices)
    doubled = _overlap_sample(queries, overlap, np.random.default_rng(seed))
    counts = store.assignment_counts()
    load = {name: counts.get(name, {}).get("open", 0) for name in annotators}
    plan: dict[str, list[str]] = {name: [] for name in annotators}
    overlapping = []
    for query in queries:
        eligible = [name for name in annotators if name not in query["labelled_by"]]
        copies = judges if query["query_id"] in doubled else 1
        chosen = sorted(eligible, key=lambda name: (load[name], name))[:copies]
        for name in chosen:
            plan[name].append(query["query_id"])
            load[name] += 1
        if len(chosen) >= 2:
            overlapping.append(query["query_id"])
    store.assign_plan(plan)
    return Deal(plan, overlapping)


def _overlap_sample(queries: Sequence[dict], share: float, rng: np.random.Generator) -> set[str]:
    """A seeded sample of round(share × n) query ids, allotted to slices by largest remainder."""
    by_slice: dict[str, list[str]] = {}
    for query in queries:
        by_slice.setdefault(query["slice"], []).append(query["query_id"])
    total = math.floor(share * len(queries) + 0.5)
    quotas = {name: share * len(ids) for name, ids in sorted(by_slice.items())}
    counts = {name: math.floor(quota) for name, quota in quotas.items()}
    by_remainder = sorted(quotas, key=lambda name: (counts[name] - quotas[name], name))
    for name in by_remainder[: total - sum(counts.values())]:
        counts[name] += 1
    chosen: set[str] = set()
    for name, count in counts.items():
        chosen.update(rng.choice(by_slice[name], size=count, replace=False).tolist())
    return chosen


def may_open(store: Store, user: str, query_id: str) -> bool:
    """Whether ``user`` may see and act on query ``query_id`` (label it, view it, undo on it):
    a reviewer or an admin (their role read from the database now) any query of the project,
    anyone else only a query of their own queue (:meth:`goldset.labeler.store.Store.in_queue`: their
    assigned queries, or the shared queue when they have none) — never a query dealt to
    others, blind overlap included. The one rule that every path opening a query calls."""
    try:
        authorize(store, user, "reviewer")
    except PermissionError:
        return store.in_queue(user, query_id)
    try:
        store.query(query_id)
    except ValueError:
        return False
    return True


# --- agreement ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ratings:
    """The doubly judged data, flattened: one row per (query, doc) judged by two or more."""

    names: list[str]  # annotators, one column each
    grades: np.ndarray  # (items, annotators), NaN = not judged by that annotator
    item_query: np.ndarray  # (items,) index of the item's query in the overlap list
    outcomes: list[tuple[int, str, str, tuple[int, str], tuple[int, str]]]
    # per query and pair: (query index, first, second, (rank, verdict) of each); rank 0 = none


def agreement_report(store: Store, *, n_resamples: int = 1000, seed: int = 0) -> dict:
    """Agreement on the doubly judged queries (done by two or more annotators): overall, per
    annotator pair and per slice. Each group has four figures (see :mod:`goldset.eval.agreement`):

    - ``relevance_kappa``: Cohen's kappa of relevant (grade ≥ the project's threshold) vs not,
      over docs judged by both of a pair; pooled over pairs, the alphabetically first name
      of each pair is the first rater;
    - ``grade_alpha``: Krippendorff's alpha (ordinal) of the grades, over docs judged by two
      or more (all the group's annotators at once);
    - ``first_relevant_rank``: share of (query, pair) where both found the first relevant
      candidate at the same rank (or both found none);
    - ``unanswerable_vs_miss``: among (query, pair) where neither found a relevant candidate,
      share where both made the same call (unanswerable, or miss).

    Each figure has its item count, its number of queries and a percentile bootstrap 95% CI
    over queries (seeded). Undefined figures (no items; one category only) are None.
    """
    settings = store.settings()
    overlap = store.overlap_states()
    ratings = _ratings(overlap)
    grade_values = np.arange(settings["max_grade"] + 1)

    def figures(pairs: Iterable[tuple[str, str]], queries: np.ndarray) -> dict:
        pairs = list(pairs)
        names = sorted({name for pair in pairs for name in pair})
        return _figures(
            ratings,
            len(overlap),
            pairs,
            names,
            queries,
            grade_values,
            settings["rel_threshold"],
            {"n_resamples": n_resamples, "seed": seed},
        )

    everyone = list(itertools.combinations(ratings.names, 2))
    all_queries = np.ones(len(overlap), dtype=bool)
    slices = np.array([query["slice"] for query in overlap], dtype=object)
    pairs_seen = sorted({(first, second) for _, first, second, _, _ in ratings.outcomes})
    return {
        "queries": len(overlap),
        "annotators": ratings.names,
        "settings": {key: settings[key] for key in ("rel_threshold", "max_grade")},
        "bootstrap": {"resamples": n_resamples, "seed": seed},
        "overall": figures(everyone, all_queries),
        "pairs": [
            {"annotators": list(pair), **figures([pair], all_queries)} for pair in pairs_seen
        ],
        "slices": {name: figures(everyone, slices == name) for name in sorted(set(slices))},
    }


def agreement_text(figure: Mapping) -> str:
    """One agreement figure on one line: ``0.588 [0.214, 0.857] n=14`` (n/a when undefined)."""
    value, (low, high) = figure["value"], figure["ci95"]
    text = "n/a" if value is None else f"{value:.3f}"
    if low is not None:
        text += f" [{low:.3f}, {high:.3f}]"
    return f"{text} n={figure['items']}"


def figure_table(report: Mapping) -> list[dict]:
    """The report's figures as rows for a table: one per group (all, each pair, each slice),
    one column per figure (see :data:`FIGURE_NAMES`), each cell :func:`agreement_text`."""
    groups = [("all", report["overall"])]
    groups += [(" & ".join(pair["annotators"]), pair) for pair in report["pairs"]]
    groups += [(f"slice {name or '(none)'}", data) for name, data in report["slices"].items()]
    return [
        {
            "group": group,
            **{label: agreement_text(data[key]) for key, label in FIGURE_NAMES.items()},
        }
        for group, data in groups
    ]


def _ratings(overlap: Sequence[dict]) -> _Ratings:
    names = sorted({name for query in overlap for name in query["states"]})
    column = {name: index for index, name in enumerate(names)}
    rows, item_query, outcomes = [], [], []
    for index, query in enumerate(overlap):
        states: dict[str, QueryState] = query["states"]
        for doc_grades in _grades_by_doc(states).values():
            if len(doc_grades) < 2:
                continue
            row = np.full(len(names), np.nan)
            for name, grade in doc_grades.items():
                row[column[name]] = grade
            rows.append(row)
            item_query.append(index)
        for first, second in itertools.combinations(sorted(states), 2):
            outcomes.append(
                (index, first, second, _outcome(states[first]), _outcome(states[second]))
            )
    grades = np.array(rows).reshape(len(rows), len(names))
    return _Ratings(names, grades, np.array(item_query, dtype=np.int64), outcomes)


def _outcome(state: QueryState) -> tuple[int, str]:
    """(first relevant rank, 0 for none; verdict): the query-level label of one annotator."""
    rank = state.first_relevant_position or 0
    verdict = "found" if rank else ("miss" if state.answerable else "unanswerable")
    return rank, verdict


def _figures(
    ratings: _Ratings,
    query_count: int,
    pairs: Sequence[tuple[str, str]],
    names: Sequence[str],
    queries: np.ndarray,
    grade_values: np.ndarray,
    threshold: int,
    bootstrap: Mapping,
) -> dict:
    """The four figures of one group: these annotator pairs, on the queries selected."""
    column = {name: index for index, name in enumerate(ratings.names)}
    in_group = queries[ratings.item_query]
    # Relevance: a 2×2 confusion table per query, summed over the group's pairs.
    relevance = np.zeros((query_count, 2, 2))
    relevance_items = 0
    for first, second in pairs:
        a, b = ratings.grades[:, column[first]], ratings.grades[:, column[second]]
        both = in_group & ~np.isnan(a) & ~np.isnan(b)
        cells = (a[both] >= threshold).astype(int), (b[both] >= threshold).astype(int)
        np.add.at(relevance, (ratings.item_query[both], *cells), 1.0)
        relevance_items += int(both.sum())
    # Grades: Krippendorff's coincidences of the group's annotators, per query.
    subset = ratings.grades[in_group][:, [column[name] for name in names]]
    pairable = (~np.isnan(subset)).sum(axis=1) >= 2
    coincidences = np.zeros((query_count, len(grade_values), len(grade_values)))
    np.add.at(
        coincidences,
        ratings.item_query[in_group][pairable],
        agreement.coincidences(agreement.value_counts(subset[pairable], grade_values)),
    )
    ranks, verdicts = _outcome_tables(ratings, query_count, pairs, queries)
    return {
        "relevance_kappa": _figure(
            relevance, agreement.kappa_from_table, "cohen_kappa", relevance_items, bootstrap
        ),
        "grade_alpha": _figure(
            coincidences,
            agreement.alpha_from_coincidences,
            "krippendorff_alpha_ordinal",
            int(pairable.sum()),
            bootstrap,
        ),
        "first_relevant_rank": _figure(
            ranks, agreement.observed_agreement, "agreement", None, bootstrap
        ),
        "unanswerable_vs_miss": _figure(
            verdicts, agreement.observed_agreement, "agreement", None, bootstrap
        ),
    }


def _outcome_tables(
    ratings: _Ratings, query_count: int, pairs: Sequence[tuple[str, str]], queries: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-query confusion tables of the first relevant rank and of the verdict when neither
    found a relevant candidate (unanswerable = 1, miss = 0), over the group's pairs."""
    wanted = set(pairs)
    rows = [row for row in ratings.outcomes if (row[1], row[2]) in wanted and queries[row[0]]]
    rank_values = sorted({0} | {outcome[0] for row in rows for outcome in row[3:]})
    code = {rank: index for index, rank in enumerate(rank_values)}
    ranks = np.zeros((query_count, len(code), len(code)))
    verdicts = np.zeros((query_count, 2, 2))
    for index, _, _, (rank_a, verdict_a), (rank_b, verdict_b) in rows:
        ranks[index, code[rank_a], code[rank_b]] += 1
        if verdict_a != "found" and verdict_b != "found":
            verdicts[index, int(verdict_a == "unanswerable"), int(verdict_b == "unanswerable")] += 1
    return ranks, verdicts


def _figure(
    unit_tables: np.ndarray, statistic, name: str, items: int | None, bootstrap: Mapping
) -> dict:
    """One figure over the queries that hold items (the bootstrap resamples those only)."""
    used = unit_tables[unit_tables.sum(axis=(1, 2)) > 0]
    result = agreement.estimate(used, statistic, items=items, **bootstrap)
    return {"statistic": name, **result.as_dict()}


# --- adjudication ---------------------------------------------------------------------------------


def reciprocal_ranks(states: Iterable[QueryState], cutoff: int = MRR_CUTOFF) -> np.ndarray:
    """Each annotator's RR@cutoff of the labelled list (eval's reciprocal rank of their first
    relevant rank within the cutoff): 0 for a miss, or an unanswerable query — which then
    leaves the mean."""
    first = [
        state.first_relevant_position
        if state.answerable
        and state.first_relevant_position
        and state.first_relevant_position <= cutoff
        else NOT_RANKED
        for state in states
    ]
    return metrics.reciprocal_of(np.array(first, dtype=np.int64))


def disagreement_kinds(states: Mapping[str, QueryState]) -> list[str]:
    """How the annotators' labels of one query differ: ``first_relevant_rank``, ``answerable``
    (unanswerable vs not), ``grades`` (a doc judged by two of them got different grades)."""
    kinds = []
    if len({state.first_relevant_position for state in states.values()}) > 1:
        kinds.append("first_relevant_rank")
    if len({state.answerable for state in states.values()}) > 1:
        kinds.append("answerable")
    if _graded_differently(states):
        kinds.append("grades")
    return kinds


def adjudication_queue(store: Store, *, include_decided: bool = False) -> list[dict]:
    """The doubly judged queries whose annotators disagree, most consequential first.

    Ordered by the effect on MRR@10: the gap between the annotators' RR@10 (how far the
    query's reciprocal rank moves depending on whose label wins; ``mrr_effect`` is that gap
    over the number of scored queries, i.e. how far the mean can move), then by the number of
    docs graded differently, then queue order. Decided queries leave the queue unless
    ``include_decided``. Each entry: query_id, query, slice, position, kinds, rr_gap,
    mrr_effect, ``labels`` (annotator -> {first_relevant_rank, answerable, judgments}) and
    ``decision`` (a :class:`goldset.labeler.golden.Decision` or None).
    """
    decisions = store.decisions()
    progress = store.progress()
    scored = sum(counts["done"] - counts["unanswerable"] for counts in progress.values())
    queue = []
    for query in store.overlap_states():
        states = query["states"]
        kinds = disagreement_kinds(states)
        decision = decisions.get(query["query_id"])
        if not kinds or (decision is not None and not include_decided):
            continue
        ranks = reciprocal_ranks(states.values())
        gap = float(ranks.max() - ranks.min())
        queue.append(
            {
                "query_id": query["query_id"],
                "query": query["query"],
                "slice": query["slice"],
                "position": query["position"],
                "kinds": kinds,
                "rr_gap": gap,
                "mrr_effect": gap / scored if scored else 0.0,
                "graded_differently": _graded_differently(states),
                "labels": {
                    name: golden.annotator_label(state, query["positions"])
                    for name, state in sorted(states.items())
                },
                "decision": decision,
            }
        )
    return sorted(
        queue, key=lambda item: (-item["rr_gap"], -item["graded_differently"], item["position"])
    )


def _graded_differently(states: Mapping[str, QueryState]) -> int:
    """How many docs judged by two or more of the annotators got different grades."""
    return sum(
        len(set(grades.values())) > 1
        for grades in _grades_by_doc(states).values()
        if len(grades) > 1
    )


def _grades_by_doc(states: Mapping[str, QueryState]) -> dict[str, dict[str, int]]:
    """doc_id -> {annotator: grade} over the annotators' current labels of one query."""
    docs: dict[str, dict[str, int]] = {}
    for name, state in states.items():
        for doc_id, grade in state.grades.items():
            docs.setdefault(doc_id, {})[name] = grade
    return docs


def adopt(store: Store, query_id: str, reviewer: str, annotator: str, note: str = "") -> int:
    """Decide a query for one annotator's label as it stands (their grades and their call on
    answerability); returns the decision id. The annotator must have completed the query."""
    state = store.query_state(query_id, annotator)
    if state["status"] != "done":
        raise ValueError(f"{annotator!r} has not completed query {query_id!r}")
    return decide(
        store,
        query_id,
        reviewer,
        store.labels(query_id, annotator),
        state["answerable"],
        adopted=annotator,
        note=note,
    )


def decide(store: Store, query_id: str, reviewer: str, *decision: object, **options: object) -> int:
    """Record a reviewer's decision on a query, :meth:`goldset.labeler.store.Store.adjudicate` with
    its arguments (judgments, answerable; ``adopted``, ``note``), once the team's rule allows
    it: only a registered reviewer or admin decides. Returns the decision id."""
    user = store.annotator(reviewer)
    if user is None or not has_role(user["role"], "reviewer"):
        raise ValueError(f"{reviewer!r} is not a reviewer or admin: only they adjudicate")
    return store.adjudicate(query_id, reviewer, *decision, **options)
