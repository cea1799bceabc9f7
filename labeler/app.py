"""goldset's Streamlit app: page setup, who is labelling, then the pages.

Run it with ``goldset app`` (or ``streamlit run labeler/app.py``; ``GOLDSET_DB`` names the
project database, default ``data/goldset.db``).
"""

import streamlit as st

from labeler.team import has_role
from labeler.views import context

WIDE_PAGES = ("dashboard", "compare", "planner", "review")  # url paths of the pages laid out wide

st.set_page_config(page_title="goldset", page_icon="🏅")
user = context.require_user()  # the login form, when the project has users

# Pages by role, decided on the server at every run: a page left out of the navigation cannot
# be run by this session, whatever URL the browser asks for. Each reviewer and admin page also
# checks the role itself before reading anything.
pages = [st.Page("views/label.py", title="Label", icon=":material/keyboard:", default=True)]
if has_role(user["role"], "reviewer"):
    pages += [
        st.Page("views/dashboard.py", title="Dashboard", icon=":material/monitoring:"),
        st.Page("views/compare.py", title="Compare runs", icon=":material/compare_arrows:"),
        st.Page("views/planner.py", title="Cost planner", icon=":material/payments:"),
        st.Page("views/review.py", title="Review", icon=":material/rule:"),
    ]
if has_role(user["role"], "admin"):
    pages += [st.Page("views/admin.py", title="Admin", icon=":material/admin_panel_settings:")]
page = st.navigation(pages)
# The layout is set here, once a run, for the page about to run: wide for the pages of tables
# side by side. A second call inside a page lost to an entrypoint's on reruns.
st.set_page_config(layout="wide" if page.url_path in WIDE_PAGES else "centered")
page.run()
