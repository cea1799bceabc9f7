"""A ``--db`` that is not a usable goldset project: every command gives a one-line error (exit
2, an input error), never a traceback, and never writes to the file — not even WAL mode or a
migration. Read commands open a project read-only; only import and pool create one."""

import hashlib
import os
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.projects import build_project

from goldset.labeler.cli import cli
from goldset.labeler.store import DEMO_TASKS, ProjectError, Store

PAGE = 4096


def project(path: Path) -> Path:
    """A real project: the demo set, one user, closed (its WAL checkpointed into the file)."""
    return build_project(path, DEMO_TASKS, users=["ana"])


def missing(folder: Path) -> Path:
    return folder / "project.db"


def mistyped(folder: Path) -> Path:
    project(folder / "project.db")
    return folder / "projcet.db"


def in_missing_folder(folder: Path) -> Path:
    return folder / "no-such-folder" / "project.db"


def directory(folder: Path) -> Path:
    (folder / "project.db").mkdir()
    return folder / "project.db"


def foreign(folder: Path) -> Path:
    conn = sqlite3.connect(folder / "other.db")
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    conn.execute("INSERT INTO notes (text) VALUES ('not goldset')")
    conn.commit()
    conn.close()
    return folder / "other.db"


def text_file(folder: Path) -> Path:
    (folder / "notes.db").write_text("a text file, not a database\n", encoding="utf-8")
    return folder / "notes.db"


def corrupt(folder: Path) -> Path:
    path = project(folder / "project.db")
    with path.open("r+b") as handle:  # scribble over page 4, a b-tree page of the schema
        handle.seek(3 * PAGE)
        handle.write(b"\xab" * PAGE)
    return path


def read_only(folder: Path) -> Path:
    path = project(folder / "project.db")
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    return path


FAULTS = {
    "missing": missing,
    "mistyped": mistyped,
    "in_missing_folder": in_missing_folder,
    "directory": directory,
    "foreign": foreign,
    "text_file": text_file,
    "corrupt": corrupt,
    "read_only": read_only,
}


@pytest.fixture
def inputs(tmp_path):
    """A tasks file and a TREC run of the demo set's first query, outside the project."""
    run = tmp_path / "inputs" / "bm25.trec"
    run.parent.mkdir()
    run.write_text("q01 Q0 sdk/retry.py#backoff 1 9.5 bm25\n", encoding="utf-8")
    return {"tasks": str(DEMO_TASKS), "run": str(run), "out": str(tmp_path / "inputs" / "out")}


READ_COMMANDS = {
    "status": ["status"],
    "export": ["export", "--out", "{out}"],
    "eval": ["eval", "--bootstrap", "0"],
    "compare": ["compare", "--baseline", "{run}", "--candidate", "{run}", "--bootstrap", "0"],
    "cost": ["cost"],
    "user list": ["user", "list"],
    "agreement": ["agreement", "--bootstrap", "0"],
    "adjudicate queue": ["adjudicate"],
}
WRITE_COMMANDS = {
    "user add": ["user", "add", "bob", "--password", "password"],
    "user remove": ["user", "remove", "ana"],
    "user passwd": ["user", "passwd", "ana", "--password", "password"],
    "assign": ["assign", "--to", "ana"],
    "adjudicate decide": ["adjudicate", "q01", "--accept", "ana", "--reviewer", "rita"],
    "eval --record": ["eval", "--bootstrap", "0", "--record"],
    "app": ["app"],
}
CREATE_COMMANDS = {
    "import": ["import", "{tasks}"],
    "pool": ["pool", "--run", "{run}"],
}
COMMANDS = {**READ_COMMANDS, **WRITE_COMMANDS, **CREATE_COMMANDS}


def fingerprint(path: Path) -> tuple | None:
    """What must not change: the file's bytes (None: no such file), or a directory's listing."""
    if path.is_dir():
        return tuple(sorted(os.listdir(path)))
    if not path.exists():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode


def run(command: str, db: Path, inputs: dict):
    args = [part.format(**inputs) for part in COMMANDS[command]]
    return CliRunner().invoke(cli, [*args, "--db", str(db)])


def refused_cleanly(result, path: Path, before) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    message = result.output.strip().splitlines()[-1]
    assert message.startswith("Error: ") and (str(path) in message or path.name in message)
    assert fingerprint(path) == before


def expected_refusal(command: str, fault: str) -> bool:
    """Where a command must refuse: every fault, except what is not one for that command."""
    if fault == "read_only":
        return command not in READ_COMMANDS  # reading a read-only project is fine
    if fault in ("missing", "mistyped"):
        return command not in CREATE_COMMANDS  # import and pool create a project
    return True


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_db_is_refused_in_one_line_and_left_untouched(tmp_path, inputs, command, fault):
    path = FAULTS[fault](tmp_path)
    before = fingerprint(path)
    result = run(command, path, inputs)
    if expected_refusal(command, fault):
        refused_cleanly(result, path, before)
    elif fault == "read_only":
        assert result.exit_code == 0, result.output
        assert fingerprint(path) == before
    else:  # import and pool on a new path create the project (pool: with no queries yet)
        assert result.exit_code == 0, result.output
        with Store.open_project(path, write=False) as store:
            assert store.has_queries() == (command == "import")


