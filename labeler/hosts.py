"""Which hosts the app answers to: loopback names, and the host names the admin gave.

A browser sends the name it used in the ``Host`` header, whatever address that name resolved
to. A page on ``http://evil.test:8501`` whose name an attacker points at 127.0.0.1 (DNS
rebinding) reaches an app that listens on loopback only, with ``Host: evil.test:8501``: the
address the server listens on protects nothing, the name does. So every request is checked
here (:class:`HostGuard`, the server's outermost middleware): its ``Host`` must be a loopback
name or address, or a name the admin gave with ``goldset app --allow-host NAME`` (passed to
the server in ``GOLDSET_ALLOWED_HOSTS``, comma-separated; unset means loopback only, also for a
plain ``streamlit run``). The websocket that carries the app, and the session-cookie endpoint,
must also come from the app's own page: their ``Origin`` is the page's scheme, host and port.

Loopback means ``localhost``, 127.0.0.0/8 and ``::1``, with or without a port: not
``*.localhost``, which some resolvers send to DNS like any other name (name it if you use it).

Streamlit's Prometheus metrics (``/_stcore/metrics``: sessions, cache sizes) are closed, from
every host: goldset reads none of them, and on a shared machine loopback is not one person.

No page but the app's own may frame it (every answer says so: ``X-Frame-Options`` and CSP
``frame-ancestors``). A page on any other origin could otherwise frame the app at its loopback
address, which passes both checks above (the frame names ``127.0.0.1``, its websocket comes
from the app's own origin), and lay its own page over it (clickjacking): as the local admin,
in a project without users.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from goldset.labeler.auth import is_loopback

if TYPE_CHECKING:  # plain ASGI: `goldset app` imports this module before any server exists
    from starlette.types import ASGIApp, Receive, Scope, Send

ALLOWED_HOSTS_ENV = "GOLDSET_ALLOWED_HOSTS"
CLOSED_PATH = "/_stcore/metrics"  # under any base URL path
# A DNS name: dot-separated labels of letters, digits and inner hyphens (RFC 1123).
DNS_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
DNS_NAME = re.compile(rf"(?=.{{1,253}}$){DNS_LABEL}(\.{DNS_LABEL})*")
WEBSOCKET_CLOSE_POLICY = 1008  # "policy violation": the server answers the upgrade with 403
# Framed by its own pages only (Streamlit's component frames); both headers, for older browsers.
NO_FOREIGN_FRAMES = [
    (b"x-frame-options", b"SAMEORIGIN"),
    (b"content-security-policy", b"frame-ancestors 'self'"),
]


def host_name(name: str) -> str:
    """``name`` as a host to allow: a DNS name (lower-cased, without a final dot) or an IP
    address; anything else (a port, a scheme, a wildcard) raises ValueError saying why."""
    text = name.strip().lower().removesuffix(".")
    try:
        return str(ipaddress.ip_address(text.removeprefix("[").removesuffix("]")))
    except ValueError:
        pass
    if not DNS_NAME.fullmatch(text):
        raise ValueError(
            f"{name!r} is not a host name: give a name such as labels.example.org or an IP "
            "address, without a scheme, port or wildcard"
        )
    return text


def named_hosts(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The host names the admin allowed, from ``GOLDSET_ALLOWED_HOSTS`` (comma-separated);
    an entry that is not a host name is left out (it could never match a ``Host``)."""
    return frozenset(valid_names(environ.get(ALLOWED_HOSTS_ENV, "").split(",")))


def valid_names(names: Iterable[str]) -> list[str]:
    """The ``names`` that are host names, as :func:`host_name` gives them; the others left out."""
    valid = []
    for name in names:
        try:
            valid.append(host_name(name))
        except ValueError:
            continue
    return valid


def requested_host(authority: str | None) -> str | None:
    """The host name of a ``Host`` header (``Evil.Test:8501`` → ``evil.test``, ``[::1]:80`` →
    ``::1``), or None when the header is missing or not a plain host with an optional port."""
    if not authority:
        return None
    try:
        parts = urlsplit(f"//{authority}")
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError:
        return None
    if parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    if not parts.hostname:
        return None
    try:
        return host_name(parts.hostname)
    except ValueError:
        return None


def is_allowed_host(authority: str | None, named: Collection[str]) -> bool:
    """Whether a request with this ``Host`` header may be answered: a loopback name or address,
    or one of the ``named`` hosts."""
    name = requested_host(authority)
    return name is not None and (is_loopback(name) or name in named)


def is_loopback_host(authority: str | None) -> bool:
    """Whether this ``Host`` header names this machine only (``localhost:8501``, ``[::1]``)."""
    name = requested_host(authority)
    return name is not None and is_loopback(name)


def is_own_origin(origin: str | None, authority: str | None) -> bool:
    """Whether a request's ``Origin`` is the page the app served at ``authority`` (the ``Host``
    header): same host and port. A missing or ``null`` origin is not."""
    if not origin or not authority:
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == authority.lower()


def is_from_own_page(origin: str | None, authority: str | None, named: Collection[str]) -> bool:
    """Whether a request comes from the app's own page on an allowed host: what the websocket
    and the session-cookie endpoint require (a browser always sends ``Origin`` with them)."""
    return is_allowed_host(authority, named) and is_own_origin(origin, authority)


class HostGuard:
    """ASGI middleware: answer a request only on an allowed host (see the module's docstring),
    a websocket only from the app's own page, never the metrics."""

    def __init__(self, app: ASGIApp, named: Collection[str] = ()) -> None:
        self.app = app
        self.named = frozenset(named)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass an allowed request on to the app; refuse any other."""
        if scope["type"] not in ("http", "websocket"):  # lifespan: not a request
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None and scope["type"] == "http":
            await self.app(scope, receive, _never_framed(send))
        elif refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": WEBSOCKET_CLOSE_POLICY})
        else:
            await _send_text(send, *refusal)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """Why a request is refused (an HTTP status and a message), or None to answer it."""
        host = _single_header(scope, b"host")
        if not is_allowed_host(host, self.named):
            return 403, "this host name is not served: open the app at its own address"
        origin = _single_header(scope, b"origin")
        if scope["type"] == "websocket" and not is_own_origin(origin, host):
            return 403, "cross-site request refused"
        if scope.get("path", "").rstrip("/").endswith(CLOSED_PATH):
            return 404, "not found"
        return None


def _never_framed(send: Send) -> Send:
    """``send`` with the headers that forbid other origins' pages to frame the answer."""

    async def send_never_framed(message: dict) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *NO_FOREIGN_FRAMES]}
        await send(message)

    return send_never_framed


async def _send_text(send: Send, status: int, text: str) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text.encode("utf-8")})


def _single_header(scope: Scope, name: bytes) -> str | None:
    """The value of a header sent once; None when it is missing or sent twice (ambiguous)."""
    values = [value for key, value in scope["headers"] if key.lower() == name]
    return values[0].decode("latin-1") if len(values) == 1 else None
