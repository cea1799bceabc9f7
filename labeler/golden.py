"""Labels derived from the judgement log, and the golden set built from them.

The store keeps an append-only log of events; everything an annotator currently sees (the
grade of each doc, whether a query is done) is *derived* from that log by :func:`derive_state`.
:func:`merge` is the one golden-set merge rule: it makes the annotators' states of one query —
or, where a reviewer adjudicated it, the reviewer's :class:`Decision` — into its golden label
(the store keeps it as a projection that every reader of the golden set reads).
:func:`export_record` writes a golden label as the golden-set JSONL record (docs/formats.md), every
annotator's label beside it, and :func:`events_for_record` is its inverse (importing a golden
set). Pure functions: no database.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from goldset.eval.validation import GOLDEN_MODES
from goldset.labeler.pooling import holes, run_settled

MODES = GOLDEN_MODES  # the labelling modes, as the golden-set schema names them
VERDICTS = ("unanswerable", "miss")
UNDOABLE_ACTIONS = ("judge", "attach", "unanswerable", "miss", "skip")
ACTIONS = (*UNDOABLE_ACTIONS, "undo", "note")
POOL_KEY = "pool"  # a record's candidates, where the record alone cannot rebuild them
# A candidate's join mark (see QueryContext.joined) when it joins after every event seen yet:
# staged by a pool not yet published, or imported with the events a golden record replays.
JOINS_LATER = sys.maxsize
EXPORTED_STATUS = {
    "pending": "pending",
    "in_progress": "pending",
    "skipped": "skipped",
    "done": "done",
}


@dataclass(frozen=True)
class Event:
    """One row of the append-only log. ``undoes`` is set on undo events only."""

    id: int
    query_id: str
    annotator: str
    action: str
    doc_id: str | None = None
    grade: int | None = None
    mode: str | None = None
    seconds: float = 0.0
    note: str | None = None
    undoes: int | None = None
    created_at: str = ""


@dataclass(frozen=True)
class QueryContext:
    """What the derivation needs to know about a query besides its events.

    ``rankings``: each pooled run's docs in rank order (an imported list counts as one run);
    ``positions``: display position of every candidate; ``joined``: per candidate, the id of
    the log's last event when it joined the query's pool (absent: 0, there from the start).
    A verdict covers the candidates that joined before it, the ones its annotator could see.
    """

    rankings: Mapping[str, Sequence[str]]
    positions: Mapping[str, int]
    threshold: int = 1
    default_mode: str = "first_hit"
    joined: Mapping[str, int] = field(default_factory=dict)

    def covered_by(self, verdict: Event) -> list[str]:
        """The candidates in the pool when ``verdict`` was given (joined before it)."""
        return [doc_id for doc_id in self.positions if self.joined.get(doc_id, 0) < verdict.id]


@dataclass(frozen=True)
class QueryState:
    """One annotator's current view of one query, derived from their events."""

    status: str = "pending"
    answerable: bool = True
    needs_verdict: bool = False
    mode: str = "first_hit"
    grades: dict[str, int] = field(default_factory=dict)
    label_events: dict[str, int] = field(default_factory=dict)
    first_relevant_position: int | None = None  # on the annotator's screen (1-based)
    judged_depth: int = 0
    seconds: float = 0.0
    last_event_id: int = 0
    updated_at: str | None = None
    note: str = ""
    holes: int = 0
    asserted: frozenset[str] = frozenset()  # candidates graded 0 by a verdict, not one by one

    @property
    def contributed(self) -> bool:
        """True when something of the annotator's still stands (a label, a mark or a note)."""
        return self.status != "pending" or bool(self.grades) or bool(self.note)

    @property
    def complete(self) -> bool:
        """True when nothing is left to do on the query: done, with no holes left."""
        return self.status == "done" and not self.holes


def effective_events(events: Sequence[Event]) -> list[Event]:
    """The events that still count: undo events and the events they undid are dropped."""
    undone = {event.undoes for event in events if event.action == "undo"}
    return [event for event in events if event.action != "undo" and event.id not in undone]


