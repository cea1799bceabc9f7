"""A project database for refusal tests, and a digest of its bytes and rows to show nothing
changed."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from goldset.labeler.store import DEMO_TASKS, Store


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


def demo_project(path: Path) -> Path:
    """A project at ``path`` holding the demo set, closed (so that its WAL is checkpointed)."""
    with Store(path) as store:
        store.import_tasks(DEMO_TASKS)
    return path
