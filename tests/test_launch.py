"""``goldset app`` passes the project's Streamlit settings itself (so it behaves the same from
any directory), opens the browser only where there is one, and passes on the host names it
answers to (``--allow-host``)."""

from __future__ import annotations

import tomllib

from click.testing import CliRunner

from goldset.labeler import launch
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

REPO_CONFIG = launch.PACKAGE.parent / ".streamlit" / "config.toml"


def test_every_setting_of_the_config_becomes_a_flag_after_the_script():
    command = launch.streamlit_command("127.0.0.1", 8600)
    settings = tomllib.loads(REPO_CONFIG.read_text(encoding="utf-8"))
    flags = dict(zip(command[5::2], command[6::2], strict=True))
    for section, options in settings.items():
        for name, value in options.items():
            expected = str(value).lower() if isinstance(value, bool) else str(value)
            if f"{section}.{name}" not in ("server.address", "server.port"):
                assert flags[f"--{section}.{name}"] == expected
    assert flags["--theme.primaryColor"] == settings["theme"]["primaryColor"]
    assert (flags["--server.address"], flags["--server.port"]) == ("127.0.0.1", "8600")


def test_the_safety_settings_hold_whatever_a_config_says(tmp_path):
    odd = tmp_path / "config.toml"
    odd.write_text("[server]\nheadless = false\n[runner]\nenforceSerializableSessionState = true\n")
    command = launch.streamlit_command("127.0.0.1", 8600, odd)
    flags = dict(zip(command[5::2], command[6::2], strict=True))
    assert flags["--server.headless"] == "true"
    assert flags["--runner.enforceSerializableSessionState"] == "false"


def test_a_browser_is_opened_only_with_a_display(monkeypatch):
    monkeypatch.setattr(launch.sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert not launch.has_display()
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    assert launch.has_display()
    monkeypatch.setattr(launch.sys, "platform", "darwin")
    monkeypatch.delenv("WAYLAND_DISPLAY")
    assert launch.has_display()


def test_the_browser_opens_the_loopback_address_of_a_wildcard_host():
    assert launch.app_url("0.0.0.0", 8501) == "http://127.0.0.1:8501/"
    assert launch.app_url("10.0.0.5", 9000) == "http://10.0.0.5:9000/"


def test_open_gives_up_when_no_server_answers(monkeypatch):
    opened = []
    monkeypatch.setattr(launch.webbrowser, "open", opened.append)
    assert launch.open_when_healthy("http://127.0.0.1:9/", wait=0.5) is False
    assert opened == []


def test_goldset_app_passes_the_named_hosts_on_and_says_what_it_answers_to(tmp_path, monkeypatch):
    served = []
    monkeypatch.setattr(launch, "serve", lambda *arguments: served.append(arguments))
    db = tmp_path / "p.db"
    with Store(db) as store:
        store.add_annotator("alan", role="admin")
    arguments = ["app", "--db", str(db), "--host", "0.0.0.0", "--allow-host", "labels.test"]
    result = CliRunner().invoke(cli, [*arguments, "--no-open"])
    assert result.exit_code == 0, result.output
    assert "answering to loopback names and labels.test" in result.output
    assert served == [(str(db), "0.0.0.0", 8501, True, False, ("labels.test",))]
    result = CliRunner().invoke(cli, ["app", "--db", str(db), "--no-open"])
    assert "answering to loopback names only" in result.output
