"""goldset's Streamlit app: page setup, who is labelling, then the pages.

Run it with ``goldset app`` (or ``streamlit run labeler/app.py``; ``GOLDSET_DB`` names the
project database, default ``data/goldset.db``).
"""

import streamlit as st

from labeler.views import context

st.set_page_config(page_title="goldset", page_icon="🏅", layout="centered")
context.require_annotator()  # the login form, when the project has users

pages = [st.Page("views/label.py", title="Label", icon=":material/keyboard:", default=True)]
st.navigation(pages).run()
