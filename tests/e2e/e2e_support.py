"""Start a Streamlit app on loopback for browser tests; wait for reruns as Streamlit's e2e does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_healthy(
    url: str, process: subprocess.Popen, timeout: float = 30.0, log: IO[str] | None = None
) -> None:
    """Poll Streamlit's health endpoint until it answers, or fail with the server's output
    (its ``log`` file, else its pipe)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stream = log if log is not None else process.stdout
            if log is not None:
                log.seek(0)
            raise RuntimeError(f"the server exited early:\n{stream.read() if stream else ''}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the server did not become healthy at {url} within {timeout} s")


@contextmanager
def serving(
    command: list[str], port: int, env: dict[str, str] | None = None, timeout: float = 30.0
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run ``command`` (a server that listens on 127.0.0.1:``port`` and answers
    ``/_stcore/health``: an app, or the proxy in front of apps) from the repository, with
    ``env`` over this environment; yield its base URL and its process once it is healthy, and
    stop it after. Its output goes to a temporary file, never a pipe nobody reads (a long run
    would fill the pipe and block the server)."""
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env={**os.environ, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_healthy(f"http://127.0.0.1:{port}", process, timeout, log)
            yield f"http://127.0.0.1:{port}", process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


@contextmanager
def streamlit_app(script: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``streamlit run script`` on a free 127.0.0.1 port; yield its base URL."""
    port = free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.address", "127.0.0.1", "--server.port", str(port),
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    with serving(command, port, env) as (url, _):
        yield url


def wait_idle(page: Page, timeout: float = 15_000) -> None:
    """Wait until the app is connected, no script runs, no skeleton placeholder remains and
    the key listener holds no press the server has not acknowledged (the page shows a press
    at once, before the server has stored it)."""
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app
                && app.dataset.testConnectionState === "CONNECTED"
                && app.dataset.testScriptState === "notRunning"
                && !document.querySelector('[data-testid="stSkeleton"]')
                && document.documentElement.dataset.goldsetSaving !== "1";
        }""",
        timeout=timeout,
    )


def open_app(page: Page, url: str) -> None:
    """Load the app and wait until its key listener is mounted and the page is idle."""
    page.goto(url)
    wait_keys_ready(page)


def wait_keys_ready(page: Page) -> None:
    """Wait for the key listener to be installed (it mounts after the first render)."""
    page.locator(".goldset-keys[data-ready='1']").wait_for(state="attached")
    wait_idle(page)


def query_heading(page: Page):
    """The text of the query being judged."""
    return page.locator(".gs-query-text")


def current_rank(page: Page):
    """The rank shown on the current candidate's card (``#3``)."""
    return page.locator(".gs-cards:not(.gs-hidden) .gs-current .gs-rank")


def progress_text(page: Page):
    """The progress bar's caption (``2 of 50 queries done``)."""
    return page.get_by_test_id("stProgress")
