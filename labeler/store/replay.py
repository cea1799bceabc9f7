"""Golden records read back for import: how each is rebuilt (its plan) and the rows
and events that reproduce it (pure functions; the import writes them)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as default_field

from goldset.eval import validation
from goldset.eval.readers import InputError
from goldset.labeler import golden
from goldset.labeler.golden import Decision, Event, QueryContext
from goldset.labeler.importing import (
    GoldenLabels,
    Task,
    tasks_from_records,
)
from goldset.labeler.store.log import IMPORT_RUN
from goldset.labeler.store.projections import progress_key

ROUND_TRIP_KEYS = (golden.POOL_KEY, "labels", "adjudication")


@dataclass(frozen=True)
class GoldenPlan:
    """How an imported golden record is rebuilt (see :func:`golden_plan`).

    ``order``: the candidates in display order; ``runs``: each ranking's doc ids (``import``:
    the imported list); ``replayed``: (created_at, record for
    :func:`goldset.labeler.golden.events_for_record`) per annotator; ``decision``: the adjudication
    row's values after query_id, or None; ``expected``: the status and answerability that
    the replay must give; ``doc_ids``: every document the record names.
    """

    order: list[str]
    runs: dict[str, list[str]]
    replayed: list[tuple[str, dict]]
    decision: tuple | None
    expected: dict[str, object]
    doc_ids: list[str]

    def candidate_rows(self, query_id: str) -> list[tuple]:
        """Rows of ``candidates`` (query_id, doc_id, position, score, imported_rank)."""
        imported = {doc_id: rank for rank, doc_id in enumerate(self.runs.get(IMPORT_RUN, []), 1)}
        return [
            (query_id, doc_id, position, None, imported.get(doc_id))
            for position, doc_id in enumerate(self.order, start=1)
        ]


@dataclass
class Replay:
    """The rows that reproduce imported golden records (see :func:`replayed`); event ids
    (in ``events``, ``labels`` and ``states``) count from 1, shifted when written."""

    source: str
    events: list[tuple] = default_field(default_factory=list)
    labels: list[tuple] = default_field(default_factory=list)
    states: list[tuple] = default_field(default_factory=list)
    queries: list[str] = default_field(default_factory=list)  # their golden labels follow
    # (query_id, golden label) per query, as golden.merge makes it of these rows: event ids
    # and decision ids (1, 2, ... in ``decisions``' order) count from 1, shifted when written
    golden: list[tuple] = default_field(default_factory=list)
    counts: dict[tuple[str, str, str], int] = default_field(default_factory=dict)
    decisions: list[tuple] = default_field(default_factory=list)
    runs: dict[str, int] = default_field(default_factory=dict)
    pool_ranks: list[tuple] = default_field(default_factory=list)

    def count(self, annotator: str, slice_name: str, state: str, delta: int) -> None:
        key = (annotator, slice_name, state)
        self.counts[key] = self.counts.get(key, 0) + delta


def replayed(
    tasks: Sequence[Task], plans: Mapping[str, GoldenPlan], settings: Mapping, source: str
) -> Replay:
    """Derive, without the database, what importing these golden records writes: each
    annotator's events (as :func:`goldset.labeler.golden.events_for_record` gives them) and the
    projections :func:`goldset.labeler.golden.derive_state` makes of them — the same functions as
    every key press, so :meth:`Store.rebuild_projections` finds the same. A record whose
    labels cannot come out as it says (a ``pending`` query whose judged docs already hold a
    relevant one, say) is an input error, raised before anything is written."""
    replay, next_id = Replay(source), 1
    threshold = settings["rel_threshold"]
    for task in tasks:
        plan = plans.get(task.query_id)
        if plan is None:
            continue
        query_id = task.query_id
        context = QueryContext(
            plan.runs,
            {doc_id: position for position, doc_id in enumerate(plan.order, start=1)},
            threshold,
            settings["mode"],
            # the candidates join after the replayed events (see Imports._seal): a replayed
            # verdict covers what the record lists as judged, a hole stays a hole
            dict.fromkeys(plan.order, golden.JOINS_LATER),
        )
        events: dict[str, list[Event]] = {}
        for created_at, record in plan.replayed:
            for event in golden.events_for_record(record, threshold):
                events.setdefault(event["annotator"], []).append(
                    Event(id=next_id, query_id=query_id, created_at=created_at, **event)
                )
                next_id += 1
        states = {name: golden.derive_state(mine, context) for name, mine in events.items()}
        for name, mine in events.items():
            replay.events += [
                (e.id, query_id, e.doc_id, name, e.action, e.grade, e.mode, float(e.seconds))
                + (e.note, e.created_at)
                for e in mine
            ]
            state = states[name]
            replay.labels += [
                (query_id, name, doc_id, grade, state.label_events[doc_id])
                for doc_id, grade in state.grades.items()
            ]
            replay.states.append(
                (query_id, name, task.slice, state.status, int(state.answerable))
                + (int(state.needs_verdict), state.mode, state.first_relevant_position)
                + (state.judged_depth, state.seconds, state.last_event_id, state.updated_at)
                + (state.note, state.holes)
            )
            replay.count(name, task.slice, progress_key(state.status, state.answerable), 1)
        decision = None
        if plan.decision is not None:
            replay.decisions.append((query_id, *plan.decision))
            reviewer, judgments, decided_answerable = plan.decision[:3]
            number = len(replay.decisions)  # its id, shifted when written
            decision = Decision(
                number, query_id, reviewer, json.loads(judgments), decided_answerable
            )
        label = golden.merge(states, decision, context)
        status, answerable = label.status, label.answerable
        for field_name, value in (
            ("status", golden.EXPORTED_STATUS[status]),
            ("answerable", answerable),
        ):
            if value != plan.expected[field_name]:
                problem = f"{plan.expected[field_name]!r}, but these labels give {value!r}"
                raise InputError(source, task.line, field_name, problem)
        replay.queries.append(query_id)
        replay.golden.append((query_id, label))
        if status != "pending":
            replay.count("", task.slice, "pending", -1)
            replay.count("", task.slice, progress_key(status, answerable), 1)
        for run, ranking in plan.runs.items():
            if run != IMPORT_RUN:
                replay.runs[run] = max(replay.runs.get(run, 0), len(ranking))
                replay.pool_ranks += [
                    (query_id, run, rank, doc_id, 1.0 / rank)
                    for rank, doc_id in enumerate(ranking, start=1)
                ]
    return replay


def golden_plan(task: Task, source: str, max_grade: int) -> GoldenPlan:
    """Read what a golden record holds beyond the golden-set format's keys (it arrives in the task's
    metadata): ``pool`` (its candidates), ``labels`` (each annotator's own) and
    ``adjudication`` (the decision). Raises :class:`InputError` when they are malformed."""
    where = (source, task.line)
    labels, metadata = task.golden, task.metadata
    if golden.POOL_KEY in metadata:
        order, runs = _pool_of(metadata[golden.POOL_KEY], where)
    else:
        order = [candidate.doc_id for candidate in task.candidates]
        runs = {IMPORT_RUN: order}
    own = metadata.get("labels")
    if own is None:
        people = [(labels.labelled_at, list(labels.annotators) or [IMPORT_RUN], labels)]
    else:
        if not isinstance(own, dict) or not own:
            raise InputError(*where, "labels", "must be an object of annotator: label")
        people = []
        for name, label in own.items():
            validation.checked_name(name, "labels", where)
            if not isinstance(label, dict):
                raise InputError(*where, f"labels.{name}", "must be an object")
            record = {**label, "query_id": task.query_id, "query": task.query}
            parsed = tasks_from_records([(task.line, record)], source, max_grade)[0].golden
            people.append((parsed.labelled_at, [name], parsed))
        people.sort(key=lambda person: (person[0] or "", person[1]))
    replayed = []
    for index, (labelled_at, names, person) in enumerate(people):
        first = index == 0
        record = {
            "status": person.status,
            "answerable": person.answerable,
            "judgments": person.judgments,
            "judged_depth": person.judged_depth,
            "mode": person.mode,
            "annotators": names,
            "seconds": labels.seconds if first else 0.0,  # the record keeps only the total
            "notes": labels.notes if first else "",
        }
        replayed.append((labelled_at or golden.now(), record))
    decision = None
    if "adjudication" in metadata:
        decision = _decision_of(metadata["adjudication"], labels, where, max_grade)
    doc_ids = [*order, *labels.judgments]
    doc_ids += [doc_id for _, record in replayed for doc_id in record["judgments"]]
    if decision is not None:
        doc_ids += list(json.loads(decision[1]))
    expected = {"status": labels.status, "answerable": labels.answerable}
    return GoldenPlan(order, runs, replayed, decision, expected, list(dict.fromkeys(doc_ids)))


def _pool_of(pool: object, where: tuple[str, int]) -> tuple[list[str], dict[str, list[str]]]:
    """A record's ``pool``: ``order`` (doc ids, display order) and ``runs`` (name: doc ids)."""
    if not isinstance(pool, dict) or set(pool) - {"order", "runs"}:
        raise InputError(*where, golden.POOL_KEY, "must be an object with order and runs")
    order, runs = pool.get("order"), pool.get("runs", {})
    if not _id_list(order):
        raise InputError(*where, "pool.order", "must be a list of distinct non-empty doc ids")
    if not isinstance(runs, dict) or not all(
        isinstance(name, str) and name and _id_list(ranking) and set(ranking) <= set(order)
        for name, ranking in runs.items()
    ):
        problem = "must map run names to distinct doc ids of pool.order"
        raise InputError(*where, "pool.runs", problem)
    for doc_id in order:  # the rules of every id (a doc named only here enters the project)
        validation.checked_id(doc_id, "pool.order", where)
    for name in runs:
        validation.checked_name(name, "pool.runs", where)
    return order, runs


def _id_list(value: object) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(item, str) and item for item in value)
        and len(set(value)) == len(value)
    )


