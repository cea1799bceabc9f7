"""Where the demo set and the default project live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The demo set ships inside the package (labeler/data, from the repository's data/ folder).
# From a clone, the default project lives in data/ beside the demo; an installed package may sit
# in a read-only site-packages, so there the default project lives in the user's data folder.
PACKAGE_DATA = Path(__file__).resolve().parents[1] / "data"


SOURCE_DATA = Path(__file__).resolve().parents[2] / "data"


FROM_CLONE = (SOURCE_DATA / "demo.jsonl").exists() and not (PACKAGE_DATA / "demo.jsonl").exists()


DATA_DIR = SOURCE_DATA if FROM_CLONE else PACKAGE_DATA


DEMO_TASKS = DATA_DIR / "demo.jsonl"


def user_data_dir() -> Path:
    """Where an installed goldset keeps its default project: ``$XDG_DATA_HOME/goldset``
    (``~/.local/share/goldset``), ``%LOCALAPPDATA%\\goldset`` on Windows, ``~/Library/Application
    Support/goldset`` on macOS."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "goldset"


DEFAULT_DB = SOURCE_DATA / "goldset.db" if FROM_CLONE else user_data_dir() / "goldset.db"
