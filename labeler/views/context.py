"""Per-session context shared by the pages: the project store, who is labelling, the session.

The store is cached per browser session (one SQLite connection each, closed when the session
ends): sessions never share a connection, so their transactions cannot interleave.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sized

import pandas as pd
import streamlit as st

from goldset.labeler import accounts, live, render, signin
from goldset.labeler.auth import LOCAL_ANNOTATOR, is_loopback
from goldset.labeler.hosts import is_loopback_host
from goldset.labeler.judging import LabelSession
from goldset.labeler.launch import DB_ENV
from goldset.labeler.store import ProjectError, Store

# Caching shared by the pages that evaluate: figures kept 10 minutes, 16 states at most.
CACHE = {"ttl": 600, "max_entries": 16, "show_spinner": False}
golden_at = st.cache_resource(ttl=CACHE["ttl"], max_entries=2, show_spinner=False)(live.golden_at)
run_at = st.cache_resource(ttl=CACHE["ttl"], max_entries=4, show_spinner=False)(live.run_at)


def rows_height(rows: Sized, most: int = 25) -> int:
    """A dataframe's height in pixels showing up to ``most`` rows without scrolling."""
    return 38 + 35 * min(max(len(rows), 1), most)


def exactness_table(exact: pd.DataFrame) -> None:
    """Exact@10 (first-hit labels) under the dashboard's and the compare page's figures, with
    what it means; nothing when no run has first-hit labels."""
    if exact.empty:
        return
    st.dataframe(exact, hide_index=True, height=rows_height(exact))
    st.caption(
        "Exact@10: the queries where every document a run ranks above its first relevant "
        "one is judged, so that its MRR@10 and hit@10 there are exact; over all queries they "
        "are lower bounds (≥) until the holes it left are labelled."
    )


@st.cache_resource(scope="session", on_release=Store.close, show_spinner=False)
def _session_store(path: str | None) -> Store:
    if not path:
        return Store.open_default()
    return Store.open_project(path, write=True, background_check=True)


def store() -> Store:
    """This browser session's connection to the project database (``GOLDSET_DB``, set by
    ``goldset app --db PATH``; unset means the default project). A path that is not a usable
    project (missing, foreign, corrupt, read-only) stops the page with its one-line reason;
    so does a large project's integrity check once it fails (it runs in the background, and
    writes wait for it: see :meth:`Store.open_project`)."""
    try:
        opened = _session_store(os.environ.get(DB_ENV) or None)
        if (problem := opened.integrity_problem()) is not None:
            raise problem
        return opened
    except ProjectError as error:
        show_error("This project cannot be opened.", error)
        st.stop()


def require_user() -> dict:
    """Who is using the app, ``{"name", "role"}``; without a sign-in, the login form, then stop.

    With no users in the project, the one local person (the app then listens on loopback
    only) owns the project: role admin. Otherwise the user signed in with a password, or
    through the identity provider (``st.login``) when secrets.toml configures ``[auth]``.
    A sign-in lasts across reloads and new tabs of the browser (a server-side session behind
    an HttpOnly cookie, :mod:`goldset.labeler.signin`). The session and the role are read from the
    database on every run: a logout, a removed user or a changed role signs every tab out.
    """
    if not store().annotators():
        # `goldset app` refuses other hosts, but `streamlit run` or removing the last user
        # while the app is served on a network, or under a name the admin allowed, must not
        # make every visitor an admin either.
        if not _served_to_this_machine_only():
            st.error(
                "This project has no users, so the app only serves this machine (127.0.0.1). "
                "Add a user (goldset user add NAME) to serve it on a network."
            )
            st.stop()
        return {"name": LOCAL_ANNOTATOR, "role": "admin"}
    user = signin.current_user(store(), _identity_provider_account)
    if user is not None:
        return user
    _forget_user()
    _login_form()
    st.stop()


def _served_to_this_machine_only() -> bool:
    """Whether the server listens on loopback and this page was asked for by a loopback name.
    (Only a run without a browser has no Host: the server refuses a request without one.)"""
    host = st.context.headers.get("Host")
    return is_loopback(st.get_option("server.address") or "") and (
        host is None or is_loopback_host(host)
    )


def require_role(needed: str) -> dict:
    """The signed-in user if their role may do what ``needed`` may, else an error, then stop.

    Every reviewer and admin page calls it before anything else, on the server: hiding a page
    from the navigation is not what protects it.
    """
    user = require_user()
    if not accounts.has_role(user["role"], needed):
        st.error(f"This page is for {needed}s; you are signed in as {user['role']}.")
        st.stop()
    return user