def derive_state(events: Sequence[Event], context: QueryContext) -> QueryState:
    """Replay one annotator's events on one query (oldest first) into their current state.

    - A doc's grade is its latest judge/attach event.
    - Complete by labels: first-hit mode — every pooled run settled (its first relevant doc
      known, or none within the pool); full mode — every candidate judged.
    - First-hit mode: a relevant candidate with at least one pooled run settled is enough
      for ``done`` (the query is in the golden set); the docs that the other runs still rank
      above their first relevant one are its ``holes`` (see :func:`goldset.labeler.pooling.holes`),
      work left that never takes the query out of the golden set. Pooling a new run thus
      adds holes to a done query instead of reopening it.
    - A verdict (unanswerable / miss) grades 0 every candidate not judged before it among
      those in the pool when it was given (see :meth:`QueryContext.covered_by`); those do not
      count in ``judged_depth`` (the candidates judged one by one: the cost). A candidate a
      later pool adds is unjudged: a hole of the done query, as a new run's docs are above
      a first relevant one.
    - ``done``: complete with a relevant candidate, or a verdict (unanswerable / miss), or a
      relevant doc attached from search (a miss whose answer was found).
    - ``needs_verdict``: complete, nothing relevant, no verdict yet — the annotator must
      choose unanswerable or miss. ``skipped``: the latest step was a skip.
    - ``answerable`` is false only when the latest of {verdict, relevant judgement} is
      "unanswerable".
    """
    grades: dict[str, int] = {}
    label_events: dict[str, int] = {}
    last_verdict, skipped, note = None, False, ""
    asserted: set[str] = set()  # candidates graded 0 by a verdict, not judged one by one
    mode = context.default_mode
    for event in effective_events(events):
        if event.action in ("judge", "attach"):
            asserted.discard(event.doc_id)
            grades[event.doc_id] = event.grade
            label_events[event.doc_id] = event.id
            if event.grade >= context.threshold:
                last_verdict = "relevant"
            mode = event.mode or mode
            skipped = False
        elif event.action in VERDICTS:
            last_verdict, skipped = event.action, False
            # A verdict asserts that no candidate it saw is relevant: the ones not judged yet
            # are judged 0 by it, so that one undo of the verdict takes the assertion back.
            for doc_id in context.covered_by(event):
                if doc_id not in grades:
                    grades[doc_id], label_events[doc_id] = 0, event.id
                    asserted.add(doc_id)
        elif event.action == "skip":
            skipped = True
        elif event.action == "note":
            note = event.note or ""
    candidate_grades = {doc: grade for doc, grade in grades.items() if doc in context.positions}
    first = first_relevant_position(candidate_grades, context.positions, context.threshold)
    relevant = first is not None
    attached_relevant = any(
        grade >= context.threshold for doc, grade in grades.items() if doc not in context.positions
    )
    if mode == "full":
        complete = found = len(candidate_grades) == len(context.positions)
    else:
        settled = [
            run_settled(ranking, candidate_grades, context.threshold)
            for ranking in context.rankings.values()
        ]
        complete, found = all(settled), any(settled) or not settled
    verdict = last_verdict in VERDICTS
    if skipped:
        status = "skipped"
    elif (found and relevant) or verdict or attached_relevant:
        status = "done"
    else:
        status = "in_progress" if grades else "pending"
    return QueryState(
        status=status,
        answerable=last_verdict != "unanswerable",
        needs_verdict=complete and not relevant and not verdict and not attached_relevant,
        mode=mode,
        grades=grades,
        label_events=label_events,
        first_relevant_position=first,
        judged_depth=len(candidate_grades) - len(asserted),
        seconds=sum(event.seconds for event in events),
        last_event_id=max((event.id for event in events), default=0),
        updated_at=max((event.created_at for event in events), default=None),
        note=note,
        holes=holes_left(status, mode, candidate_grades, context, uncovered=verdict),
        asserted=frozenset(asserted),
    )


def holes_left(
    status: str,
    mode: str | None,
    grades: Mapping[str, int],
    context: QueryContext,
    uncovered: bool = False,
) -> int:
    """The holes of a query (see :func:`goldset.labeler.pooling.holes`) judged with these candidate
    ``grades``: counted on a query done by a relevant candidate in first-hit mode (a
    full-mode query is done by its labels only once all are graded), or done by a verdict
    that did not cover every candidate (``uncovered``: a later pool's docs, unjudged)."""
    candidate_grades = {doc: grade for doc, grade in grades.items() if doc in context.positions}
    relevant = any(grade >= context.threshold for grade in candidate_grades.values())
    if status != "done" or not (uncovered or (relevant and mode != "full")):
        return 0
    return holes(context.rankings, candidate_grades, context.threshold)


