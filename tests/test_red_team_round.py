"""Red team of this round's doors, on inputs and in situations no other test names.

- No page of another origin may frame the app: every answer the app gives says so (a framed
  app at its loopback address passes the Host and Origin checks; see
  tests/e2e/test_e2e_red_team.py for Chromium refusing the frame).
"""

from __future__ import annotations

import pytest
from test_hosts import Recorder, call, status

from labeler import hosts


def header(messages: list[dict], name: bytes) -> list[bytes]:
    """The values of header ``name`` in an ASGI answer's start message."""
    return [value for key, value in messages[0].get("headers", []) if key == name]


@pytest.mark.parametrize("path", ["/", "/admin", "/_stcore/health", "/component/x/index.html"])
def test_every_answer_forbids_other_origins_to_frame_it(path):
    sent = call(hosts.HostGuard(Recorder()), "http", path, {"host": "127.0.0.1:8501"})
    assert status(sent) == 200
    assert header(sent, b"x-frame-options") == [b"SAMEORIGIN"]
    assert header(sent, b"content-security-policy") == [b"frame-ancestors 'self'"]
