"""The wheel works on its own: built from the repository, installed into a fresh virtual
environment outside it, ``goldset status`` and ``goldset app`` run on the demo set from any
directory, with the database in the user's data folder (site-packages may be read-only).

The venv reuses this interpreter's installed packages through a ``.pth`` line (no download);
the editable install of the repository is not among them (its finder is loaded by a ``.pth``
file of the system site folder, which a path line does not run), so only the wheel's own
files answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from e2e_support import REPO, free_port, wait_healthy

from goldset.labeler.store import DEMO_TASKS


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The built wheel installed into a fresh venv: its bin folder, a home and a work folder."""
    root = tmp_path_factory.mktemp("wheel")
    # Nothing of the repository on the path: PYTHONPATH would make pip see the host's goldset.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env |= {"HOME": str(root / "home"), "XDG_DATA_HOME": str(root / "home" / "data")}
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", root / "dist", REPO],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    wheel = next((root / "dist").glob("goldset_ir-*.whl"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel],
        env=env,
        check=True,
    )
    # Only after the install: pip would take the host's editable goldset for this one.
    Path(site, "host_packages.pth").write_text(sysconfig.get_path("purelib") + "\n")
    work = root / "elsewhere"
    work.mkdir()
    return {"bin": venv / "bin", "site": Path(site), "work": work, "env": env, "wheel": wheel}


def goldset(installed: dict, *args: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [installed["bin"] / "goldset", *args],
        cwd=installed["work"],
        env=installed["env"],
        capture_output=True,
        text=True,
        **options,
    )


def test_wheel_ships_the_demo_set_and_the_app_settings(installed):
    package = installed["site"] / "goldset" / "labeler"
    assert (package / "data" / "demo.jsonl").read_bytes() == DEMO_TASKS.read_bytes()
    assert (package / "config" / "config.toml").read_bytes() == (
        REPO / ".streamlit" / "config.toml"
    ).read_bytes()
    assert not list(package.rglob("*.db"))


def test_installed_status_creates_the_demo_project_in_the_user_data_folder(installed):
    result = goldset(installed, "status", "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    demo_queries = len(DEMO_TASKS.read_text(encoding="utf-8").splitlines())
    assert status["queries"] == demo_queries
    expected = Path(installed["env"]["XDG_DATA_HOME"]) / "goldset" / "goldset.db"
    assert Path(status["path"]).resolve() == expected.resolve()
    assert "labeler" not in status["path"]


def test_installed_app_serves_a_healthy_server_with_the_shipped_theme(installed):
    port = free_port()
    process = subprocess.Popen(
        [installed["bin"] / "goldset", "app", "--port", str(port), "--no-open"],
        cwd=installed["work"],
        env=installed["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, timeout=60)
        command = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
        assert b"--theme.primaryColor" in command
        assert str(installed["site"] / "goldset" / "labeler" / "app.py").encode() in command
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_the_wheel_installs_one_package_goldset_and_nothing_named_eval_or_labeler(installed):
    import zipfile

    with zipfile.ZipFile(installed["wheel"]) as wheel:
        tops = {name.split("/")[0] for name in wheel.namelist() if ".dist-info/" not in name}
    assert tops == {"goldset"}
    assert installed["wheel"].name.startswith("goldset_ir-")  # "goldset" on PyPI is another's
    site = installed["site"]
    assert (site / "goldset" / "__init__.py").is_file()
    assert (site / "goldset" / "eval" / "metrics.py").is_file()
    assert not (site / "eval").exists() and not (site / "labeler").exists()
    assert not (site / "goldset" / "labeler" / "api").exists()  # it is goldset itself


def test_the_installed_package_evaluates_from_python_and_runs_as_python_m_goldset(installed):
    code = (
        "import goldset, json; "
        "r = goldset.evaluate({'q1': {'d1': 1}}, {'q1': {'d2': 2.0, 'd1': 1.0}}, bootstrap=0); "
        "print(json.dumps([r.summary().loc['mrr@10', 'mean'], goldset.__file__]))"
    )
    python = installed["bin"] / "python"
    done = subprocess.run(
        [python, "-c", code],
        cwd=installed["work"],
        env=installed["env"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    mrr, location = json.loads(done.stdout)
    assert mrr == 0.5 and location.startswith(str(installed["site"]))
    # An eval.py in the working folder (as in many ML repositories) changes nothing.
    (installed["work"] / "eval.py").write_text("raise SystemExit('the wrong eval')\n")
    try:
        helped = subprocess.run(
            [python, "-m", "goldset", "--help"],
            cwd=installed["work"],
            env=installed["env"],
            capture_output=True,
            text=True,
        )
    finally:
        (installed["work"] / "eval.py").unlink()
    assert helped.returncode == 0, helped.stderr
    assert "Usage: python -m goldset" in helped.stdout or "Usage:" in helped.stdout