@dataclass(frozen=True)
class Decision:
    """A reviewer's adjudication of a query: the golden label from then on.

    ``judgments`` are the decided grades; ``adopted`` names the annotator whose labels were
    accepted as they were (None when the reviewer set the grades). The latest decision on a
    query counts; earlier ones stay in the log.
    """

    id: int
    query_id: str
    reviewer: str
    judgments: dict[str, int]
    answerable: bool
    adopted: str | None = None
    note: str = ""
    created_at: str = ""


def merged_status(
    states: Iterable[QueryState], decision: Decision | None = None
) -> tuple[str, bool]:
    """The query's golden status and answerability over all its annotators (see :func:`merge`).

    An adjudicated query is done, answerable as the reviewer decided. Otherwise: done if
    anyone completed it (answerability from the latest completion), else in progress if
    anyone started it, else skipped if anyone skipped it, else pending.
    """
    if decision is not None:
        return "done", decision.answerable
    states = list(states)
    done = [state for state in states if state.status == "done"]
    if done:
        return "done", max(done, key=lambda state: state.last_event_id).answerable
    for status in ("in_progress", "skipped"):
        if any(state.status == status for state in states):
            return status, True
    return "pending", True


@dataclass(frozen=True)
class GoldenLabel:
    """The golden label of one query, as :func:`merge` makes it and the store keeps it (the
    ``golden_judgments`` projection): what export, eval and the dashboard read.

    ``status`` (pending, in_progress, skipped or done) and ``answerable`` as
    :func:`merged_status` gives them; ``holes``: docs still to judge for every pooled run's
    figures on a done query to be exact (see :func:`holes_left`; none once adjudicated);
    ``mode``: the newest contributor's, None when nobody
    contributed (the protocol's mode then). Per judged doc: ``grades``; ``order``, the merge
    order (the label's event id, or the doc's place in the decision); ``sources``, who gave
    the grade (an annotator, or the reviewer of ``decision_id``, the decision that counts).
    """

    status: str = "pending"
    answerable: bool = True
    mode: str | None = None
    grades: dict[str, int] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    decision_id: int | None = None
    holes: int = 0


def merge(
    states: Mapping[str, QueryState],
    decision: Decision | None = None,
    context: QueryContext | None = None,
) -> GoldenLabel:
    """The one golden-set merge rule: the golden label of a query from its annotators'
    states (annotator -> state) and the reviewer's decision that counts, if any.

    A doc's golden grade is the latest label given by any annotator — or, once a reviewer
    adjudicated the query, the decision's grade (the annotators' labels then do not count).
    An annotator whose every action was undone has left nothing and does not count.
    Machine judges are not annotators: their labels are kept apart and never merged.
    Its ``holes`` are counted over the merged grades in the query's ``context`` (none
    without one; see :func:`holes_left`: with no relevant candidate, only while an
    annotator's own state has holes, e.g. a verdict given before a later pool).
    """
    states = {name: state for name, state in states.items() if state.contributed}
    status, answerable = merged_status(states.values(), decision)
    newest = max(states.values(), key=lambda state: state.last_event_id, default=None)
    mode = newest.mode if newest else None
    if decision is not None:
        grades = dict(decision.judgments)
        order = {doc_id: index for index, doc_id in enumerate(grades)}
        sources = dict.fromkeys(grades, decision.reviewer)
        return GoldenLabel(status, answerable, mode, grades, order, sources, decision.id)
    latest: dict[str, tuple[int, int, str]] = {}
    for name, state in states.items():
        for doc_id, grade in state.grades.items():
            event_id = state.label_events[doc_id]
            if doc_id not in latest or event_id > latest[doc_id][0]:
                latest[doc_id] = (event_id, grade, name)
    grades = {doc_id: grade for doc_id, (_, grade, _) in latest.items()}
    return GoldenLabel(
        status,
        answerable,
        mode,
        grades=grades,
        order={doc_id: event_id for doc_id, (event_id, _, _) in latest.items()},
        sources={doc_id: name for doc_id, (_, _, name) in latest.items()},
        holes=holes_left(status, mode, grades, context, any(s.holes for s in states.values()))
        if context
        else 0,
    )


