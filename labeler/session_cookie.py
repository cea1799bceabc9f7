"""The one HTTP endpoint goldset adds to Streamlit's server: it sets the session cookie.

Why an endpoint: a Streamlit script talks to its page over a websocket, so it can read the
cookies sent when the page connected (``st.context.cookies``) but cannot set one, and a cookie
set from JavaScript can never be HttpOnly. Streamlit 1.67 serves every app through Starlette,
and an app that declares ``app = streamlit.starlette.App(...)`` may add routes to that server
(``labeler/app.py`` does; ``streamlit run`` and ``goldset app`` both pick it up, and nothing
beyond Streamlit's own dependencies is needed). So after a sign-in the page posts a one-time
ticket here (:mod:`goldset.labeler.signin`), and this response sets the cookie.

The cookie is ``HttpOnly`` (no script can read it), ``SameSite=Strict`` and ``Secure`` over
HTTPS. Strict costs nothing here: the app's own page opens the websocket that carries the cookie,
so even a link followed from another site (a mail, a chat) arrives signed in, while no other site
can make the browser send it or plant one. Only the app's own page on an allowed host may
claim a cookie (:func:`goldset.labeler.hosts.is_from_own_page`: browsers send ``Origin`` with a
POST).
"""

from __future__ import annotations

import os

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from goldset.labeler import accounts, hosts
from goldset.labeler.launch import DB_ENV
from goldset.labeler.store import Store

COOKIE = "goldset_session"
CLAIM_PATH = "/goldset/session"
TICKET_CHARS = 64  # a ticket is 43 characters (auth.new_token); anything longer is not one


def routes() -> list[Route]:
    """The routes to add to Streamlit's server."""
    return [Route(CLAIM_PATH, claim, methods=["POST"])]


async def claim(request: Request) -> Response:
    """Trade the one-time ticket in the request body for the session cookie (204), or 403."""
    if not hosts.is_from_own_page(
        request.headers.get("origin"), request.headers.get("host"), hosts.named_hosts()
    ):
        return PlainTextResponse("cross-site request refused", status_code=403)
    body = await _body_head(request, TICKET_CHARS + 1)
    ticket = body.decode("ascii", "replace").strip()
    token = await run_in_threadpool(_claim, ticket) if len(ticket) <= TICKET_CHARS else None
    if token is None:
        return PlainTextResponse("no valid sign-in ticket", status_code=403)
    response = Response(status_code=204)
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(accounts.SESSION_LIFETIME.total_seconds()),
        path="/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


async def _body_head(request: Request, limit: int) -> bytes:
    """The first ``limit`` bytes of the request's body; the rest is never read. Anyone who
    reaches the server can post here (only a browser is bound by ``Origin``): a body read
    whole would hold its every byte in memory, a gigabyte for a gigabyte."""
    head = b""
    async for chunk in request.stream():
        head += chunk
        if len(head) >= limit:
            break
    return head[:limit]


def _claim(ticket: str) -> str | None:
    path = os.environ.get(DB_ENV)
    with Store(path) if path else Store.open_default() as store:
        return accounts.claim_session(store, ticket)
