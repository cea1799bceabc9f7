"""Per-session context shared by the pages: the project store, who is labelling, the session.

The store is cached per browser session (one SQLite connection each, closed when the session
ends): sessions never share a connection, so their transactions cannot interleave.
"""

from __future__ import annotations

import os

import streamlit as st

from labeler.auth import LOCAL_ANNOTATOR, check_login
from labeler.judging import LabelSession
from labeler.launch import DB_ENV
from labeler.store import Store


@st.cache_resource(scope="session", on_release=Store.close, show_spinner=False)
def _session_store(path: str | None) -> Store:
    return Store(path) if path else Store.open_default()


def store() -> Store:
    """This browser session's connection to the project database (``GOLDSET_DB``, set by
    ``goldset app --db PATH``; unset means the default project)."""
    return _session_store(os.environ.get(DB_ENV) or None)


def require_annotator() -> str:
    """Who is labelling: the local annotator when the project has no users, else the logged-in
    user. Without a login it shows the login form and stops the script."""
    if not store().annotators():
        return LOCAL_ANNOTATOR
    name = st.session_state.get("annotator")
    if name:
        return name
    _login_form()
    st.stop()


def _login_form() -> None:
    st.title("goldset")
    with st.form("login"):
        name = st.text_input("User name", autocomplete="username")
        password = st.text_input("Password", type="password", autocomplete="current-password")
        submitted = st.form_submit_button("Log in", type="primary")
    if submitted:
        user = store().annotator(name)
        if check_login(name, password, user["password_hash"] if user else None):
            st.session_state["annotator"] = name
            st.rerun()
        st.error("Unknown user name or wrong password.")


def logout() -> None:
    """Forget who is logged in, and their label session."""
    for key in ("annotator", "label_session"):
        st.session_state.pop(key, None)


def label_session(annotator: str) -> LabelSession:
    """The annotator's label session, created where they left off on first use."""
    session = st.session_state.get("label_session")
    if session is None or session.annotator != annotator:
        session = LabelSession(store(), annotator)
        st.session_state["label_session"] = session
    return session
