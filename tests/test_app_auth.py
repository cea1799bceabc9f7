"""Local users: salted scrypt hashes, login checks, the loopback rule and `goldset user add`."""

import pytest
from click.testing import CliRunner

from labeler.auth import (
    LOCAL_ANNOTATOR,
    check_login,
    hash_password,
    is_loopback,
    validate_user_name,
    verify_password,
)
from labeler.cli import cli
from labeler.launch import DB_ENV, app_environment, check_host, streamlit_command
from labeler.store import Store


def test_password_hash_verifies_the_password_and_nothing_else():
    stored = hash_password("correct horse")
    assert verify_password("correct horse", stored)
    assert not verify_password("correct horse ", stored)
    assert "correct horse" not in stored


def test_same_password_hashes_differently_each_time():
    assert hash_password("pw") != hash_password("pw")


def test_hash_records_its_scheme_and_cost_so_they_can_change():
    scheme, n, r, p, salt, key = hash_password("pw").split("$")
    assert (scheme, n, r, p) == ("scrypt", "16384", "8", "1")


def test_malformed_or_foreign_hash_never_verifies():
    assert not verify_password("pw", "")
    assert not verify_password("pw", "bcrypt$x$y")
    assert not verify_password("pw", "scrypt$16384$8$1$not-base64!$x")


def test_empty_password_is_refused():
    with pytest.raises(ValueError, match="must not be empty"):
        hash_password("")


def test_login_of_an_unknown_user_fails():
    assert not check_login("nobody", "pw", None)
    assert check_login("ana", "pw", hash_password("pw"))


@pytest.mark.parametrize("name", ["", "ana smith", "<b>", "-ana", "a" * 65, LOCAL_ANNOTATOR])
def test_invalid_user_names_are_refused(name):
    with pytest.raises(ValueError):
        validate_user_name(name)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_hosts(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_non_loopback_hosts(host):
    assert not is_loopback(host)


def test_project_without_users_refuses_a_non_loopback_host():
    with pytest.raises(ValueError, match="goldset user add"):
        check_host("0.0.0.0", has_users=False)
    check_host("0.0.0.0", has_users=True)
    check_host("127.0.0.1", has_users=False)


def test_streamlit_command_binds_the_given_host_and_port_without_usage_stats():
    command = streamlit_command("127.0.0.1", 8600)
    assert command[command.index("--server.address") + 1] == "127.0.0.1"
    assert command[command.index("--server.port") + 1] == "8600"
    assert command[command.index("--browser.gatherUsageStats") + 1] == "false"


def test_app_environment_passes_the_absolute_database_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert app_environment("p.db")[DB_ENV] == str(tmp_path / "p.db")
    monkeypatch.setenv(DB_ENV, "elsewhere.db")
    assert DB_ENV not in app_environment(None)


def test_cli_app_refuses_a_public_host_for_a_project_without_users(tmp_path):
    Store(tmp_path / "p.db").close()
    result = CliRunner().invoke(cli, ["app", "--db", str(tmp_path / "p.db"), "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert "refusing to listen on 0.0.0.0" in result.output


def test_cli_user_add_stores_only_a_hash(tmp_path):
    db = tmp_path / "p.db"
    Store(db).close()
    result = CliRunner().invoke(
        cli, ["user", "add", "ana", "--db", str(db)], input="s3cret\ns3cret\n"
    )
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        user = store.annotator("ana")
    assert user["role"] == "annotator"
    assert verify_password("s3cret", user["password_hash"])


def test_cli_user_add_refuses_a_duplicate_and_a_bad_name(tmp_path):
    db = str(tmp_path / "p.db")
    Store(db).close()
    CliRunner().invoke(cli, ["user", "add", "ana", "--db", db, "--password", "x"])
    duplicate = CliRunner().invoke(cli, ["user", "add", "ana", "--db", db, "--password", "y"])
    assert duplicate.exit_code == 1 and "already exists" in duplicate.output
    bad = CliRunner().invoke(cli, ["user", "add", "a b", "--db", db, "--password", "y"])
    assert bad.exit_code == 1 and "invalid user name" in bad.output
