"""Keyboard input that loses no key press and applies none twice, however fast the typing;
and the one table of what each key does.

Streamlit's native ``shortcut=`` coalesces presses that arrive during a rerun. Instead a tiny
v2 component (``keys.js``) keeps an ordered log of ``(seq, key, ms, target)`` in the browser
and sends the whole unacknowledged log as its state; :func:`listen` hands each entry newer
than the last applied one to the caller exactly once, in order, and acknowledges it back to
the browser once the caller returned (a press that raises one of ``retry_on`` stays
unacknowledged and is sent again). Given a ``panel`` model, the component also shows each
press's effect at once, before the server answers (see ``keys.js``); :func:`panel_model` is
that model, the contract between the label page and ``keys.js``.

:data:`KEY_ACTIONS` is the key table: the server (:mod:`goldset.labeler.judging`) dispatches on it,
and :func:`listen` hands it to the browser as the component's data, so that the page's
immediate feedback and the server read the same keys. Streamlit is imported only by
:func:`listen`: the table is read by code that has no page.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from goldset.labeler import render

# Browser key names (``KeyboardEvent.key``) sent as another key: the arrows move like J/K.
BROWSER_KEYS = {"Enter": "enter", "Escape": "escape", "ArrowDown": "j", "ArrowUp": "k"}

# The key table: key -> (action, what it does). Grade digits come from the project's scale
# (see :func:`grade_keys`); after H, the digits 1-9 open a history entry whatever the scale.
KEY_ACTIONS = {
    "u": ("unanswerable", "unanswerable (at any candidate)"),
    "m": ("miss", "miss (at any candidate)"),
    "s": ("skip", "skip"),
    "z": ("undo", "undo the last action, on any query"),
    "x": ("undo_here", "undo the last action on this query"),
    "n": ("next", "next query"),
    "p": ("previous", "previously viewed query"),
    "j": ("down", "move down (a card, a search result)"),
    "k": ("up", "move up"),
    "h": ("history", "then 1-9: reopen a query from the history"),
    "/": ("search", "search the corpus (with the query's text)"),
    "enter": ("attach", "attach the selected search result (grade 1; or press its grade)"),
    "escape": ("escape", "leave a text field; close the search"),
}
HISTORY_KEYS = "123456789"
CARD_MARKER = "▶ judge this"  # the current card's badge


def action_words(key: str) -> str:
    """What a key of :data:`KEY_ACTIONS` does, short: its words before any parenthesis."""
    return KEY_ACTIONS[key][1].split(" (")[0]


def grade_keys(max_grade: int) -> str:
    """The digit keys that grade on a 0..``max_grade`` scale (``01`` in a binary project)."""
    return "".join(str(grade) for grade in range(max_grade + 1))


def accepted_keys(max_grade: int) -> list[str]:
    """Every key the label page sends to the server: the grades, the history digits, and
    each key of :data:`KEY_ACTIONS`."""
    digits = grade_keys(max_grade)
    return [*digits, *(d for d in HISTORY_KEYS if d not in digits), *KEY_ACTIONS]


def browser_table() -> dict:
    """The key table as the browser reads it (``keys.js``): browser key names and each
    key's action."""
    return {
        "browser": dict(BROWSER_KEYS),
        "actions": {key: action for key, (action, _) in KEY_ACTIONS.items()},
        "history": HISTORY_KEYS,
    }


class PanelSession(Protocol):
    """What :func:`panel_model` reads of a label session (``judging.LabelSession``, which
    imports this module, so it is described here rather than imported)."""

    @property
    def protocol(self) -> Mapping[str, Any]:
        """The project's labelling protocol: mode, max_grade, rel_threshold, depth."""

    @property
    def search(self) -> object | None:
        """The corpus search open on the query, None when closed."""

    @property
    def history_armed(self) -> bool:
        """H was pressed: the next key opens a history entry."""


class PanelView(Protocol):
    """What :func:`panel_model` reads of a query as the page shows it (``judging.QueryView``)."""

    @property
    def query(self) -> Mapping[str, Any]:
        """query_id, query (its text) and slice."""

    @property
    def state(self) -> Mapping[str, Any]:
        """The annotator's state of the query (``Store.query_state``)."""

    @property
    def mode(self) -> str:
        """The mode the query is labelled in."""

    @property
    def candidates(self) -> Sequence[Mapping[str, Any]]:
        """The cards, in display order: doc_id, grade (None when unjudged), provenance."""

    @property
    def current(self) -> Mapping[str, Any] | None:
        """The card the next grade key judges."""

    @property
    def asserted(self) -> Collection[str]:
        """The cards a verdict graded 0, not pressed one by one."""