def export_record(
    query: Mapping,
    states: Mapping[str, QueryState],
    context: QueryContext,
    label: GoldenLabel,
    decision: Decision | None = None,
) -> dict:
    """The golden-set JSONL record (docs/formats.md) of one query: its golden ``label`` (see
    :func:`merge`; the store reads it from its projection), with its annotators' ``states``
    beside it and the reviewer's ``decision`` that counts, if any.

    ``query`` holds query_id, query, slice and metadata. Unjudged docs are absent.
    ``judgments`` lists candidates in display order, then docs attached from search.
    ``judged_depth`` is the number of judged candidates (for a list judged top-down, the depth
    reached); ``first_relevant_rank`` the display position of the first relevant candidate
    (:func:`first_relevant_position`; the field keeps its published name, docs/formats.md).
    ``status`` is done, skipped or pending (a query started but not finished is pending). An
    annotator whose every action was undone has left nothing and is not listed.

    Nothing is lost in the merge: when annotators' labels differ, or a reviewer decided,
    ``labels`` keeps each annotator's own label (see :func:`annotator_label`); an adjudicated
    record also has ``adjudication`` (reviewer, adopted annotator, grades, answerability, note,
    ``decided_at``). When every annotator gave the same label, it is the final one, and the
    record has only the keys docs/formats.md lists.

    Where the record alone could not rebuild the query on import (see :func:`_needs_pool`),
    ``pool`` holds its candidates: ``order`` (doc ids in display order) and ``runs`` (each
    pooled run's doc ids in rank order; ``import`` is an imported list), so that export,
    import and export again give the same records.
    """
    states = {name: state for name, state in states.items() if state.contributed}
    positions = context.positions
    judgments = _in_display_order(label.grades, positions, label.order)
    updated = [state.updated_at for state in states.values() if state.updated_at]
    if decision is not None:
        updated.append(decision.created_at)
    record = {
        "query_id": query["query_id"],
        "query": query["query"],
        "slice": query["slice"],
        "status": EXPORTED_STATUS[label.status],
        "answerable": label.answerable,
        "judgments": judgments,
        "first_relevant_rank": first_relevant_position(judgments, positions, context.threshold),
        "judged_depth": sum(1 for doc_id in judgments if doc_id in positions),
        "mode": label.mode or context.default_mode,
        "annotators": sorted(states),
        "seconds": round(float(sum(state.seconds for state in states.values())), 3),
        "labelled_at": to_export_time(max(updated)) if updated else None,
        "notes": "\n".join(states[name].note for name in sorted(states) if states[name].note),
    }
    if query.get("metadata"):
        record["metadata"] = query["metadata"]
    labels = {name: annotator_label(states[name], positions) for name in sorted(states)}
    if decision is not None or len({_label_key(label) for label in labels.values()}) > 1:
        record["labels"] = labels
    if decision is not None:
        record["adjudication"] = {
            "reviewer": decision.reviewer,
            "adopted": decision.adopted,
            "judgments": judgments,
            "answerable": decision.answerable,
            "note": decision.note,
            "decided_at": to_export_time(decision.created_at),
        }
    if label.holes or _needs_pool(record, positions):  # the holes are the pool's
        record[POOL_KEY] = {
            "order": sorted(positions, key=positions.__getitem__),
            "runs": {run: list(ranking) for run, ranking in context.rankings.items()},
        }
    return record


def _needs_pool(record: Mapping, positions: Mapping[str, int]) -> bool:
    """True when the record alone cannot rebuild the query on import, so that the export
    carries its candidates (``pool``): the judged candidates are not display positions
    1..judged_depth, or the query is unfinished with labels (what is left to judge then
    decides its status), or it keeps annotators' own ``labels`` (judged over the whole list).
    """
    judged = sorted(positions[doc_id] for doc_id in record["judgments"] if doc_id in positions)
    return bool(positions) and (
        "labels" in record
        or judged != list(range(1, len(judged) + 1))
        or (record["status"] != "done" and bool(record["judgments"]))
    )


def annotator_label(state: QueryState, positions: Mapping[str, int]) -> dict:
    """One annotator's own label of a query, as the export keeps it beside the final one:
    status, answerable, judgments (display order), first_relevant_rank (the display position,
    :func:`first_relevant_position`), judged_depth, mode, labelled_at."""
    return {
        "status": EXPORTED_STATUS[state.status],
        "answerable": state.answerable,
        "judgments": _in_display_order(state.grades, positions, state.label_events),
        "first_relevant_rank": state.first_relevant_position,
        "judged_depth": state.judged_depth,
        "mode": state.mode,
        "labelled_at": to_export_time(state.updated_at) if state.updated_at else None,
    }


def first_relevant_position(
    judgments: Mapping[str, int], positions: Mapping[str, int], threshold: int
) -> int | None:
    """The position on the annotator's screen (1-based, display order) of the first candidate
    judged relevant (grade >= ``threshold``); None when no candidate is. Not a rank in a
    system's run (that is :attr:`goldset.eval.ranking.Ranking.first_relevant_rank`): a pool
    of several runs is shown in fused order."""
    relevant = [positions[d] for d, g in judgments.items() if d in positions and g >= threshold]
    return min(relevant) if relevant else None


