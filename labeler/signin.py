"""Sign-in that survives a reload: the page's side of goldset's server-side sessions.

A sign-in (password or identity provider) opens a session in the project database
(:func:`goldset.labeler.accounts.start_session`); a tiny component then posts the session's
one-time ticket to :mod:`goldset.labeler.session_cookie`, whose HTTP response sets the HttpOnly
cookie. A reload or a new tab of the same browser sends that cookie with its websocket handshake
(``st.context.cookies``) and resumes the session. Every run re-reads the session from the
database, so a logout, a removed user or a new role signs out every tab at its next run.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from goldset.labeler import accounts
from goldset.labeler.session_cookie import CLAIM_PATH, COOKIE
from goldset.labeler.store import Store

SESSION_KEY = "browser_session"  # this tab's session id
TICKET_KEY = "session_ticket"  # the ticket the page has not yet traded for its cookie
SIGNED_OUT_KEY = "signed_out"  # this tab's session ended: no silent sign-in again
USER_KEY = "annotator"  # who is signed in in this tab

# Posts the ticket once per page (a ticket is spent by its first use), then reports back.
_CLAIM_JS = """
const posted = new Set();
export default function ({ data, setStateValue }) {
  if (!data || !data.ticket || posted.has(data.ticket)) return;
  posted.add(data.ticket);
  fetch(data.path, {
    method: "POST",
    body: data.ticket,
    credentials: "same-origin",
    headers: { "Content-Type": "text/plain" },
  }).then(
    (response) => setStateValue("claimed", { ticket: data.ticket, ok: response.ok }),
    () => setStateValue("claimed", { ticket: data.ticket, ok: false }),
  );
}
"""
_CLAIM = st.components.v2.component("goldset.session_cookie", html="", js=_CLAIM_JS)


def current_user(store: Store, identity_provider_account: Callable[[], dict | None]) -> dict | None:
    """Who is signed in in this tab (``{"name", "role"}``), or None.

    In order: this tab's session, checked in the database now; a name signed in without a
    session (set by the server only); the browser's cookie (a reload, a new tab); the account of
    a user signed in through the identity provider, who then gets a session too. A tab whose
    session ended (logout, removal, new role) shows the login form: neither its cookie (it names
    that session) nor a still-cached identity-provider sign-in brings the user back silently.
    """
    state = st.session_state
    if SESSION_KEY in state:
        session = accounts.resume_session(store, session_id=state[SESSION_KEY])
        if session is None:
            forget(store)
            state[SIGNED_OUT_KEY] = True
            return None
        state[USER_KEY] = session.user["name"]
        return session.user
    if state.get(USER_KEY):
        user = store.annotator(state[USER_KEY])
        return {"name": user["name"], "role": user["role"]} if user else None
    if state.get(SIGNED_OUT_KEY):
        return None
    token = st.context.cookies.get(COOKIE)
    # (isinstance: under AppTest, which has no browser, cookies are a mock)
    session = accounts.resume_session(store, token=token) if isinstance(token, str) else None
    if session is None:
        account = identity_provider_account()
        if account is None:
            return None
        session = accounts.start_session(store, account["name"])
    _keep(store, session)
    return session.user


def sign_in_tab(store: Store, name: str) -> None:
    """Sign this tab in as ``name`` (whose password was just checked) with a new session."""
    st.session_state.pop(SIGNED_OUT_KEY, None)
    _keep(store, accounts.start_session(store, name))


def log_out(store: Store) -> None:
    """End this tab's session: every tab of the browser is signed out at its next run."""
    if SESSION_KEY in st.session_state:
        accounts.end_session(store, st.session_state[SESSION_KEY])
    forget(store)
    st.session_state[SIGNED_OUT_KEY] = True


def forget(store: Store) -> None:
    """Forget, in this tab, who is signed in and their session (nothing in the database)."""
    accounts.bind_session(store, None)
    for key in (SESSION_KEY, TICKET_KEY, USER_KEY):
        st.session_state.pop(key, None)


def deliver_cookie() -> None:
    """Have the page trade its pending ticket for the session cookie (once; see module doc).
    Call it once per run, after the sign-in gate. It renders nothing visible, and renders at
    every run (idle without a ticket) so that the elements after it keep their place."""
    _CLAIM(
        key="goldset_session_cookie",
        data={"ticket": st.session_state.get(TICKET_KEY), "path": CLAIM_PATH},
        on_claimed_change=_claimed,
    )


def _claimed() -> None:
    # The ticket is spent either way: a refused one (expired, say) only costs a later reload
    # its sign-in, never this tab's.
    st.session_state.pop(TICKET_KEY, None)


def _keep(store: Store, session: accounts.BrowserSession) -> None:
    accounts.bind_session(store, session.session_id)
    st.session_state[SESSION_KEY] = session.session_id
    st.session_state[USER_KEY] = session.user["name"]
    if session.ticket:
        st.session_state[TICKET_KEY] = session.ticket