def test_a_read_command_on_a_missing_path_says_import_creates_one(tmp_path, inputs):
    result = run("status", tmp_path / "typo.db", inputs)
    assert f"no goldset project at {tmp_path / 'typo.db'}" in result.output
    assert "`goldset import` creates one" in result.output
    assert not (tmp_path / "typo.db").exists()


def test_a_scribbled_page_is_caught_at_open_by_quick_check(tmp_path):
    path = corrupt(tmp_path)
    with pytest.raises(ProjectError, match="is corrupt .PRAGMA quick_check"):
        Store.open_project(path, write=False)


def test_a_foreign_sqlite_file_gets_no_goldset_tables(tmp_path, inputs):
    path = foreign(tmp_path)
    for command in COMMANDS:
        run(command, path, inputs)
    conn = sqlite3.connect(path)
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert tables == ["notes"]
    assert journal == "delete"  # never switched to WAL


def test_read_commands_leave_a_project_byte_identical(tmp_path, inputs):
    path = project(tmp_path / "project.db")
    before = fingerprint(path)
    for command in READ_COMMANDS:
        result = run(command, path, inputs)
        assert result.exit_code == 0, (command, result.output)
    assert fingerprint(path) == before


def test_an_empty_file_becomes_a_project_only_by_import(tmp_path, inputs):
    path = tmp_path / "empty.db"
    path.touch()
    refused_cleanly(run("status", path, inputs), path, fingerprint(path))
    assert run("import", path, inputs).exit_code == 0
    with Store.open_project(path, write=False) as store:
        assert store.has_queries()


def test_a_read_only_project_opened_for_reading_cannot_write(tmp_path):
    path = project(tmp_path / "project.db")
    with Store.open_project(path, write=False) as store:
        assert store.annotator("ana")["role"] == "annotator"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.add_annotator("bob")


@pytest.mark.parametrize("fault", ["missing", "foreign", "text_file", "corrupt", "read_only"])
def test_the_app_shows_why_a_project_cannot_be_opened(tmp_path, monkeypatch, fault):
    from streamlit.testing.v1 import AppTest

    path = FAULTS[fault](tmp_path)
    before = fingerprint(path)
    monkeypatch.setenv("GOLDSET_DB", str(path))
    app = AppTest.from_file("../labeler/app.py", default_timeout=30).run()
    assert not app.exception
    assert [error.value for error in app.error] == ["This project cannot be opened."]
    assert str(path) in app.text[0].value
    assert fingerprint(path) == before


@pytest.fixture
def checked_in_background(monkeypatch):
    """Every project counts as large: the app's open checks its integrity in the background."""
    from goldset.labeler.store import connection

    monkeypatch.setattr(connection, "BACKGROUND_CHECK_BYTES", 0)
    return connection


def test_a_large_projects_check_does_not_delay_the_open_and_writes_wait_for_it(
    tmp_path, monkeypatch, checked_in_background
):
    path = project(tmp_path / "project.db")
    release, check = threading.Event(), checked_in_background.IntegrityCheck.run

    def held_check(self) -> None:  # the check of a large file, held until released
        release.wait()
        check(self)

    monkeypatch.setattr(checked_in_background.IntegrityCheck, "run", held_check)
    with Store.open_project(path, write=True, background_check=True) as store:
        assert store.annotator("ana")["role"] == "annotator"  # reads go ahead meanwhile
        writer = threading.Thread(target=store.add_annotator, args=("bob",))
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and store.annotator("bob") is None
        release.set()
        writer.join(10)
        assert store.annotator("bob")["role"] == "annotator"
        assert store.integrity_problem() is None


def test_a_large_corrupt_project_refuses_writes_once_its_background_check_fails(
    tmp_path, checked_in_background
):
    path = corrupt(tmp_path)
    before = fingerprint(path)
    # The open itself raises if the check has already failed; else the write does.
    with (
        pytest.raises(ProjectError, match="is corrupt .PRAGMA quick_check"),
        Store.open_project(path, write=True, background_check=True) as store,
    ):
        store.add_annotator("bob")
    assert fingerprint(path) == before


def test_the_app_shows_a_failed_background_check_as_a_project_that_cannot_be_opened(
    tmp_path, monkeypatch, checked_in_background
):
    from streamlit.testing.v1 import AppTest

    path = corrupt(tmp_path)
    before = fingerprint(path)
    monkeypatch.setenv("GOLDSET_DB", str(path))
    app = AppTest.from_file("../labeler/app.py", default_timeout=30)
    for _ in range(50):  # the session's page again, until its check has failed
        app.run()
        if app.error:
            break
        time.sleep(0.1)
    assert not app.exception
    assert [error.value for error in app.error] == ["This project cannot be opened."]
    assert "is corrupt (PRAGMA quick_check" in app.text[0].value
    assert fingerprint(path) == before
