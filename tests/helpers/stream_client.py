"""A light annotator that speaks the app's own protocol, for load tests and benchmarks.

A browser talks to a Streamlit server over one websocket (``/_stcore/stream``): it sends
``BackMsg`` protobufs (a rerun with the widgets' states) and receives ``ForwardMsg`` ones (the
page's elements, run by run). :class:`StreamAnnotator` does the same with a fraction of a
browser's cost, so that one process can drive a team of annotators on a 2-core machine.
It signs in as a browser does after a sign-in: a one-time ticket from the project's store,
traded at the app's session endpoint for the session cookie (any process of the app can
redeem it: the ticket lives in the database). Key presses go through the label page's key
listener (:mod:`goldset.labeler.keys`) as the browser's ``keys.js`` sends them: the whole
unacknowledged log, in the listener's own fragment; a press is acknowledged when the server
sends the listener back with ``applied`` at or past its number (it is then committed).
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import ClientConnection, connect

from goldset.labeler import accounts
from goldset.labeler.session_cookie import CLAIM_PATH, COOKIE
from goldset.labeler.store import Store

KEYS_COMPONENT = "goldset.keys"
# A run that ended as planned: the whole page, or one fragment (not one cut short by a rerun).
FINISHED_STATES = (
    ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY,
    ForwardMsg.ScriptFinishedStatus.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
)


def browser_cookies(
    base_url: str, db: Path | str, name: str, held: dict[str, str] | None = None
) -> dict[str, str]:
    """The cookies a browser holds once ``name`` signed in at ``base_url``: the session
    cookie, and whatever the server set on the first page load (a proxy's sticky cookie),
    beside those it ``held`` already.

    The ticket is made in the store (as the sign-in form does); the app's endpoint trades it.
    """
    with Store(db) as store:
        ticket = accounts.start_session(store, name).ticket
    cookies = _set_cookies(urllib.request.Request(base_url + "/"), dict(held or {}))
    claim = urllib.request.Request(
        base_url + CLAIM_PATH,
        data=ticket.encode(),
        method="POST",
        headers={"Origin": base_url, "Content-Type": "text/plain"},
    )
    cookies = _set_cookies(claim, cookies)
    if COOKIE not in cookies:
        raise RuntimeError(f"{base_url} gave no session cookie for {name}")
    return cookies


def _set_cookies(request: urllib.request.Request, cookies: dict[str, str]) -> dict[str, str]:
    """Send ``request`` with ``cookies``; return them updated by the response's Set-Cookie."""
    if cookies:
        request.add_header("Cookie", cookie_header(cookies))
    with urllib.request.urlopen(request, timeout=30) as response:
        jar = SimpleCookie()
        for header in response.headers.get_all("Set-Cookie") or []:
            jar.load(header)
    return cookies | {name: morsel.value for name, morsel in jar.items()}


def cookie_header(cookies: dict[str, str]) -> str:
    """A ``Cookie`` request header holding ``cookies``."""
    return "; ".join(f"{name}={value}" for name, value in cookies.items())


@dataclass
class KeyListener:
    """What the server last sent of the label page's key listener."""

    widget_id: str = ""
    fragment_id: str = ""
    applied: int = 0


@dataclass
class StreamAnnotator:
    """One signed-in annotator on the label page, over the app's websocket."""

    base_url: str
    cookies: dict[str, str]
    page_id: str = field(default_factory=lambda: f"stream-{uuid.uuid4().hex}")  # as keys.js
    listener: KeyListener = field(default_factory=KeyListener)
    sent_at: dict[int, float] = field(default_factory=dict)  # press number -> monotonic time
    acked_at: dict[int, float] = field(default_factory=dict)
    # when the run that acknowledged it ended (the whole panel sent)
    finished_at: dict[int, float] = field(default_factory=dict)
    _entries: list[list] = field(default_factory=list)
    _page_hash: str = ""
    _socket: ClientConnection | None = None
    _reader: asyncio.Task | None = None
    _runs_finished: asyncio.Condition = field(default_factory=asyncio.Condition)
    _runs: int = 0

    async def open(self) -> None:
        """Connect and run the page once, as a browser's first load does."""
        self._socket = await connect(
            self.base_url.replace("http", "ws", 1) + "/_stcore/stream",
            subprotocols=["streamlit"],
            additional_headers={"Cookie": cookie_header(self.cookies), "Origin": self.base_url},
            max_size=None,
        )
        self._reader = asyncio.create_task(self._read())
        message = BackMsg()
        message.rerun_script.query_string = ""
        await self._send(message)
        await self.wait_runs(1)
        if not self.listener.widget_id:
            raise RuntimeError("the page showed no key listener (not signed in?)")

    async def close(self) -> None:
        """Disconnect, as a closed tab does."""
        if self._socket is not None:
            await self._socket.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    @property
    def last_press(self) -> int:
        """The number of the last press sent (0 before the first)."""
        return self._entries[-1][0] if self._entries else 0

    async def press(self, key: str) -> int:
        """Type ``key``: send the unacknowledged log with it, as ``keys.js`` does; return the
        press's number."""
        seq = self.last_press + 1
        self._entries.append([seq, key, round(time.monotonic() * 1000), None])
        self.sent_at[seq] = time.monotonic()
        await self.send_log()
        return seq

    async def send_log(self) -> None:
        """Send the presses the server has not acknowledged (a rerun of the listener's
        fragment carrying its new state)."""
        applied = self.listener.applied
        self._entries = [entry for entry in self._entries if entry[0] > applied]
        message = BackMsg()
        state = message.rerun_script
        state.page_script_hash = self._page_hash
        state.fragment_id = self.listener.fragment_id
        widget = state.widget_states.widgets.add()
        widget.id = self.listener.widget_id
        log = {"page": self.page_id, "entries": self._entries, "attempt": self.last_press}
        widget.json_value = json.dumps({"log": log})
        await self._send(message)

    async def wait_acknowledged(self, seq: int, timeout: float = 60.0) -> None:
        """Wait until press ``seq`` and those before it are committed."""
        async with self._runs_finished:
            await asyncio.wait_for(
                self._runs_finished.wait_for(lambda: self.listener.applied >= seq), timeout
            )

    async def wait_runs(self, runs: int, timeout: float = 60.0) -> None:
        """Wait until ``runs`` script runs of this session have finished."""
        async with self._runs_finished:
            finished = self._runs_finished.wait_for(lambda: self._runs >= runs)
            await asyncio.wait_for(finished, timeout)

    async def _send(self, message: BackMsg) -> None:
        await self._socket.send(message.SerializeToString())

    async def _read(self) -> None:
        async for raw in self._socket:
            message = ForwardMsg()
            message.ParseFromString(raw)
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self._page_hash = message.new_session.page_script_hash
            elif kind == "delta":
                self._take_delta(message)
            elif kind == "script_finished" and message.script_finished in FINISHED_STATES:
                await self._run_finished()

    def _take_delta(self, message: ForwardMsg) -> None:
        delta = message.delta
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        if element.WhichOneof("type") != "bidi_component":
            return
        component = element.bidi_component
        if component.component_name != KEYS_COMPONENT:
            return
        data = json.loads(component.json)
        now = time.monotonic()
        for seq in range(self.listener.applied + 1, int(data["applied"]) + 1):
            self.acked_at.setdefault(seq, now)
        self.listener = KeyListener(component.id, delta.fragment_id, int(data["applied"]))

    async def _run_finished(self) -> None:
        now = time.monotonic()
        for seq in self.acked_at.keys() - self.finished_at.keys():
            self.finished_at[seq] = now
        async with self._runs_finished:
            self._runs += 1
            self._runs_finished.notify_all()