def panel_model(
    session: PanelSession,
    view: PanelView | None,
    ahead: PanelView | None = None,
    last_action: Mapping[str, Any] | None = None,
    *,
    grade_name: Callable[[int], str],
    implied: str,
) -> dict | None:
    """What the key listener (``keys.js``) needs to show a press's effect before the server
    answers: the query on screen, (``ahead``) the one its completion leads to and
    (``last_action``) what Z would take back, so that the listener keeps its own undo models
    only while they end with that action (a click or another tab may have acted since);
    whether the search is open (``searching``) and H waits for a digit (``armed``).
    ``grade_name`` and ``implied`` are the page's words for a grade and for a 0 a verdict
    gave. tests/test_key_cases.py holds what ``keys.js`` makes of it to the server's rules."""
    if view is None:
        return None
    protocol = session.protocol
    words = {"grade_name": grade_name, "implied": implied}
    following = None if ahead is None else _query_panel(protocol, ahead, **words)
    return {
        **_query_panel(protocol, view, **words),
        # Opening another query closes the search and stops H waiting.
        "next": following and {**following, "searching": False, "armed": False},
        "undo_to": last_action and [last_action["query_id"], last_action["doc_id"]],
        "searching": session.search is not None,
        "armed": session.history_armed,
    }


def _query_panel(
    protocol: Mapping[str, Any],
    view: PanelView,
    *,
    grade_name: Callable[[int], str],
    implied: str,
) -> dict:
    """One query's part of :func:`panel_model`: its cards, their grades and the current one,
    and the rules that apply to it. ``rankings``, on a first-hit query pooled from several
    runs (an imported list is one): each run by name, as its cards' indices best first, so
    that ``keys.js`` picks the next card and tells whether a grade completes the query by the
    server's rules (:mod:`goldset.labeler.pooling`); None for one ranking, the cards' order.
    The cards are every candidate within the depth, the docs the server's rules read
    (``store.log.query_context``): no run ranks a doc the page lacks."""
    query = view.query
    index = {card["doc_id"]: number for number, card in enumerate(view.candidates)}
    ranked: dict[str, list[tuple[int, str]]] = {}
    for card in view.candidates:
        for run, rank in card["provenance"].items():
            ranked.setdefault(run, []).append((rank, card["doc_id"]))
    return {
        "query": query["query_id"],
        "text": query["query"],
        "meta": render.query_meta(query["query_id"], query["slice"], escape=False),
        "next": None,
        "undo_to": None,
        # [doc_id, grade, graded 0 by the verdict]
        "cards": [[c["doc_id"], c["grade"], c["doc_id"] in view.asserted] for c in view.candidates],
        "current": view.current["doc_id"] if view.current else None,
        "mode": view.mode,
        "threshold": protocol["rel_threshold"],
        "done": view.state["status"] == "done",
        # ties in a run's ranks go by doc id, as the server orders them
        "rankings": [[index[doc] for _, doc in sorted(ranked[run])] for run in sorted(ranked)]
        if view.mode == "first_hit" and len(ranked) > 1
        else None,
        "grades": grade_keys(protocol["max_grade"]),
        "names": [grade_name(grade) for grade in range(protocol["max_grade"] + 1)],
        "implied": implied,
        "marker": CARD_MARKER,
    }


@cache
def _component() -> Callable[..., Any]:
    """The listener component, declared once per process, on first use."""
    import streamlit as st

    return st.components.v2.component(
        "goldset.keys",
        html='<span class="goldset-keys" title="Keyboard shortcuts are active">⌨ keys on</span>',
        css=".goldset-keys { font-size: 0.75rem; opacity: 0.6; }",
        js=(Path(__file__).parent / "keys.js").read_text(encoding="utf-8"),
    )


@dataclass(frozen=True)
class KeyPress:
    """One key press from the browser: its sequence number and key, how many seconds
    before the newest press of the same batch it was typed (0 for the newest), so that
    presses applied together can still be timed apart, the id of its browser page, and
    what it was aimed at on screen (``{"query": ..., "doc": ..., "grade": ...}``, None
    when the page could not tell)."""

    seq: int
    key: str
    lag_seconds: float = 0.0
    page: str | None = None
    target: dict | None = None


