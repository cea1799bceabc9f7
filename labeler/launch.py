"""Start the Streamlit app for a project: ``goldset app [--db PATH] [--host H] [--port N]``.

The command becomes ``python -m streamlit run labeler/app.py`` (the process is replaced, so
signals such as SIGTERM reach Streamlit itself); the database path travels in the
``GOLDSET_DB`` environment variable. Options that matter for safety are
passed on the command line, so they hold whatever directory the command is started from
(``.streamlit/config.toml`` is only read from the current directory).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

from labeler.auth import is_loopback

APP = Path(__file__).resolve().parent / "app.py"
DB_ENV = "GOLDSET_DB"


def check_host(host: str, has_users: bool) -> None:
    """Refuse to serve a project without users beyond this machine: anyone could label in it."""
    if not has_users and not is_loopback(host):
        raise ValueError(
            f"refusing to listen on {host}: the project has no users, so anyone who can reach "
            "the app could label as the local annotator. Add one with `goldset user add NAME` "
            "(a login is then required), or use --host 127.0.0.1"
        )


def streamlit_command(host: str, port: int) -> list[str]:
    """The command line that serves the app on ``host:port``."""
    return [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.address", host,
        "--server.port", str(port),
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "minimal",
        "--runner.enforceSerializableSessionState", "false",
    ]  # fmt: skip


def app_environment(db: str | Path | None) -> dict[str, str]:
    """The environment for the app process: this one, plus the absolute database path."""
    env = dict(os.environ)
    if db is not None:
        env[DB_ENV] = str(Path(db).resolve())
    else:
        env.pop(DB_ENV, None)
    return env


def serve(db: str | Path | None, host: str, port: int, has_users: bool) -> NoReturn:
    """Replace this process with the Streamlit server for the project (never returns)."""
    check_host(host, has_users)
    command = streamlit_command(host, port)
    os.execve(command[0], command, app_environment(db))
