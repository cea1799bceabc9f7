"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for the judge's tests.

``FakeJudge(answer)`` serves ``POST /v1/chat/completions`` on a free port; ``answer`` is
called with the decoded request body (and the request count so far) and returns a
``Reply``: an HTTP status, the model's message content (or a raw body), headers, and a
delay before answering — or, for a misbehaving server, the bytes to write to the socket
itself (``wire``, a piece at a time, ``pause`` seconds apart: a trickle, a truncated body, an
SSH banner, a 70 KiB header, 200 MB). Every request body and header is kept in ``requests``
and ``headers`` (a GET too: where a redirected client would go), and ``bytes_sent`` counts
the bytes of ``wire`` the socket took.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    """What the fake server answers to one request."""

    content: str = '{"grade": 1, "reason": "on topic"}'
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None  # a whole body instead of a chat completion around ``content``
    usage: dict | None = field(
        default_factory=lambda: {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}
    )
    wire: Iterable[bytes] | None = None  # written as is, instead of an HTTP response
    pause: float = 0.0  # seconds between two pieces of ``wire``


def http_head(status_line: str = "HTTP/1.1 200 OK", **headers: object) -> bytes:
    """A response's status line and headers (``Content_Length`` for Content-Length), for
    ``Reply.wire``."""
    lines = [
        status_line,
        *(f"{name.replace('_', '-')}: {value}" for name, value in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def completion(content: str, usage: dict | None) -> bytes:
    """A chat-completion response body holding ``content`` as the model's message."""
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


class FakeJudge:
    """The server, started on enter and shut down on exit (or by :meth:`stop`)."""

    def __init__(self, answer: Callable[[dict, int], Reply] = lambda body, n: Reply()):
        self.answer = answer
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self.bytes_sent = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                self.answer(json.loads(self.rfile.read(length)) if length else {})

            def do_GET(self) -> None:  # noqa: N802 (a client that followed a redirect)
                self.answer({})

            def answer(self, body: dict) -> None:
                with fake._lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                    count = len(fake.requests)
                if self.path != "/v1/chat/completions":
                    reply = Reply(status=404, raw=b"{}")
                else:
                    reply = fake.answer(body, count)
                time.sleep(reply.delay)
                try:
                    if reply.wire is not None:
                        self.write_wire(reply)
                    else:
                        self.write_reply(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def write_reply(self, reply: Reply) -> None:
                payload = (
                    reply.raw if reply.raw is not None else completion(reply.content, reply.usage)
                )
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def write_wire(self, reply: Reply) -> None:
                self.close_connection = True  # what was written is all there is
                for number, piece in enumerate(reply.wire):
                    if number and reply.pause:
                        time.sleep(reply.pause)
                    self.wfile.write(piece)
                    self.wfile.flush()
                    with fake._lock:
                        fake.bytes_sent += len(piece)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeJudge:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and close the port: later requests are refused."""
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
