"""One HTTP exchange with a judge endpoint (see :mod:`goldset.labeler.judges`): to the named URL
only, within one deadline, and a body no larger than MAX_BODY_BYTES.

urllib follows a redirect with the request's headers, its key among them, to whatever host
the redirect names, and its timeout bounds only each wait on the socket: so the exchange is
made here with http.client, a redirect handed back as an answer.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_BODY_BYTES = 1 << 20  # 1 MiB: a completion is a few KB; a larger body is not read on
READ_CHUNK = 64 << 10
MAX_DETAIL_CHARS = 200  # a failure's reason: one line of at most this
# What the connection and http.client raise for a server that is not there or does not speak
# HTTP (http.client raises a ValueError for a bad chunk size or port).
TRANSPORT_ERRORS = (OSError, http.client.HTTPException, ValueError)


@dataclass(frozen=True)
class Answer:
    """What one exchange brought back: the status, the headers that matter, the body."""

    status: int
    location: str | None
    retry_after: str | None
    body: bytes


class PastDeadline(Exception):
    """The exchange was cut at its deadline."""


class TooLarge(Exception):
    """The body is over MAX_BODY_BYTES (its announced length, or what was read of it)."""


def post(address: str, payload: bytes, headers: Mapping[str, str], timeout: float) -> Answer:
    """POST ``payload`` to ``address`` (an http or https URL) and nowhere else — a redirect
    is returned, not followed — all of it within ``timeout`` seconds; the body is read only
    on a 2xx, and no more than MAX_BODY_BYTES.

    Raises PastDeadline, TooLarge, or one of TRANSPORT_ERRORS (what the connection and
    http.client raise: refused, reset, truncated, not HTTP, a header line over 64 KiB).
    The socket's own timeout bounds each wait; a watchdog shuts the socket down at the
    deadline, so that a server sending a byte now and then cannot hold the call longer.
    """
    url = urlsplit(address)
    target = url.path + (f"?{url.query}" if url.query else "")
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    connection = kind(url.hostname, url.port, timeout=timeout)
    with _Watchdog(connection, timeout) as watchdog:
        try:
            connection.request("POST", target, body=payload, headers=dict(headers))
            watchdog.check()  # connecting took it all: the socket was not there to cut
            response = connection.getresponse()
            body = _read_body(response) if 200 <= response.status < 300 else b""
        except TRANSPORT_ERRORS:
            watchdog.check()  # a cut socket fails in many ways: say it was the deadline
            raise
        finally:
            connection.close()
        watchdog.check()  # a body cut short without an error
    return Answer(
        response.status, response.getheader("Location"), response.getheader("Retry-After"), body
    )


class _Watchdog:
    """Shuts a connection's socket down when its deadline comes, wherever the exchange is."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self.connection = connection
        self.cut = threading.Event()
        self.timer = threading.Timer(seconds, self._cut)
        self.timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self.timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.timer.cancel()

    def check(self) -> None:
        """Raise PastDeadline if the deadline has cut the exchange."""
        if self.cut.is_set():
            raise PastDeadline

    def _cut(self) -> None:
        self.cut.set()
        sock = self.connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # closed meanwhile: the exchange ended
                sock.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked reading it


def _read_body(response: http.client.HTTPResponse) -> bytes:
    """The body, read in pieces and never past MAX_BODY_BYTES; a body shorter than its
    Content-Length is an IncompleteRead (http.client itself lets it pass as shorter)."""
    if response.length is not None and response.length > MAX_BODY_BYTES:
        raise TooLarge(f"the answer announces {response.length:,} bytes: over the 1 MiB cap")
    pieces: list[bytes] = []
    size = 0
    while piece := response.read(READ_CHUNK):
        size += len(piece)
        if size > MAX_BODY_BYTES:
            raise TooLarge("the answer is over the 1 MiB cap: not read further")
        pieces.append(piece)
    if response.length:  # bytes still due when the server closed
        raise http.client.IncompleteRead(b"".join(pieces), response.length)
    return b"".join(pieces)


def has_control(text: str) -> bool:
    """Whether ``text`` holds whitespace or a control character, which no URL or header value
    may hold (one would end the request line or a header early)."""
    return any(char.isspace() or not char.isprintable() for char in text)


def describe(error: BaseException) -> str:
    """One line saying why no answer came, for the record."""
    if isinstance(error, http.client.HTTPException | ValueError):
        return one_line(f"not a valid HTTP answer ({type(error).__name__}: {error})")
    return one_line(str(error) or type(error).__name__)


def one_line(text: str) -> str:
    """``text`` on one line, cut at MAX_DETAIL_CHARS."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_DETAIL_CHARS else flat[: MAX_DETAIL_CHARS - 1] + "…"
