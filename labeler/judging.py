"""What one annotator's key presses mean: a thin layer over :class:`labeler.store.Store`.

No Streamlit here: the label page renders a :class:`QueryView` and sends every key (typed or
clicked) to :meth:`LabelSession.press`. Each press costs a few indexed reads and at most one
write; nothing loads a whole table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from labeler import team
from labeler.golden import MODES
from labeler.store import Store

# Active time per judgement is the time since the previous action, capped: reading a candidate
# takes seconds to a minute, so a longer gap means the annotator stepped away (a call, a break)
# and counting it whole would inflate the measured cost. Capping, rather than dropping, keeps
# a long but real read counted up to the cap.
IDLE_CAP_SECONDS = 120.0

NAVIGATION_KEYS = "umsznp"
KEY_HELP = {
    "u": "unanswerable",
    "m": "miss",
    "s": "skip",
    "z": "undo",
    "n": "next query",
    "p": "previous query",
}
GRADE_NAMES = ("not relevant", "relevant", "highly relevant", "perfect")


def grade_name(grade: int) -> str:
    """What a grade means on the default 0-3 scale (0/1 in binary projects)."""
    return GRADE_NAMES[grade] if 0 <= grade < len(GRADE_NAMES) else f"grade {grade}"


@dataclass
class ActiveTime:
    """Seconds of active work between an annotator's actions, idle gaps capped."""

    cap: float = IDLE_CAP_SECONDS
    last: float = field(default_factory=time.monotonic)

    def lap(self, now: float | None = None) -> float:
        """Return the seconds since the previous lap (at most ``cap``) and start a new one."""
        now = time.monotonic() if now is None else now
        elapsed = min(self.cap, max(0.0, now - self.last))
        self.last = now
        return elapsed


@dataclass(frozen=True)
class QueryView:
    """Everything the label page shows for the current query, read in one go."""

    query: dict
    state: dict
    mode: str
    candidates: list[dict]
    current: dict | None
    attached: list[dict]

    @property
    def verdict_due(self) -> bool:
        """True when every candidate that matters is judged and none is relevant."""
        return self.state["needs_verdict"]

    @property
    def no_relevant_candidate(self) -> bool:
        """True when the candidates hold no answer: a verdict is due or was given (U/M)."""
        return self.verdict_due or (
            self.state["status"] == "done" and self.state["first_relevant_rank"] is None
        )


