"""goldset's Streamlit app: page setup, who is labelling, then the pages.

Run it with ``goldset app`` (or ``streamlit run labeler/app.py``; ``GOLDSET_DB`` names the
project database, default ``data/goldset.db``).

This file is both the script Streamlit runs for every page view (as ``__main__``) and the
server: ``streamlit run`` finds ``app = App(...)`` below and serves it, which adds the endpoint
that sets the session cookie (:mod:`goldset.labeler.session_cookie`) to Streamlit's own server, and,
before anything else, the check of every request's host (:mod:`goldset.labeler.hosts`: loopback
names and the hosts named in ``GOLDSET_ALLOWED_HOSTS``; no other host gets the app).
"""

import logging
import secrets

import streamlit as st

from goldset.labeler import hosts, session_cookie, signin
from goldset.labeler.accounts import has_role
from goldset.labeler.views import context

LOG = logging.getLogger("goldset")
# url paths of the pages laid out wide
WIDE_PAGES = ("dashboard", "compare", "planner", "review", "my_queries")


def unexpected_error(error: BaseException) -> bool:
    """Show an unexpected error as a short message with an id; the server log keeps the
    traceback under that id. Never a traceback or a server path on the page. Returns True
    (Streamlit's own error display is then suppressed)."""
    error_id = secrets.token_hex(4)
    LOG.error("unexpected error %s", error_id, exc_info=error)
    st.error(
        f"Something went wrong on the server (error {error_id}). Nothing else was changed; "
        "reload the page to go on, and give the error id to your admin if it happens again.",
        icon=":material/error:",
    )
    return True


def main() -> None:
    """Set up the page, sign the user in, then run the page the browser asked for."""
    st.set_page_config(page_title="goldset", page_icon="🏅")
    user = context.require_user()  # the login form, when the project has users
    signin.deliver_cookie()  # once a sign-in has a ticket: the browser gets its cookie
    # Pages by role, decided on the server at every run: a page left out of the navigation
    # cannot be run by this session, whatever URL the browser asks for. Each reviewer and
    # admin page also checks the role itself before reading anything.
    pages = [
        st.Page("views/label.py", title="Label", icon=":material/keyboard:", default=True),
        st.Page("views/my_queries.py", title="My queries", icon=":material/checklist:"),
    ]
    if has_role(user["role"], "reviewer"):
        pages += [
            st.Page("views/dashboard.py", title="Dashboard", icon=":material/monitoring:"),
            st.Page("views/compare.py", title="Compare runs", icon=":material/compare_arrows:"),
            st.Page("views/planner.py", title="Cost planner", icon=":material/payments:"),
            st.Page("views/review.py", title="Review", icon=":material/rule:"),
        ]
    if has_role(user["role"], "admin"):
        pages += [st.Page("views/admin.py", title="Admin", icon=":material/admin_panel_settings:")]
        pages += [st.Page("views/judges.py", title="Machine judges", icon=":material/smart_toy:")]
    page = st.navigation(pages)
    # The layout is set here, once a run, for the page about to run: wide for the pages of
    # tables side by side. A second call inside a page lost to an entrypoint's on reruns.
    st.set_page_config(layout="wide" if page.url_path in WIDE_PAGES else "centered")
    page.run()


if __name__ == "__main__":  # a run of the script: one page view
    try:
        main()
    except Exception as error:  # st.stop and st.rerun are BaseExceptions: they pass
        unexpected_error(error)
else:  # imported by `streamlit run` to serve the app
    import gc

    # What the pages import, imported at the server's start, not by the first page view, which
    # would wait for it (measured: bench/README.md, "Figures behind design choices").
    import altair  # noqa: F401
    from starlette.middleware import Middleware
    from streamlit.starlette import App

    from goldset.labeler import live  # noqa: F401

    # What is imported now lives as long as the server: Python's full collections skip it
    # from here on (a full pass over it costs CPU while holding the GIL: bench/README.md,
    # "Figures behind design choices").
    gc.freeze()
    app = App(
        __file__,
        routes=session_cookie.routes(),
        middleware=[Middleware(hosts.HostGuard, named=hosts.named_hosts())],
        on_script_error=unexpected_error,
    )
