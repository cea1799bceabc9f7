"""What one annotator's key presses mean: a thin layer over :class:`goldset.labeler.store.Store`.

No Streamlit here: the label page renders a :class:`LabelPage` and sends every key (typed or
clicked) to :meth:`LabelSession.press`. A press is one transaction — a write transaction for
a key that may write (see :data:`WRITING_ACTIONS`), a read snapshot for the others — and a
rerun of the page reads once (:meth:`LabelSession.page`); nothing loads a whole table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from copy import copy
from dataclasses import dataclass, field
from functools import partial

from goldset.labeler import accounts, keys, team
from goldset.labeler.store import QuerySheet, StaleTarget, Store, is_busy, is_write_failure

# Active time per judgement is the time since the previous action, capped: reading a candidate
# takes seconds to a minute, so a longer gap means the annotator stepped away (a call, a break)
# and counting it whole would inflate the measured cost. Capping, rather than dropping, keeps
# a long but real read counted up to the cap.
IDLE_CAP_SECONDS = 120.0

HISTORY_SIZE = 10
SEARCH_RESULTS = 8
GRADE_NAMES = ("not relevant", "relevant", "highly relevant", "perfect")
IMPLIED_NAME = "by verdict"  # a 0 that U or M gave a candidate nobody graded
# The actions of the key table that write (with the grade digits): their press is one write
# transaction; any other key reads in one snapshot, so that moving or navigating never waits
# for the write lock (a long import).
WRITING_ACTIONS = frozenset({"unanswerable", "miss", "skip", "undo", "undo_here", "attach"})
# What a press that could not be stored leaves of a session as it was (see LabelSession._where).
_PLACE = ("_query_id", "history", "cursor", "search", "history_armed", "message")


class StillBusy(Exception):
    """A press could not be committed yet (another writer holds the database): it is kept
    unacknowledged, and the page sends it again."""


class WriteFailed(StillBusy):
    """A press could not be stored: the file refused the write (full disk, read-only file,
    I/O error). Nothing was written; like a busy database, the press is kept unacknowledged
    and the page sends it again until a write succeeds."""


def press_name(key: str, target: dict | None = None) -> str:
    """What a key press does, in words, with the query (and card) it was aimed at: the
    annotator is told which of their actions was not saved (static words and ids only)."""
    target = target or {}
    if key.isdigit():
        action = f"grade {key}" + (f" on card {target['doc']}" if target.get("doc") else "")
    else:
        action = keys.action_words(key) if key in keys.KEY_ACTIONS else key
    return action + (f" (query {target['query']})" if target.get("query") else "")


def first_card(candidates: list[dict], threshold: int) -> dict | None:
    """The card a finished query opens on: its first relevant candidate, else its first."""
    relevant = (c for c in candidates if c["grade"] is not None and c["grade"] >= threshold)
    return next(relevant, candidates[0] if candidates else None)


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
    asserted: frozenset[str] = frozenset()  # candidates graded 0 by U/M, not pressed

    @property
    def verdict_due(self) -> bool:
        """True when every candidate that matters is judged and none is relevant."""
        return self.state["needs_verdict"]

    @property
    def verdict(self) -> str | None:
        """How the query was completed, in words, or None while it is not done."""
        state = self.state
        if not state["complete"]:  # done with holes: a new run's docs wait on this page
            return None
        if state["first_relevant_rank"] is not None:
            return f"first relevant #{state['first_relevant_rank']}"
        if not state["answerable"]:
            return "unanswerable"
        return "miss, answer attached" if self.attached else "miss"


@dataclass(frozen=True)
class LabelPage:
    """What the label page shows after a rerun, read in one snapshot (see
    :meth:`LabelSession.page`): the open query (None when nothing is left), the one completing
    it leads to (``ahead``), the action Z would take back (``last_action``) and the view of
    its query when that is another one the annotator may open (``behind``), the annotator's
    progress per slice, and the states of the recent queries (the history strip)."""

    view: QueryView | None
    ahead: QueryView | None
    last_action: dict | None
    behind: QueryView | None
    progress: dict[str, dict[str, int]]
    recent: dict[str, dict]


@dataclass
class Search:
    """The corpus search open on a query: its text, the results and the selected one."""

    query_id: str
    text: str
    results: list[dict] = field(default_factory=list)
    selected: int = 0


class LabelSession:
    """One annotator judging in one browser session: the current query and what keys do.

    The protocol (mode, depth, grade scale, threshold) is the project's, read again by every
    press and every page read in its own transaction: an admin's change reaches open pages
    at their next key press or rerun.
    """

    def __init__(self, store: Store, annotator: str):
        """Open the session where the annotator left off (their unfinished query, else the next)."""
        self.store = store
        self.annotator = annotator
        self.message = ""
        self.active_time = ActiveTime()
        self.cursor: str | None = None  # a candidate picked with j/k, else the next to judge
        self.search: Search | None = None
        self.history_armed = False  # H was pressed: the next digit opens a history entry
        # An action was refused for the account (signed out, removed, role changed): the page
        # must rerun whole, so that its sign-in gate shows instead of this fragment.
        self.refused_account = False
        # The last press the database refused to store, in words (see WriteFailed): shown
        # until a press is stored again.
        self.unsaved = ""
        self._protocol: dict | None = None  # as the latest press or page read found it
        self._query_id: str | None = None
        with store.snapshot():
            # Queries viewed, newest first (the open one first); seeded with the latest worked on.
            self.history: list[str] = store.recent_queries(annotator, HISTORY_SIZE)
            resumed = store.resume_query(annotator)
            if resumed is not None and not self._may_open(resumed):  # dealt to others since
                resumed = store.next_query(annotator)
        self.query_id = resumed

    @property
    def query_id(self) -> str | None:
        """The open query (None when nothing is left). Opening one puts it in the history."""
        return self._query_id

    @query_id.setter
    def query_id(self, query_id: str | None) -> None:
        if query_id != self._query_id:
            self.cursor, self.search, self.history_armed = None, None, False
        self._query_id = query_id
        if query_id is not None:
            self.history = [query_id, *(q for q in self.history if q != query_id)]
            del self.history[HISTORY_SIZE:]

    @property
    def protocol(self) -> dict:
        """The project's labelling protocol (see :meth:`Store.settings`) as this session's
        latest press or page read found it (read now if none did yet, or after
        :meth:`read_protocol`)."""
        if self._protocol is None:
            self._protocol = self.store.settings()
        return self._protocol

    def read_protocol(self) -> dict:
        """Read the project's protocol again (a page rerun whole, e.g. its sidebar) and return
        it."""
        self._protocol = self.store.settings()
        return self._protocol

    @property
    def grade_keys(self) -> str:
        """The digit keys that judge: ``0``..max_grade (``01`` in a binary project)."""
        return keys.grade_keys(self.protocol["max_grade"])

    @property
    def accepted_keys(self) -> list[str]:
        """Every key the page sends (see :func:`goldset.labeler.keys.accepted_keys`)."""
        return keys.accepted_keys(self.protocol["max_grade"])

    def page(self) -> LabelPage:
        """Everything a rerun of the label page shows (see :class:`LabelPage`), read in one
        snapshot: the queries it shows in one statement, from the projections the presses
        wrote."""
        with self.store.snapshot():
            self._protocol = self.store.settings()
            desk = self.store.desk(self.annotator, self.query_id, self.recent())
            behind_id = self._behind(desk.last_action, desk.ahead)
            sheets = self._sheets(self.query_id, desk.ahead, behind_id)
            return LabelPage(
                view=self._view(sheets[self.query_id]) if self.query_id else None,
                ahead=self._view(sheets[desk.ahead], own_cursor=False) if desk.ahead else None,
                last_action=desk.last_action,
                behind=self._view(sheets[behind_id], own_cursor=False) if behind_id else None,
                progress=desk.progress,
                recent=desk.recent,
            )

    def _behind(self, last: dict | None, ahead_id: str | None) -> str | None:
        """The query of the action Z would take back (``last``) when the page shows it hidden:
        another than the open one, that the annotator may open (``ahead_id``, from their
        queue, is)."""
        if last is None or last["query_id"] == self.query_id:
            return None
        if last["query_id"] != ahead_id and not self._may_open(last["query_id"]):
            return None
        return last["query_id"]

    def _sheets(self, *query_ids: str | None) -> dict[str, QuerySheet]:
        """These queries as the annotator works on them, in one statement (None: left out);
        ValueError for one the project no longer has."""
        wanted = list(dict.fromkeys(q for q in query_ids if q is not None))
        sheets = self.store.sheets(wanted, self.annotator) if wanted else {}
        for query_id in wanted:
            if query_id not in sheets:
                raise ValueError(f"unknown query {query_id!r}")
        return sheets

    def _view_of(self, query_id: str, *, own_cursor: bool = True) -> QueryView:
        """The view of one query (see :meth:`_view`), read now."""
        return self._view(self._sheets(query_id)[query_id], own_cursor=own_cursor)

    def _view(self, sheet: QuerySheet, *, own_cursor: bool = True) -> QueryView:
        """The view of a query: its current card is the one picked with J/K (this session's
        cursor, unless ``own_cursor`` is False), else the next one to judge."""
        cursor = self.cursor if own_cursor else None
        candidates, state = sheet.candidates, sheet.state
        current = next((c for c in candidates if c["doc_id"] == cursor), None)
        if current is None and not state["complete"]:
            current = next((c for c in candidates if c["doc_id"] == sheet.next_doc), None)
        if current is None and state["complete"]:  # reopened: a grade key changes a card
            current = first_card(candidates, self.protocol["rel_threshold"])
        return QueryView(
            query=sheet.query,
            state=state,
            mode=sheet.mode,
            candidates=candidates,
            current=current,
            attached=sheet.attached,
            asserted=sheet.asserted,
        )

    def _may_open(self, query_id: str) -> bool:
        """Whether this annotator may see and act on ``query_id`` (see
        :func:`goldset.labeler.team.may_open`, the one rule)."""
        return team.may_open(self.store, self.annotator, query_id)

    def reopen(self, query_id: str) -> None:
        """Open ``query_id`` (a history entry, a link) if this annotator may, else say why in
        :attr:`message`; nothing of a query outside their queue is read."""
        try:
            self._open(query_id)
        except ValueError as error:
            self.message = f"Not done: {error}"

    def _open(self, query_id: str) -> None:
        """Make ``query_id`` the open query, if this annotator may (see :meth:`_check_queue`)."""
        self._check_queue(query_id)
        self.query_id, self.message = query_id, ""

    def _check_queue(self, query_id: str) -> None:
        """Raise ValueError unless this annotator may act on ``query_id``: the same words for
        an unknown query and for one of another's queue, which tell nothing of it."""
        if not self._may_open(query_id):
            raise ValueError(f"no query {query_id} in your queue")

    def recent(self) -> list[str]:
        """The queries viewed before the open one, newest first: ``H`` + 1..9 reopens them."""
        return [q for q in self.history if q != self.query_id][:9]

    def press_typed(
        self,
        key: str,
        *,
        page: str,
        seq: int,
        lag_seconds: float = 0.0,
        target: dict | None = None,
    ) -> None:
        """Apply a key typed in a browser page (see :mod:`goldset.labeler.keys`).

        ``target`` is what the page showed when the key was typed: ``query`` (its id) and,
        for a grade, ``doc`` and ``grade`` (the card's grade then, None = unjudged). The
        press acts only there: on that query (opened here if need be), and on that card only
        if it still has the grade the page showed — a card judged meanwhile (in another tab)
        gets nothing, and the page is told. A press aimed at a query outside the annotator's
        queue (see :meth:`_may_open`) is refused: nothing of that query is opened or written.
        Its active time runs to when it was typed, ``lag_seconds`` before now. It is applied
        in one transaction that records ``(page, seq)`` with what it wrote, so that a
        restarted server never applies it again (see :meth:`Store.key_press`). A database
        held by another writer past the busy timeout raises :class:`StillBusy`, a write the
        file refused :class:`WriteFailed`, which :attr:`unsaved` names (nothing written,
        nothing of the session changed; the page sends the press again).
        """
        typed_at = time.monotonic() - lag_seconds
        try:
            self.press(key, self.active_time.lap(typed_at), target, tag=(page, seq))
        except WriteFailed as error:
            self.unsaved = f"Not saved: {press_name(key, target)} ({error})."
            raise
        self.unsaved = ""

    def click(self, action: Callable[..., None], *args: object) -> None:
        """Run ``action(*args)`` for a button (e.g. ``click(session.press, "1")``); a busy
        database is said in words, not raised."""
        try:
            action(*args)
        except WriteFailed as error:
            self.message = f"Not saved ({error}). Click again once it is fixed."
        except StillBusy:
            self.message = "Not saved: the database is busy (a long import?). Click again."

    def press(
        self,
        key: str,
        seconds: float | None = None,
        target: dict | None = None,
        *,
        tag: tuple[str, int] | None = None,
    ) -> None:
        """Apply one key of the key table (:data:`goldset.labeler.keys.KEY_ACTIONS`) or a grade
        digit, in one transaction (``tag``: the browser page's id and press number, recorded
        with what it writes; see :meth:`press_typed`).

        A grade aimed at the search (``target["attach"]``: the page showed the results)
        attaches the selected result with that grade; otherwise it grades a card. After H,
        any key is taken as the history entry (a wrong one is said, and H is no longer
        waiting). ``seconds`` is the active time to record (default: measured since the
        previous action); ``target`` as in :meth:`press_typed`. A key that does not apply
        here leaves the data unchanged and says why in :attr:`message`.
        """
        seconds = self.active_time.lap() if seconds is None else seconds
        key, target = key.lower(), target or {}
        writes = key.isdigit() or keys.KEY_ACTIONS.get(key, (None,))[0] in WRITING_ACTIONS
        self._guarded(partial(self._apply, key, seconds, target), writes=writes, tag=tag)

    def _apply(self, key: str, seconds: float, target: dict) -> None:
        """What :meth:`press` does, inside its transaction."""
        aimed_at = target.get("query")
        if aimed_at is not None and aimed_at != self.query_id:
            # The page showed another query than this session has open: the next one it
            # fetched ahead, when someone else's work has since changed the queue. The
            # press acts on the query the annotator saw, if it is theirs to act on.
            self._open(aimed_at)
        if self.history_armed:
            self.history_armed = False
            if key != "escape":  # Escape after H changes its mind
                self._reopen(key)
            return
        if key in self.grade_keys:
            if target.get("attach"):
                self._attach_selected(int(key))
            else:
                self._judge(int(key), seconds, target)
            return
        action = keys.KEY_ACTIONS.get(key, (None,))[0]
        actions = {
            "unanswerable": partial(self._verdict, "unanswerable", seconds),
            "miss": partial(self._verdict, "miss", seconds),
            "skip": partial(self._skip, seconds),
            "undo": self._undo,
            "undo_here": partial(self._undo, scoped=True),
            "next": partial(self._navigate, "n"),
            "previous": partial(self._navigate, "p"),
            "down": partial(self._move, 1),
            "up": partial(self._move, -1),
            "history": self._arm_history,
            "search": self.open_search,
            "attach": self._attach_selected,
            "escape": self.close_search,
        }
        if action not in actions:
            self.message = f"Key {key!r} does nothing here."
            return
        actions[action]()

    def attach(self, doc_id: str, grade: int | None = None) -> None:
        """Attach a document found by search as the answer the system missed, with ``grade``
        (default: the lowest relevant grade, at least 1); a relevant one completes the query
        (a miss whose answer was found) and the next one opens."""
        if self.query_id is None:
            return
        self._guarded(partial(self._attach, doc_id, grade))

    def _attach(self, doc_id: str, grade: int | None) -> None:
        query_id = self._require_query()
        grade = max(1, self.protocol["rel_threshold"]) if grade is None else grade
        self.store.attach(query_id, doc_id, grade, self.annotator, self.active_time.lap())
        self.message = f"Attached {doc_id}: {grade} · {grade_name(grade)}."
        self._advance_if_done(query_id)

    def save_note(self, text: str) -> None:
        """Save the annotator's note on the current query (unchanged notes are not re-logged)."""
        if self.query_id is None:
            return

        def save() -> None:
            query_id = self._require_query()
            if text != self.store.query_state(query_id, self.annotator)["note"]:
                self.store.set_note(query_id, self.annotator, text)
                self.message = "Note saved."

        self._guarded(save)

    def open_search(self, text: str | None = None) -> None:
        """Search the corpus for the open query's missed answer: by default with the query's
        own text. Results leave out the query's candidates; the first one is selected."""
        if self.query_id is None:
            return
        if text is None:
            text = self.search.text if self.search else self.store.query(self.query_id)["query"]
        candidate_ids = {c["doc_id"] for c in self.store.candidates(self.query_id)}
        results = [
            doc
            for doc in self.store.search(text, SEARCH_RESULTS + len(candidate_ids))
            if doc["doc_id"] not in candidate_ids
        ][:SEARCH_RESULTS]
        self.search = Search(self.query_id, text, results)
        self.message = "" if results else "No document outside the candidates matches."

    def close_search(self) -> None:
        """Close the search (Escape outside a text field)."""
        self.search = None

    def _guarded(
        self,
        action: Callable[[], None],
        *,
        writes: bool = True,
        tag: tuple[str, int] | None = None,
    ) -> None:
        """Run an action in one transaction — a write transaction (recording ``tag``, a
        browser page's press, with what it writes; see :meth:`Store.key_press`) if it
        ``writes``, else a read snapshot — if the annotator may still label: their account
        is read there, on the server, so the open page of a removed user writes nothing. A
        refusal or bad input becomes :attr:`message`, and nothing of it is written. A
        database another writer held past the busy timeout raises :class:`StillBusy`, a
        write the file refused :class:`WriteFailed`: nothing was written, and the session is
        left as it was before the action (the page sends the press again)."""
        before = self._where()
        try:
            with self.store.key_press(*(tag or ())) if writes else self.store.snapshot():
                accounts.authorize(self.store, self.annotator, "annotator")
                self._protocol = self.store.settings()
                action()
        except PermissionError as error:
            self.message, self.refused_account = f"Not done: {error}", True
        except ValueError as error:  # StaleTarget is a ValueError
            self.message = f"Not done: {error}"
        except Exception as error:
            if not (is_write_failure(error) or is_busy(error)):
                raise
            self._return_to(before)
            if is_write_failure(error):
                raise WriteFailed(str(error)) from error
            raise StillBusy(str(error)) from error

    def _where(self) -> dict[str, object]:
        """Where the session is (open query, history, cursor, search, H, message): what
        :meth:`_return_to` restores when a press could not be stored."""
        return {name: copy(getattr(self, name)) for name in _PLACE}

    def _return_to(self, where: dict[str, object]) -> None:
        """Put the session back where :meth:`_where` found it."""
        for name, value in where.items():
            setattr(self, name, value)

    # --- actions -------------------------------------------------------------------------------

    def _require_query(self) -> str:
        """The open query, checked again against the queue rule before an action on it (an
        admin may have dealt it to others since it was opened)."""
        if self.query_id is None:
            raise ValueError("no query left to label")
        self._check_queue(self.query_id)
        return self.query_id

    def _judge(self, grade: int, seconds: float, target: dict) -> None:
        query_id = self._require_query()
        view = self._view_of(query_id)
        if "doc" in target:
            doc = next((c for c in view.candidates if c["doc_id"] == target["doc"]), None)
            if doc is None:
                raise ValueError(f"{target['doc']!r} is not a candidate of {query_id!r}")
            expected = {"expected_grade": target.get("grade")}
        else:  # a click, or a key the page could not aim: the current candidate
            doc, expected = view.current, {}
        if doc is None:
            self.message = (
                "Every candidate is judged and none is relevant: U unanswerable or M miss."
                if view.verdict_due
                else "This query is complete: J/K pick a card to change, N next query, Z undo."
            )
            return
        try:
            self.store.judge(
                query_id, doc["doc_id"], grade, self.annotator, seconds, view.mode, **expected
            )
        except StaleTarget:
            self.message = (
                f"Not done: #{doc['position']} was judged meanwhile (in another tab?). "
                "This page now shows its current label: press again if you meant it."
            )
            return
        self.cursor = None
        self.message = f"#{doc['position']} judged {grade} · {grade_name(grade)}."
        self._advance_if_done(query_id)

    def _verdict(self, action: str, seconds: float) -> None:
        query_id = self._require_query()
        view = self._view_of(query_id)
        threshold = self.protocol["rel_threshold"]
        relevant = [c for c in view.candidates if (c["grade"] or 0) >= threshold]
        if relevant:
            self.message = (
                f"Not done: #{relevant[0]['position']} is judged relevant. Judge it 0 first "
                f"(J/K to reach it) or undo, then {action}."
            )
            return
        self.store.mark(query_id, action, self.annotator, seconds)
        self._advance_if_done(query_id)

    def _skip(self, seconds: float) -> None:
        query_id = self._require_query()
        self.store.mark(query_id, "skip", self.annotator, seconds)
        self.message = f"{query_id} skipped: it comes back later."
        self.query_id = self.store.next_query(self.annotator, after=query_id)

    def _undo(self, scoped: bool = False) -> None:
        scope = self._require_query() if scoped else None
        undone = self.store.undo(self.annotator, query_id=scope)
        if undone is None:
            self.message = "Nothing left to undo" + (" on this query." if scoped else ".")
            return
        if undone["query_id"] != scope and not self._may_open(undone["query_id"]):
            # raised inside the press's transaction: the undo is rolled back with it
            raise ValueError(f"your last action is on {undone['query_id']}, not in your queue")
        self.query_id = undone["query_id"]
        self.cursor = None
        self.message = f"Undid {undone['action']} on {undone['query_id']}."

    def _navigate(self, key: str) -> None:
        if key == "n":
            target = self.store.next_query(self.annotator, after=self.query_id)
        else:
            target = next(iter(self.recent()), None)
        if target is None:
            self.message = "No next query." if key == "n" else "No previous query."
            return
        self._open(target)

    def _arm_history(self) -> None:
        self.history_armed = bool(self.recent())
        self.message = "Press 1-9 to reopen a query from the history." if self.recent() else ""

    def _reopen(self, key: str) -> None:
        recent = self.recent()
        if not key.isdigit() or not 1 <= int(key) <= len(recent):
            self.message = f"No history entry {key!r}."
            return
        self.reopen(recent[int(key) - 1])

    def _move(self, step: int) -> None:
        """J/K: the selected search result, else the card the next grade key judges."""
        if self.search is not None and self.search.query_id == self.query_id:
            last = len(self.search.results) - 1
            self.search.selected = min(max(self.search.selected + step, 0), max(last, 0))
            return
        view = self._view_of(self._require_query())
        ids = [c["doc_id"] for c in view.candidates]
        if not ids:
            return
        here = ids.index(view.current["doc_id"]) if view.current else (-1 if step > 0 else 0)
        self.cursor = ids[min(max(here + step, 0), len(ids) - 1)]

    def _attach_selected(self, grade: int | None = None) -> None:
        """Enter (the default grade) or a grade key on the search results: attach the
        selected one."""
        search = self.search
        if search is None or search.query_id != self.query_id or not search.results:
            self.message = "Enter attaches a search result: / opens the search."
            return
        self._attach(search.results[search.selected]["doc_id"], grade)

    def _advance_if_done(self, query_id: str) -> None:
        """After a completing action: a notice naming the query and its verdict, and on to
        the next query."""
        view = self._view_of(query_id)
        if view.verdict is None:
            return
        self.message = f"{query_id} done — {view.verdict} · Z undoes"
        self.query_id = self.store.next_query(self.annotator, after=query_id)
