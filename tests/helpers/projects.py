"""Small projects for tests, built in a line (as sqlite-utils' tests take a ``fresh_db``), the
labelled demo, the app opening a project, and a digest of a project's bytes and rows to show
that a refusal changed nothing.

``tests/conftest.py`` serves these as fixtures: ``make_project`` and ``make_store`` (any small
project), ``store`` (an empty one), ``demo_store`` and ``demo_db`` (the demo set),
``labelled_demo_db`` and ``labelled_demo_app`` (the demo labelled), ``open_in_app``.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from goldset.labeler.auth import hash_password
from goldset.labeler.store import DEMO_TASKS, Store

# The MRR worked example (first relevant at ranks 1, 3, none, 2) on the demo's first four
# queries, then two unanswerable queries and one skipped: the labels of :func:`labelled_demo`.
WORKED_EXAMPLE = {"q01": 1, "q02": 3, "q03": None, "q04": 2}
UNANSWERABLE = ("q05", "q06")
SKIPPED = "q07"


def build_project(
    path: Path,
    tasks: str | Path | Iterable[dict] | None = None,
    *,
    users: Iterable[str] | Mapping[str, str] = (),
    passwords: Mapping[str, str] | None = None,
    protocol: Mapping[str, object] | None = None,
) -> Path:
    """Create a project at ``path`` and close it (its WAL checkpointed into the file).

    ``tasks`` is a tasks file or task records; ``users`` annotator names, or names mapped to
    their roles; ``passwords`` the password of some of them (hashing costs ~50 ms a user);
    ``protocol`` the settings of :meth:`Store.configure`, set before the import because
    ``max_grade`` bounds the grades the records may hold.
    """
    if path.exists():  # two fixtures building one file would mix their projects
        raise FileExistsError(f"a project is already at {path}")
    roles = users if isinstance(users, Mapping) else dict.fromkeys(users, "annotator")
    passwords = passwords or {}
    with Store(path) as store:
        if protocol:
            store.configure(**protocol)
        if isinstance(tasks, str | Path):
            store.import_tasks(tasks)
        elif tasks is not None:
            store.import_records(tasks)
        for name, role in roles.items():
            password_hash = hash_password(passwords[name]) if name in passwords else None
            store.add_annotator(name, role=role, password_hash=password_hash)
    return path


def demo_project(path: Path) -> Path:
    """A project at ``path`` holding the demo set, closed."""
    return build_project(path, DEMO_TASKS)


def label(store: Store, query_id: str, first_relevant: int | None, annotator: str = "ana") -> None:
    """Judge top-down, 4 s a judgement, up to the first relevant rank; None: all ten not
    relevant, then a miss."""
    candidates = store.candidates(query_id)
    for candidate in candidates[: (first_relevant or len(candidates) + 1) - 1]:
        store.judge(query_id, candidate["doc_id"], 0, annotator, seconds=4.0)
    if first_relevant is None:
        store.mark(query_id, "miss", annotator, seconds=2.0)
    else:
        store.judge(query_id, candidates[first_relevant - 1]["doc_id"], 1, annotator, seconds=6.0)


def labelled_demo(path: Path) -> Store:
    """The demo project with the worked example, two unanswerable queries and a skip; open."""
    store = Store(path)
    store.import_tasks(DEMO_TASKS)
    for query_id, rank in WORKED_EXAMPLE.items():
        label(store, query_id, rank)
    for query_id in UNANSWERABLE:
        label(store, query_id, 1, annotator="ben")
        store.undo("ben")
        store.mark(query_id, "unanswerable", "ben", seconds=3.0)
    store.mark(SKIPPED, "skip", "ana", seconds=1.0)
    return store


@contextmanager
def opened_by_the_app(path: Path, monkeypatch) -> Iterator[Path]:
    """Make the project at ``path`` the one the app opens (``GOLDSET_DB``), with Streamlit's
    caches, which every AppTest session shares, cleared before and after."""
    import streamlit as st  # here, not above: most tests never start the app (0.5 s import)

    monkeypatch.setenv("GOLDSET_DB", str(path))
    st.cache_data.clear()
    st.cache_resource.clear()
    try:
        yield path
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()


def database_bytes(path: Path) -> str:
    """A digest of the database file and of its WAL, if any."""
    digest = hashlib.sha256()
    for part in (path, path.with_name(path.name + "-wal")):
        digest.update(part.read_bytes() if part.exists() else b"")
    return digest.hexdigest()


def project_state(path: Path) -> tuple[str, list[str]]:
    """The digest of :func:`database_bytes` and the project's logical dump (``iterdump``):
    a refusal must change neither."""
    digest = database_bytes(path)  # before the dump's connection opens the file
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return digest, list(connection.iterdump())
    finally:
        connection.close()
