"""The admin page: users and roles, dealing queries with overlap, import, pooling and export.

Admins only: the page checks the role on the server before anything is read, and every action
checks it again from the database (:func:`goldset.labeler.accounts.authorize`) before it writes, so
a demoted admin's stale page cannot act. Data text (user names, slices, messages naming input
files) reaches the page only through ``st.dataframe``, widget options or
:mod:`goldset.labeler.render`, escaped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st

from goldset.labeler import accounts, live, render, signin, team
from goldset.labeler.auth import MIN_PASSWORD_LENGTH, hash_password, validate_user_name
from goldset.labeler.store import ROLES, Store
from goldset.labeler.views import context

UNCHANGED = "(unchanged)"
PASSWORD_HELP = f"At least {MIN_PASSWORD_LENGTH} characters."


def act(store: Store, admin: str, action: Callable[[], str]) -> None:
    """Run one admin action if ``admin`` still is one; keep its outcome for the next run."""
    try:
        accounts.authorize(store, admin, "admin")
        context.report(action())
    except (ValueError, PermissionError) as error:  # InputError is a ValueError
        context.report(f"Not done: {error}")


# --- users ----------------------------------------------------------------------------------------


def users_section(store: Store, admin: str) -> None:
    """The users, and forms to add, change and remove them; with no users yet, the form that
    creates the local admin's own account first."""
    rows = accounts.user_rows(store)
    if not rows:
        first_admin_form(store, admin)
        return
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    names = [row["name"] for row in rows]
    with st.form("add_user", clear_on_submit=True):
        st.markdown("**Add a user**")
        name = st.text_input("User name")
        role = st.selectbox("Role", ROLES)
        password = st.text_input("Password", type="password", help=PASSWORD_HELP)
        no_password = st.checkbox("Signs in through the identity provider only (no password)")
        if st.form_submit_button("Add user"):
            act(store, admin, lambda: _add_user(store, name, role, password, no_password))
            st.rerun()
    with st.form("change_user", clear_on_submit=True):
        st.markdown("**Change a user** (a new password also lifts a sign-in lock)")
        name = st.selectbox("User", names, key="change_name")
        role = st.selectbox("New role", [UNCHANGED, *ROLES])
        password = st.text_input("New password", type="password", help=PASSWORD_HELP)
        if st.form_submit_button("Change user"):
            act(store, admin, lambda: _change_user(store, admin, name, role, password))
            st.rerun()
    with st.form("remove_user"):
        st.markdown("**Remove a user** (their labels stay in the project)")
        name = st.selectbox("User", names, key="remove_name")
        sure = st.checkbox("Yes, remove this account")
        if st.form_submit_button("Remove user"):
            act(store, admin, lambda: _remove_user(store, admin, name, sure))
            st.rerun()


def first_admin_form(store: Store, admin: str) -> None:
    """With no users, the app serves the local admin on this machine only. The first user
    makes everyone sign in, so the local admin first gets an admin account of their own (and
    is signed in with it): the project never has users but no admin who can sign in."""
    st.html(
        render.note(
            "This project has no users: you use it as the local admin, on this machine only. "
            "Once it has a user, everyone signs in, you too. So first create your own admin "
            "account; then add the others."
        )
    )
    with st.form("first_admin", clear_on_submit=True):
        name = st.text_input("Your user name", autocomplete="username")
        password = st.text_input(
            "Your password", type="password", autocomplete="new-password", help=PASSWORD_HELP
        )
        again = st.text_input("Your password again", type="password", autocomplete="new-password")
        if st.form_submit_button("Create my admin account"):
            act(store, admin, lambda: _first_admin(store, name, password, again))
            st.rerun()


def _first_admin(store: Store, name: str, password: str, again: str) -> str:
    validate_user_name(name)
    if not password or password != again:
        raise ValueError("give the same password twice")
    store.add_annotator(name, "admin", hash_password(password))
    signin.sign_in_tab(store, name)
    return f"Created your admin account {name}, and signed you in with it. Now add the others."