class LabelSession:
    """One annotator judging in one browser session: the current query and what keys do."""

    def __init__(self, store: Store, annotator: str, mode: str | None = None):
        """Open the session where the annotator left off (their unfinished query, else the next)."""
        settings = store.settings()
        self.store = store
        self.annotator = annotator
        self.max_grade: int = settings["max_grade"]
        self.rel_threshold: int = settings["rel_threshold"]
        self.mode: str = mode or settings["mode"]
        self.query_id: str | None = store.resume_query(annotator)
        self.message = ""
        self.active_time = ActiveTime()

    def set_mode(self, mode: str) -> None:
        """Choose the mode for queries not yet started (a started query keeps its own)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode

    @property
    def grade_keys(self) -> str:
        """The digit keys that judge: ``0``..max_grade (``01`` in a binary project)."""
        return "".join(str(grade) for grade in range(self.max_grade + 1))

    @property
    def accepted_keys(self) -> str:
        """Every key the page acts on."""
        return self.grade_keys + NAVIGATION_KEYS

    def view(self) -> QueryView | None:
        """The current query as the page shows it, or None when no query is left.

        Its reads share one snapshot, so that a write by another annotator in between
        cannot show, say, a state from before it beside candidates from after it.
        """
        if self.query_id is None:
            return None
        with self.store.snapshot():
            return self._view(self.query_id)

    def _view(self, query_id: str) -> QueryView:
        annotator = self.annotator
        state = self.store.query_state(query_id, annotator)
        mode = state["mode"] if state["judged_depth"] else self.mode
        candidates = self.store.candidates(query_id, annotator)
        candidate_ids = {candidate["doc_id"] for candidate in candidates}
        attached = [
            {**self.store.document(doc_id), "grade": grade}
            for doc_id, grade in self.store.labels(query_id, annotator).items()
            if doc_id not in candidate_ids
        ]
        return QueryView(
            query=self.store.query(query_id),
            state=state,
            mode=mode,
            candidates=candidates,
            current=self.store.next_candidate(query_id, annotator, mode),
            attached=attached,
        )

    def progress(self) -> dict[str, dict[str, int]]:
        """The annotator's progress per slice (see :meth:`Store.progress`)."""
        return self.store.progress(self.annotator)

    def press_typed(self, key: str, *, page: str, seq: int, lag_seconds: float = 0.0) -> None:
        """Apply a key typed in a browser page (see :mod:`labeler.keys`).

        Its active time runs to when it was typed, ``lag_seconds`` before now, rather than
        to when it reached the server. Its writes carry ``(page, seq)`` into the log, so
        that a restarted server never applies it again (see :meth:`Store.key_press`).
        """
        typed_at = time.monotonic() - lag_seconds
        with self.store.key_press(page, seq):
            self.press(key, self.active_time.lap(typed_at))

    def press(self, key: str, seconds: float | None = None) -> None:
        """Apply one key: a grade digit, or u/m/s/z/n/p (see ``KEY_HELP``).

        ``seconds`` is the active time to record (default: measured since the previous
        action). A key that does not apply here leaves the data unchanged and says why in
        :attr:`message`.
        """
        seconds = self.active_time.lap() if seconds is None else seconds
        key = key.lower()
        actions = {
            **{grade: partial(self._judge, int(grade), seconds) for grade in self.grade_keys},
            "u": partial(self._verdict, "unanswerable", seconds),
            "m": partial(self._verdict, "miss", seconds),
            "s": partial(self._skip, seconds),
            "z": self._undo,
            "n": partial(self._navigate, "n"),
            "p": partial(self._navigate, "p"),
        }
        if key not in actions:
            self.message = f"Key {key!r} does nothing here."
            return
        self._guarded(actions[key])

    def attach(self, doc_id: str) -> None:
        """Attach a document found by search as the relevant answer the system missed."""
        if self.query_id is None:
            return
        grade, query_id = max(1, self.rel_threshold), self.query_id

        def attach() -> None:
            self.store.attach(query_id, doc_id, grade, self.annotator, self.active_time.lap())
            self.message = "Attached the missed document as relevant (query done as a miss)."

        self._guarded(attach)

    def save_note(self, text: str) -> None:
        """Save the annotator's note on the current query (unchanged notes are not re-logged)."""
        if self.query_id is None:
            return
        query_id = self.query_id

        def save() -> None:
            if text != self.store.query_state(query_id, self.annotator)["note"]:
                self.store.set_note(query_id, self.annotator, text)
                self.message = "Note saved."

        self._guarded(save)

    def _guarded(self, action: Callable[[], None]) -> None:
        """Run an action if the annotator may still label — their account is read now, on the
        server, so the open page of a removed user writes nothing — and turn a refusal or bad
        input into :attr:`message`."""
        try:
            team.authorize(self.store, self.annotator, "annotator")
            action()
        except (ValueError, PermissionError) as error:
            self.message = f"Not done: {error}"

    # --- actions -------------------------------------------------------------------------------

    def _require_query(self) -> str:
        if self.query_id is None:
            raise ValueError("no query left to label")
        return self.query_id

    def _judge(self, grade: int, seconds: float) -> None:
        query_id = self._require_query()
        state = self.store.query_state(query_id, self.annotator)
        mode = state["mode"] if state["judged_depth"] else self.mode
        current = self.store.next_candidate(query_id, self.annotator, mode)
        if current is None:
            self.message = (
                "Every candidate is judged and none is relevant: U unanswerable or M miss."
                if state["needs_verdict"]
                else "This query is complete: N next query, Z undo."
            )
            return
        self.store.judge(query_id, current["doc_id"], grade, self.annotator, seconds, mode)
        self.message = f"#{current['position']} judged {grade} · {grade_name(grade)}."
        self._advance_if_done(query_id)

    def _verdict(self, action: str, seconds: float) -> None:
        query_id = self._require_query()
        view = self.view()
        if not view.no_relevant_candidate:
            self.message = f"{action.capitalize()} applies once every candidate is judged 0."
            return
        self.store.mark(query_id, action, self.annotator, seconds)
        self.message = f"Marked {action}."
        self._advance_if_done(query_id)

    def _skip(self, seconds: float) -> None:
        query_id = self._require_query()
        self.store.mark(query_id, "skip", self.annotator, seconds)
        self.message = "Skipped: the query comes back later."
        self.query_id = self.store.next_query(self.annotator, after=query_id)

    def _undo(self) -> None:
        undone = self.store.undo(self.annotator)
        if undone is None:
            self.message = "Nothing left to undo."
            return
        self.query_id = undone["query_id"]
        self.message = f"Undid {undone['action']}."

    def _navigate(self, key: str) -> None:
        if key == "n":
            target = self.store.next_query(self.annotator, after=self.query_id)
        else:
            target = self.store.previous_query(self.annotator, before=self.query_id)
        if target is None:
            self.message = "No next query." if key == "n" else "No previous query."
            return
        self.query_id = target
        self.message = ""

    def _advance_if_done(self, query_id: str) -> None:
        if self.store.query_state(query_id, self.annotator)["status"] == "done":
            self.query_id = self.store.next_query(self.annotator, after=query_id)
