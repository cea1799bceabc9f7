"""Browser-test setup: Debian's Chromium (never a downloaded build), quiet and offline."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest
from e2e_support import REPO, streamlit_app

APP = REPO / "labeler" / "app.py"
ARTIFACTS = REPO / "tests" / "artifacts"

CHROMIUM = "/usr/bin/chromium"
QUIET_CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """Launch the system Chromium with the flags that keep it from calling home."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": QUIET_CHROMIUM_ARGS}


@pytest.fixture
def serve_app(tmp_path):
    """Start the goldset app on a project database; returns ``start(db_path) -> base URL``.

    Every server started is stopped when the test ends.
    """
    with ExitStack() as servers:

        def start(db_path: Path) -> str:
            return servers.enter_context(streamlit_app(APP, {"GOLDSET_DB": str(db_path)}))

        yield start


@pytest.fixture
def artifacts_dir() -> Path:
    """Where browser tests leave screenshots for people to look at (git-ignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