def _add_user(store: Store, name: str, role: str, password: str, no_password: bool) -> str:
    validate_user_name(name)
    if not no_password and not password:
        raise ValueError("give a password, or tick 'identity provider only'")
    store.add_annotator(name, role, None if no_password else hash_password(password))
    return f"Added {role} {name}."


def _change_user(store: Store, admin: str, name: str | None, role: str, password: str) -> str:
    if not name:
        raise ValueError("choose a user")
    if name == admin and role != UNCHANGED:
        raise ValueError("you cannot change your own role (another admin can)")
    new_role = None if role == UNCHANGED else role
    store.update_annotator(
        name, role=new_role, password_hash=hash_password(password) if password else None
    )
    return f"Changed {name}."


def _remove_user(store: Store, admin: str, name: str | None, sure: bool) -> str:
    if not name or not sure:
        raise ValueError("choose a user and tick the box to confirm")
    if name == admin:
        raise ValueError("you cannot remove your own account (another admin can)")
    store.remove_annotator(name)
    return f"Removed {name}; their labels are kept."


# --- assignments ----------------------------------------------------------------------------------


def assignments_section(store: Store, admin: str) -> None:
    """Who has how much work, and the form that deals the remaining queries with overlap."""
    rows = accounts.user_rows(store)
    columns = ["name", "role", "assigned", "open"]
    st.dataframe(pd.DataFrame(rows, columns=columns), hide_index=True)
    dealable = store.dealable_queries()
    st.html(render.note(f"{len(dealable)} queries are not done and not yet dealt to anyone."))
    users = [row["name"] for row in rows]
    slices = sorted({query["slice"] for query in dealable})
    with st.form("deal"):
        annotators = st.multiselect(
            "Deal to",
            users,
            default=[row["name"] for row in rows if row["role"] == "annotator"],
        )
        chosen_slices = st.multiselect(
            "Only these slices (none chosen: all)",
            slices,
            format_func=lambda name: name or "(no slice)",
        )
        overlap = st.slider("Overlap: share judged by several annotators, blind", 0, 100, 10)
        judges = st.number_input("Annotators per overlapping query", min_value=2, value=2)
        seed = st.number_input("Seed of the overlap sample", value=0, step=1)
        if st.form_submit_button("Deal queries"):
            act(
                store,
                admin,
                lambda: _deal(store, annotators, chosen_slices, overlap / 100, judges, seed),
            )
            st.rerun()


def _deal(
    store: Store, annotators: list[str], slices: list[str], overlap: float, judges: int, seed: int
) -> str:
    result = team.deal(
        store,
        annotators,
        overlap=overlap,
        judges=int(judges),
        slices=slices or None,
        seed=int(seed),
    )
    shares = ", ".join(f"{name} {len(ids)}" for name, ids in result.plan.items())
    return f"Dealt {result.queries} queries ({len(result.overlapping)} overlapping): {shares}."


# --- import, pool, export -------------------------------------------------------------------------


def data_section(store: Store, admin: str) -> None:
    """Import tasks, pool runs, export the golden set."""
    st.markdown("**Import tasks** (JSONL or CSV; all-or-nothing)")
    tasks = st.file_uploader("Tasks file", type=["jsonl", "json", "csv"], key="tasks_file")
    if st.button("Import", disabled=tasks is None):
        act(store, admin, lambda: _import(store, tasks))
        st.rerun()
    st.markdown(
        "**Pool runs** (TREC runs over a BEIR corpus; without corpus and queries, the "
        "project's own)"
    )
    corpus = st.file_uploader("corpus.jsonl", type=["jsonl"], key="pool_corpus")
    queries = st.file_uploader("queries.jsonl", type=["jsonl"], key="pool_queries")
    runs = st.file_uploader("Runs", accept_multiple_files=True, key="pool_runs")
    depth = st.number_input("Depth", min_value=1, value=10)
    if st.button("Pool", disabled=not runs):
        act(store, admin, lambda: _pool(store, corpus, queries, runs, int(depth)))
        st.rerun()
    st.markdown("**Export the golden set**")
    left, right = st.columns(2)
    left.download_button(
        "Golden set (JSONL)",
        data=lambda: _export(store, admin, "golden.jsonl", store.write_jsonl),
        file_name="golden.jsonl",
        mime="application/jsonl",
    )
    if right.button("TREC qrels", help=context.QRELS_HELP):
        with right:
            context.offer_qrels(store, admin)


