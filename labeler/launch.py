"""Start the Streamlit app for a project: ``goldset app [--db PATH] [--host H] [--port N]
[--allow-host NAME ...]``.

The command becomes ``python -m streamlit run labeler/app.py`` (the process is replaced, so
signals such as SIGTERM reach Streamlit itself); the database path travels in the
``GOLDSET_DB`` environment variable, the host names the app answers to besides loopback ones
in ``GOLDSET_ALLOWED_HOSTS`` (:mod:`goldset.labeler.hosts`). Streamlit reads
``.streamlit/config.toml``
only from the current directory, so every setting of the project's config (theme, address,
toolbar...) is passed on the command line, from the copy shipped in the package: the app looks
and behaves the same whatever directory the command is started from, from a clone or from an
installed wheel.
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
import webbrowser
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from goldset.labeler import hosts
from goldset.labeler.auth import is_loopback

PACKAGE = Path(__file__).resolve().parent
APP = PACKAGE / "app.py"
# The settings: shipped in the package (labeler/config, built from .streamlit/), or the clone's.
CONFIG = next(
    (
        path
        for path in (
            PACKAGE / "config" / "config.toml",
            PACKAGE.parent / ".streamlit" / "config.toml",
        )
        if path.exists()
    ),
    None,
)
DB_ENV = "GOLDSET_DB"
OPEN_WAIT_SECONDS = 60  # how long --open waits for the server before giving up
WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # listen on every address of the machine


def check_host(host: str, has_users: bool, named_hosts: Sequence[str] = ()) -> None:
    """Refuse to serve a project without users beyond this machine: anyone could label in it,
    whether it listens on a network or answers to a name a proxy forwards (``named_hosts``)."""
    if has_users:
        return
    if not is_loopback(host):
        raise ValueError(
            f"refusing to listen on {host}: the project has no users, so anyone who can reach "
            "the app could label as the local annotator. Add one with `goldset user add NAME` "
            "(a login is then required), or use --host 127.0.0.1"
        )
    if named_hosts:
        raise ValueError(
            f"refusing to answer to {', '.join(named_hosts)}: the project has no users, so "
            "it serves this machine only. Add one with `goldset user add NAME` first"
        )


def check_port(host: str, port: int) -> None:
    """Refuse a port another program holds on ``host``: ValueError naming it, before anything
    claims to serve. The port is tried as the server binds it (SO_REUSEADDR but on Windows, as
    Streamlit does: a port left in TIME_WAIT by a server just stopped is free), then let go.

    A program may still take the port in the second between this check and the server's own
    bind: the server is given the port explicitly, so it then stops with "Port N is not
    available" (exit 1) rather than moving to another port or sharing it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            if os.name != "nt":
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            probe.bind((host, port))
            probe.listen()
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise ValueError(
                f"port {port} on {host} is in use by another program: stop it, or choose "
                "another port with --port"
            ) from None
        raise ValueError(f"cannot listen on {host} port {port}: {error.strerror}") from None


def allowed_hosts(host: str, named: Sequence[str]) -> list[str]:
    """The host names the app answers to besides loopback ones: the ``named`` ones (each
    checked: ValueError for one that is not a host name) and the address it listens on, when
    that is one address of this machine (``--host 10.0.0.5`` is reached as 10.0.0.5)."""
    names = [hosts.host_name(name) for name in named]
    if host not in WILDCARD_HOSTS and not is_loopback(host):
        names += hosts.valid_names([host])
    return list(dict.fromkeys(names))


def config_settings(config: Path | None = CONFIG) -> dict[str, str]:
    """The settings of a Streamlit ``config.toml`` as ``{"theme.base": "light", ...}``, each
    value as it is written on a command line."""
    settings = tomllib.loads(config.read_text(encoding="utf-8")) if config else {}
    return {
        f"{section}.{name}": str(value).lower() if isinstance(value, bool) else str(value)
        for section, options in settings.items()
        for name, value in options.items()
    }


def streamlit_command(host: str, port: int, config: Path | None = CONFIG) -> list[str]:
    """The command line that serves the app on ``host:port``: the settings of ``config`` (the
    shipped one) as flags, with the ones that must hold whatever a config says."""
    settings = config_settings(config) | {
        "server.address": host,
        "server.port": str(port),
        "server.headless": "true",
        "browser.gatherUsageStats": "false",
        "runner.enforceSerializableSessionState": "false",
    }
    flags = [part for name, value in settings.items() for part in (f"--{name}", value)]
    return [sys.executable, "-m", "streamlit", "run", str(APP), *flags]


def has_display() -> bool:
    """Whether a browser can be opened here: macOS and Windows always; elsewhere an X11 or
    Wayland display (not over SSH without one, not in CI)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def app_url(host: str, port: int) -> str:
    """The address a browser opens (a wildcard host is reached through loopback)."""
    shown = "127.0.0.1" if host in WILDCARD_HOSTS else host
    return f"http://{shown}:{port}/"


def open_when_healthy(url: str, wait: float = OPEN_WAIT_SECONDS) -> bool:
    """Open ``url`` in the browser once the app there answers its health check; False when it
    did not within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return webbrowser.open(url)
        except OSError:
            pass  # not listening yet
        time.sleep(0.25)
    return False


def _open_later(url: str) -> None:
    """Start a detached helper that opens the browser once the server is up (this process is
    about to become the server, so it cannot wait itself)."""
    code = (
        "import sys; from labeler.launch import open_when_healthy; open_when_healthy(sys.argv[1])"
    )
    subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-c", code, url],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def app_environment(db: str | Path | None, allowed: Sequence[str] = ()) -> dict[str, str]:
    """The environment for the app process: this one, plus the absolute database path and
    the host names it answers to besides loopback ones (none unless given: not inherited)."""
    env = dict(os.environ)
    if db is not None:
        env[DB_ENV] = str(Path(db).resolve())
    else:
        env.pop(DB_ENV, None)
    env[hosts.ALLOWED_HOSTS_ENV] = ",".join(allowed)
    return env


def serve(
    db: str | Path | None,
    host: str,
    port: int,
    has_users: bool,
    open_browser: bool = False,
    named_hosts: Sequence[str] = (),
) -> NoReturn:
    """Replace this process with the Streamlit server for the project (never returns);
    ``open_browser`` opens the app in the browser once it is up; ``named_hosts`` are the host
    names it answers to besides loopback ones and its own address."""
    check_host(host, has_users, named_hosts)
    command = streamlit_command(host, port)
    environment = app_environment(db, allowed_hosts(host, named_hosts))
    if open_browser:
        _open_later(app_url(host, port))
    os.execve(command[0], command, environment)