def open_page(needed: str, title: str) -> dict:
    """Start a reviewer or admin page: check the role (:func:`require_role`), show who is
    signed in with a log-out button, the title, and the outcome of the last action (see
    :func:`report`). Returns the user."""
    user = require_role(needed)
    with st.sidebar:
        st.html(render.note(f"Signed in as {user['name']} ({user['role']})"))
        if user["name"] != LOCAL_ANNOTATOR and st.button("Log out", key="account_logout"):
            logout()
            st.rerun()
    st.title(title)
    message = st.session_state.pop("action_outcome", "")
    if message:
        with st.container(border=True):
            st.html(render.note(message))  # it may quote data (ids, names): escaped
    return user


def show_error(message: str, detail: object) -> None:
    """An error whose detail may hold data text (file names, ids): the detail is shown as
    plain text, never as Markdown."""
    st.error(message, icon=":material/error:")
    st.text(str(detail))


# Built on the click, not when the download starts: a file built then cannot say why it was
# not (the browser would show only "Failed to generate file for download").
QRELS_HELP = (
    "Built now and offered to download; a project whose ids TREC cannot hold is told which."
)


def offer_qrels(store: Store, admin: str) -> None:
    """The golden set as TREC qrels, built now (once the role is checked again in the
    database) and offered to download; or why it cannot be: ids that TREC cannot hold (a
    project made before ids were checked), named."""
    try:
        accounts.authorize(store, admin, "admin")
        data = live.golden_qrels(store)
    except (ValueError, PermissionError) as error:  # InputError is a ValueError
        show_error("The golden set cannot be exported as TREC qrels.", error)
        return
    st.download_button(
        "Download golden.qrels",
        data=data,
        file_name="golden.qrels",
        mime="text/plain",
        on_click="ignore",
    )


def report(outcome: str) -> None:
    """Keep what an action did (or why not) to show at the top of the page's next run."""
    st.session_state["action_outcome"] = outcome


def identity_providers() -> list[str | None]:
    """The OIDC providers that secrets.toml configures for ``st.login``: ``[None]`` for a
    single ``[auth]`` provider, the names of ``[auth.NAME]`` sections, or [] (no ``[auth]``,
    or no secrets.toml at all — reading secrets then raises, hence the guard)."""
    try:
        auth = st.secrets.get("auth")
    except FileNotFoundError:
        return []
    if not auth:
        return []
    named = sorted(key for key, value in auth.items() if isinstance(value, Mapping))
    return [None] if "client_id" in auth else named


def _identity_provider_user() -> str | None:
    """The e-mail of the user signed in through the identity provider, if the provider
    verified it. ``st.user`` is read with ``get`` only: its attributes raise without
    ``[auth]``."""
    if not identity_providers() or not st.user.get("is_logged_in"):
        return None
    return st.user.get("email") if st.user.get("email_verified") is True else None


def _identity_provider_account() -> dict | None:
    """The account of the user signed in through the identity provider: registered under
    that verified e-mail, and without a password (an account with one signs in with it)."""
    email = _identity_provider_user()
    user = store().annotator(email) if email else None
    return user if user is not None and not user["password_hash"] else None


def _login_form() -> None:
    st.title("goldset")
    _identity_provider_buttons()
    with st.form("login"):
        name = st.text_input("User name", autocomplete="username")
        password = st.text_input("Password", type="password", autocomplete="current-password")
        submitted = st.form_submit_button("Log in", type="primary")
    if submitted:
        result = accounts.sign_in(store(), name, password)
        if result.user is not None:
            signin.sign_in_tab(store(), result.user["name"])
            st.rerun()
        st.error(result.message)


def _identity_provider_buttons() -> None:
    email = _identity_provider_user()
    if email:  # signed in with the provider, but not a user of this project
        st.warning(
            "You are not a user of this project: ask an admin to add you "
            "(goldset user add EMAIL --no-password). Signed in as:",
            icon=":material/person_off:",
        )
        st.text(email)  # data: never Markdown
        st.button("Sign out", on_click=st.logout)
        return
    for provider in identity_providers():
        st.button(
            f"Sign in with {provider}" if provider else "Sign in with your identity provider",
            key=f"login_{provider or 'default'}",
            on_click=st.login,
            args=(provider,) if provider else (),
            type="primary",
        )


def logout() -> None:
    """End the session (in every tab of the browser), forget the label session; end an
    identity-provider sign-in."""
    signin.log_out(store())
    _forget_user()
    if identity_providers() and st.user.get("is_logged_in"):
        st.logout()


def _forget_user() -> None:
    signin.forget(store())
    st.session_state.pop("label_session", None)


def label_session(annotator: str) -> LabelSession:
    """The annotator's label session, created where they left off on first use."""
    session = st.session_state.get("label_session")
    if session is None or session.annotator != annotator:
        session = LabelSession(store(), annotator)
        st.session_state["label_session"] = session
    return session
