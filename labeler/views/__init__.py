"""The app's pages (run by ``st.navigation`` in ``labeler/app.py``) and their shared helpers."""
