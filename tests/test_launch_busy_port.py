"""``goldset app`` on a port another program holds says so in one line (exit 2) before it
claims to serve anything: it never prints "serving" or the URL, and never starts Streamlit."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from goldset.labeler import launch
from goldset.labeler.cli import cli


@pytest.fixture
def empty_db(make_project) -> str:
    """An empty project's path, as the command line gives it."""
    return str(make_project())


@pytest.fixture(params=["listening", "bound"])
def held_port(request) -> Iterator[int]:
    """A loopback port another socket holds: a server listening on it, or only bound."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        if request.param == "listening":
            holder.listen()
        yield holder.getsockname()[1]


def test_goldset_app_on_a_busy_port_refuses_in_one_line_before_serving(
    empty_db, held_port, monkeypatch
):
    served = []
    monkeypatch.setattr(launch, "serve", lambda *arguments: served.append(arguments))
    arguments = ["app", "--db", empty_db, "--port", str(held_port), "--no-open"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"Error: port {held_port} on 127.0.0.1 is in use by another program: stop it, or "
        "choose another port with --port"
    ]
    assert "serving" not in result.output and "http://" not in result.output
    assert served == []


def test_the_real_command_exits_before_streamlit_starts(empty_db, held_port):
    # The whole command, as a user types it: the check runs before the process becomes the
    # server (if it did not, Streamlit would start, say "serving" first, and exit 1).
    command = [sys.executable, "-m", "goldset.labeler.cli", "app", "--db", empty_db]
    result = subprocess.run(
        [*command, "--port", str(held_port), "--no-open"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"Error: port {held_port} on 127.0.0.1 is in use by another program: stop it, or "
        "choose another port with --port"
    ]
    assert result.stdout == ""


def test_a_free_port_passes_the_check_and_stays_free():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launch.check_port("127.0.0.1", port)
    with socket.socket() as after:  # the check let the port go again
        after.bind(("127.0.0.1", port))


def test_an_address_of_no_interface_here_is_named():
    with pytest.raises(ValueError, match=r"^cannot listen on 192\.0\.2\.1 port 8600: "):
        launch.check_port("192.0.2.1", 8600)  # TEST-NET-1: no machine holds it