def _decision_of(
    adjudication: object, labels: GoldenLabels, where: tuple[str, int], max_grade: int
) -> tuple:
    """An exported ``adjudication`` as the values of an adjudications row (after query_id).
    What it leaves out is taken from the record: its answerability and time; no adopted
    annotator, no note. Its names, doc ids and grades follow the rules of a golden record's."""
    if not isinstance(adjudication, dict):
        raise InputError(*where, "adjudication", "must be an object")
    decision = {
        "answerable": labels.answerable,
        "adopted": None,
        "note": "",
        "decided_at": labels.labelled_at or golden.now(),
        **adjudication,
    }
    valid = {
        "reviewer": lambda v: isinstance(v, str) and v,
        "judgments": lambda v: (
            isinstance(v, dict) and all(type(g) is int and g >= 0 for g in v.values())
        ),
        "answerable": lambda v: isinstance(v, bool),
        "adopted": lambda v: v is None or (isinstance(v, str) and v),
        "note": lambda v: isinstance(v, str),
        "decided_at": lambda v: isinstance(v, str),
    }
    for name, check in valid.items():
        if not check(decision.get(name)):
            raise InputError(*where, f"adjudication.{name}", "missing or mistyped")
    for name in ("reviewer", "adopted"):
        if decision[name] is not None:
            validation.checked_name(decision[name], f"adjudication.{name}", where)
    for doc_id, value in decision["judgments"].items():
        validation.checked_id(doc_id, "adjudication.judgments", where)
        validation.grade(value, f"adjudication.judgments.{doc_id}", where, max_grade)
    try:
        decided_at = golden.to_log_time(decision["decided_at"])
    except (ValueError, OverflowError):
        raise InputError(*where, "adjudication.decided_at", "not an ISO-8601 time") from None
    return (
        decision["reviewer"],
        json.dumps(decision["judgments"], ensure_ascii=False),
        int(decision["answerable"]),
        decision["adopted"],
        decision["note"],
        decided_at,
    )


def imported_rows(task: Task) -> list[tuple]:
    """Rows of ``candidates`` for a task's imported list: display order = its rank order."""
    return [
        (task.query_id, candidate.doc_id, rank, candidate.score, rank)
        for rank, candidate in enumerate(task.candidates, start=1)
    ]


def stored_metadata(task: Task) -> dict:
    """The metadata kept with a query: a golden record's own keys beyond the golden-set format's are
    rebuilt from the log (pool, labels, adjudication), not kept."""
    if task.golden is None:
        return task.metadata
    return {key: value for key, value in task.metadata.items() if key not in ROUND_TRIP_KEYS}