def _upload(uploaded) -> tuple[str, bytes] | None:
    """A Streamlit upload as (file name, bytes), None when none was given."""
    return None if uploaded is None else (uploaded.name, uploaded.getvalue())


def _import(store: Store, uploaded) -> str:
    with live.saved_uploads(_upload(uploaded)) as [path]:
        counts = store.import_tasks(path)
    return (
        f"Imported {counts['queries_added']} queries ({counts['candidates_added']} candidates); "
        f"{counts['queries_unchanged']} were already there."
    )


def _pool(store: Store, corpus, queries, runs, depth: int) -> str:
    with live.saved_uploads(_upload(corpus), _upload(queries), *map(_upload, runs)) as saved:
        counts = store.pool(saved[0], saved[1], saved[2:], depth)
    return (
        f"Pooled {', '.join(counts['runs'])} at depth {depth}: {counts['candidates_added']} new "
        f"candidates over {counts['queries_touched']} queries."
    )


def _export(store: Store, admin: str, name: str, write: Callable[[Path], int]) -> bytes:
    """The export's bytes, once the role is checked again in the database."""
    accounts.authorize(store, admin, "admin")
    return live.exported(write, name)


# --- the labelling protocol -----------------------------------------------------------------------

PROTOCOL_MODES = {"first_hit": "First hit (stop at the first relevant)", "full": "Full"}


def protocol_section(store: Store, admin: str) -> None:
    """The project's labelling protocol: a form to change it, and who changed it when."""
    protocol = store.settings()
    with st.form("protocol"):
        st.markdown("**Labelling protocol** (every annotator labels under it)")
        modes = list(PROTOCOL_MODES)
        mode = st.radio(
            "Mode", modes, index=modes.index(protocol["mode"]), format_func=PROTOCOL_MODES.get
        )
        depth = st.number_input("Depth k (0 = every candidate)", 0, value=protocol["depth"])
        max_grade = st.number_input("Top grade (1 = binary)", 1, 10, value=protocol["max_grade"])
        threshold = st.number_input("Relevant from grade", 1, 10, value=protocol["rel_threshold"])
        if st.form_submit_button("Save protocol"):
            changes = dict(mode=mode, depth=int(depth), max_grade=int(max_grade))
            changes["rel_threshold"] = int(threshold)
            act(store, admin, lambda: _configure(store, admin, changes))
            st.rerun()
    log = store.protocol_log()
    if log:
        rows = [
            {"changed at": e["changed_at"], "by": e["changed_by"], "changes": str(e["changes"])}
            for e in reversed(log)
        ]
        st.dataframe(pd.DataFrame(rows), hide_index=True)


def _configure(store: Store, admin: str, changes: dict) -> str:
    settings = store.configure(**changes, by=admin)
    return "Protocol saved: " + ", ".join(f"{key} {value}" for key, value in settings.items())


def main() -> None:
    """Render the admin page (admins only)."""
    admin = context.open_page("admin", "Admin")
    store = context.store()
    users, assignments, protocol, data = st.tabs(
        ["Users", "Assignments", "Protocol", "Import, pool, export"]
    )
    with users:
        users_section(store, admin["name"])
    with assignments:
        assignments_section(store, admin["name"])
    with protocol:
        protocol_section(store, admin["name"])
    with data:
        data_section(store, admin["name"])


main()
