"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for the judge's tests.

``FakeJudge(answer)`` serves ``POST /v1/chat/completions`` on a free port; ``answer`` is
called with the decoded request body (and the request count so far) and returns a
``Reply``: an HTTP status, the model's message content (or a raw body), headers, and a
delay before answering. Every request body and header is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
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
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.requests.append(body)
                    fake.headers.append(dict(self.headers))
                    count = len(fake.requests)
                if self.path != "/v1/chat/completions":
                    reply = Reply(status=404, raw=b"{}")
                else:
                    reply = fake.answer(body, count)
                time.sleep(reply.delay)
                payload = (
                    reply.raw if reply.raw is not None else completion(reply.content, reply.usage)
                )
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

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