def _in_display_order(
    grades: Mapping[str, int], positions: Mapping[str, int], order: Mapping[str, int]
) -> dict[str, int]:
    """Candidates in display order, then other docs (attached from search) in ``order``."""
    after_candidates = len(positions) + 1
    ranked = sorted(grades, key=lambda d: (positions.get(d, after_candidates), order[d]))
    return {doc_id: grades[doc_id] for doc_id in ranked}


def _label_key(label: Mapping) -> tuple:
    """What makes two annotators' labels the same: status, answerability and grades."""
    return label["status"], label["answerable"], tuple(label["judgments"].items())


def events_for_record(record: Mapping, threshold: int = 1) -> list[dict]:
    """The events that reproduce a golden record when replayed (importing a golden set).

    Each listed annotator (or ``"import"`` when none is listed) gets a judge event for each of
    the first ``judged_depth`` judged docs (the candidates), an attach event for the rest
    (docs found by search), then the verdict or skip that the status and answerability imply.
    The record's seconds go on the first event, its note to the first annotator; every event
    is dated ``labelled_at``.
    """
    annotators = list(record["annotators"]) or ["import"]
    judgments = list(record["judgments"].items())
    depth = record["judged_depth"]
    relevant = any(grade >= threshold for _, grade in judgments)
    steps = [("judge" if i < depth else "attach", d, g) for i, (d, g) in enumerate(judgments)]
    if record["status"] == "done" and not record["answerable"]:
        steps.append(("unanswerable", None, None))
    elif record["status"] == "done" and not relevant:
        steps.append(("miss", None, None))
    elif record["status"] == "skipped":
        steps.append(("skip", None, None))
    events = []
    for annotator in annotators:
        for action, doc_id, grade in steps:
            events.append(
                {"annotator": annotator, "action": action, "doc_id": doc_id, "grade": grade}
            )
    if record["notes"]:
        events.append({"annotator": annotators[0], "action": "note", "note": record["notes"]})
    for position, event in enumerate(events):
        event["mode"] = record["mode"]
        event["seconds"] = record["seconds"] if position == 0 else 0.0
    return events


# --- time stamps ----------------------------------------------------------------------------------


def now() -> str:
    """The current UTC time as stored in the log (microseconds, ``Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def to_log_time(text: str) -> str:
    """Normalise an ISO-8601 time (with an offset or ``Z``; naive means UTC) to the log's form."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def to_export_time(log_time: str) -> str:
    """A log time as exported: whole seconds, ``Z`` (``2026-11-30T10:01:02Z``)."""
    return log_time[:19] + "Z"


# --- files ----------------------------------------------------------------------------------------


def write_jsonl(records: Iterable[Mapping], path: str | Path) -> int:
    """Write golden-set records, one JSON object a line (UTF-8, text kept verbatim); return
    how many were written."""
    count = 0
    with _replacing(path) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count


def write_qrels(records: Iterable[Mapping], path: str | Path) -> int:
    """Write TREC qrels (``qid 0 docno grade``) for the scored queries; return the line count.

    Scored queries are those that are done and answerable (as in the metrics). Every judged
    doc is listed, grade 0 included, so that a query whose judged docs are all non-relevant
    (a miss) does not disappear. Skipped, pending and unanswerable queries are only in the
    JSONL, which remains the complete record.
    """
    count = 0
    with _replacing(path) as handle:
        for record in records:
            if record["status"] != "done" or not record["answerable"]:
                continue
            for doc_id, grade in record["judgments"].items():
                _check_qrels_token(record["query_id"], "query_id")
                _check_qrels_token(doc_id, "doc_id")
                handle.write(f"{record['query_id']} 0 {doc_id} {grade}\n")
                count += 1
    return count


@contextmanager
def _replacing(path: str | Path) -> Iterator[TextIO]:
    """Write a file whole or not at all: into a temporary file beside it, moved over ``path``
    once everything is written, so that an export failing halfway leaves the old file."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.partial")
    try:
        with temporary.open("w", encoding="utf-8", newline="\n") as handle:
            yield handle
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _check_qrels_token(value: str, name: str) -> None:
    # qrels are whitespace-separated: an id with a space would silently shift the columns.
    if not value or any(character.isspace() for character in value):
        raise ValueError(f"{name} {value!r} cannot be written to TREC qrels (empty or has spaces)")