@dataclass
class KeyCursor:
    """How far this session has applied the key log of the browser page it talks to."""

    page: str | None = None
    applied: int = 0

    def take_new(
        self, log: Mapping[str, Any] | None, applied_before: Callable[[str], int] | None = None
    ) -> list[KeyPress]:
        """Return the presses in ``log`` newer than the last applied one, oldest first.

        A log from a page this cursor has not seen starts the count again: from 0 for a
        reloaded page, or from ``applied_before(page)`` — the last press of that page that an
        earlier server process applied (a restart loses the session, not the browser's log).
        The caller marks each press applied with :meth:`mark_applied` as soon as it is applied.
        """
        if not log:
            return []
        page = log.get("page")
        if page != self.page:
            self.page = page
            self.applied = applied_before(page) if applied_before and page else 0
        entries = [
            (int(s), str(k), float(ms), rest[0] if rest and isinstance(rest[0], dict) else None)
            for s, k, ms, *rest in log.get("entries", [])
        ]
        newest_ms = max((ms for _, _, ms, _ in entries), default=0.0)
        return [
            KeyPress(seq, key, (newest_ms - ms) / 1000, page, target)
            for seq, key, ms, target in entries
            if seq > self.applied
        ]

    def mark_applied(self, press: KeyPress) -> None:
        """Record that ``press`` was applied, so that no later log applies it again."""
        self.applied = press.seq


def listen(
    accepted_keys: str | Sequence[str],
    on_key: Callable[[KeyPress], None],
    *,
    focus: Mapping[str, str] | None = None,
    follow: str | None = None,
    applied_before: Callable[[str], int] | None = None,
    retry_on: tuple[type[BaseException], ...] = (),
    panel: Mapping[str, Any] | None = None,
    unsaved: bool = False,
    key: str = "goldset_keys",
) -> None:
    """Mount the key listener; ``on_key`` receives every new press of ``accepted_keys`` once.

    ``accepted_keys`` are single characters, plus ``"enter"`` and ``"escape"`` if wanted
    (the arrow keys arrive as ``j``/``k``). Presses are handled in a widget callback, before
    the script (or fragment) body runs, so the page rendered afterwards already shows their
    effect. A press is acknowledged to the browser only after ``on_key`` returned: when it
    raises one of ``retry_on`` (e.g. the database is busy), it and the presses after it stay
    in the browser's log, which sends them again shortly (the page says "saving…" meanwhile).
    Keys typed into text fields are ignored by the browser side; Escape leaves such a field.
    ``focus`` maps a key to the label of a text field that the key jumps to, when that field
    is on the page (e.g. ``{"/": "Search the corpus"}``); when it is not, the key is sent
    and the field focused as soon as it is rendered, unless Escape came first. ``follow``
    is a CSS selector of an element scrolled into view whenever it is replaced (the current
    candidate, so that it never sits below the fold). ``applied_before`` tells, for a page
    this session has not seen, its last press already applied (see
    :meth:`KeyCursor.take_new`). ``panel`` is the judging panel's model for the browser's
    immediate feedback (:func:`panel_model`). The browser reads each key's action from
    :func:`browser_table`. ``unsaved``: the database refused to store a press (full disk,
    read-only file): the browser then shows ``panel`` as the server has it, greyed, not the
    presses' predicted effect, keeps every unacknowledged press, holds the ones typed
    meanwhile, and sends them again, less often than for a busy database, until a write
    succeeds.
    """
    import streamlit as st

    cursor_key, retry_key = f"{key}_cursor", f"{key}_retry"
    cursor: KeyCursor = st.session_state.setdefault(cursor_key, KeyCursor())

    def apply_new_presses() -> None:
        state = st.session_state.get(key) or {}
        for press in cursor.take_new(state.get("log"), applied_before):
            try:
                on_key(press)
            except retry_on:
                st.session_state[retry_key] = st.session_state.get(retry_key, 0) + 1
                return
            except BaseException:
                cursor.mark_applied(press)  # reported once, never retried on every rerun
                raise
            cursor.mark_applied(press)

    _component()(
        key=key,
        data={
            "keys": list(accepted_keys),
            "table": browser_table(),
            "focus": dict(focus or {}),
            "follow": follow,
            "page": cursor.page,
            "applied": cursor.applied,
            "retry": st.session_state.get(retry_key, 0),
            "panel": dict(panel) if panel else None,
            "unsaved": unsaved,
        },
        on_log_change=apply_new_presses,
    )
