"""A minimal page for the key listener: every applied press is listed, and each rerun is slow."""

import time

import streamlit as st

from goldset.labeler.keys import listen


@st.fragment
def panel() -> None:
    """Record presses, then render slowly, as a heavy judging panel would."""
    applied = st.session_state.setdefault("applied", [])
    listen("0123", lambda press: applied.append(press.key))
    time.sleep(0.15)
    st.code(" ".join(applied) or "-", language=None)


panel()
