"""Keyboard input that loses no key press and applies none twice, however fast the typing.

Streamlit's native ``shortcut=`` coalesces presses that arrive during a rerun. Instead a tiny
v2 component (``keys.js``) keeps an ordered log of ``(seq, key, ms)`` in the browser and sends
the whole unacknowledged log as its state; :func:`listen` hands each entry newer than the last
applied one to the caller exactly once, in order, and acknowledges it back to the browser.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

_COMPONENT = st.components.v2.component(
    "goldset.keys",
    html='<span class="goldset-keys" title="Keyboard shortcuts are active">⌨ keys on</span>',
    css=".goldset-keys { font-size: 0.75rem; opacity: 0.6; }",
    js=(Path(__file__).parent / "keys.js").read_text(encoding="utf-8"),
)


@dataclass(frozen=True)
class KeyPress:
    """One key press from the browser: its sequence number and key, how many seconds
    before the newest press of the same batch it was typed (0 for the newest), so that
    presses applied together can still be timed apart, and the id of its browser page."""

    seq: int
    key: str
    lag_seconds: float = 0.0
    page: str | None = None


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
        entries = [(int(s), str(k), float(ms)) for s, k, ms in log.get("entries", [])]
        newest_ms = max((ms for _, _, ms in entries), default=0.0)
        return [
            KeyPress(seq, key, (newest_ms - ms) / 1000, page)
            for seq, key, ms in entries
            if seq > self.applied
        ]

    def mark_applied(self, press: KeyPress) -> None:
        """Record that ``press`` was applied, so that no later log applies it again."""
        self.applied = press.seq


def listen(
    accepted_keys: str,
    on_key: Callable[[KeyPress], None],
    *,
    focus: Mapping[str, str] | None = None,
    follow: str | None = None,
    applied_before: Callable[[str], int] | None = None,
    key: str = "goldset_keys",
) -> None:
    """Mount the key listener; ``on_key`` receives every new press of ``accepted_keys`` once.

    Presses are handled in a widget callback, before the script (or fragment) body runs,
    so the page rendered afterwards already shows their effect. Keys typed into text fields
    are ignored by the browser side; Escape leaves such a field. ``focus`` maps a key to the
    label of a text field that the key jumps to (e.g. ``{"/": "Search the corpus"}``);
    ``follow`` is a CSS selector of an element scrolled into view whenever it is replaced
    (the current candidate, so that it never sits below the fold). ``applied_before`` tells,
    for a page this session has not seen, its last press already applied (see
    :meth:`KeyCursor.take_new`).
    """
    cursor_key = f"{key}_cursor"
    cursor: KeyCursor = st.session_state.setdefault(cursor_key, KeyCursor())

    def apply_new_presses() -> None:
        state = st.session_state.get(key) or {}
        for press in cursor.take_new(state.get("log"), applied_before):
            # Marked before on_key runs: a press whose action fails is reported once,
            # never retried on every later rerun.
            cursor.mark_applied(press)
            on_key(press)

    _COMPONENT(
        key=key,
        data={
            "keys": accepted_keys,
            "focus": dict(focus or {}),
            "follow": follow,
            "page": cursor.page,
            "applied": cursor.applied,
        },
        on_log_change=apply_new_presses,
    )
