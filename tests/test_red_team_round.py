"""Red team of this round's doors, on inputs and in situations no other test names.

- No page of another origin may frame the app: every answer the app gives says so (a framed
  app at its loopback address passes the Host and Origin checks; see
  tests/e2e/test_e2e_red_team.py for Chromium refusing the frame).
- The session-cookie endpoint reads no more of a body than a ticket's length: anyone who
  reaches the server may post to it (only browsers are bound by ``Origin``), and a body read
  whole held a gigabyte in memory for a gigabyte sent.
- Every refusal of the CLI is one line and exit 2, never a traceback: a prompt template that is
  not UTF-8, a judge's name with a control character, a password of bytes that are not UTF-8,
  a user name the rules refuse, an output in a folder that does not exist, a bootstrap count
  that would need terabytes.
- Neither is a number that is no number: a gate allowance of nan, inf or below 0, a metric
  cutoff past any ranking (an overflow), a cost of inf or nan, a score floor of nan; nor a
  line break in who changes the protocol (the change log prints a line per change).
- The admin page's TREC qrels of a project holding ids that TREC cannot hold (made by an
  older goldset) says which ids, on the page: built when the download started, the refusal
  reached the browser only as Streamlit's "Failed to generate file for download".
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from starlette.applications import Starlette
from streamlit.testing.v1 import AppTest
from test_hosts import Recorder, call, status

from goldset.eval import validation
from goldset.labeler import hosts, importing, session_cookie
from goldset.labeler.auth import hash_password
from goldset.labeler.cli import cli
from goldset.labeler.launch import DB_ENV
from goldset.labeler.store import Store


def header(messages: list[dict], name: bytes) -> list[bytes]:
    """The values of header ``name`` in an ASGI answer's start message."""
    return [value for key, value in messages[0].get("headers", []) if key == name]


@pytest.mark.parametrize("path", ["/", "/admin", "/_stcore/health", "/component/x/index.html"])
def test_every_answer_forbids_other_origins_to_frame_it(path):
    sent = call(hosts.HostGuard(Recorder()), "http", path, {"host": "127.0.0.1:8501"})
    assert status(sent) == 200
    assert header(sent, b"x-frame-options") == [b"SAMEORIGIN"]
    assert header(sent, b"content-security-policy") == [b"frame-ancestors 'self'"]


# --- the session-cookie endpoint ------------------------------------------------------------------

MIB = 1 << 20


def test_the_cookie_endpoint_reads_no_more_of_a_body_than_a_ticket():
    endpoint = Starlette(routes=session_cookie.routes())
    host = "127.0.0.1:8501"
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "path": session_cookie.CLAIM_PATH,
        "raw_path": session_cookie.CLAIM_PATH.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", host.encode()), (b"origin", f"http://{host}".encode())],
    }
    chunks = 64  # a 64 MiB body, a MiB a message
    received: list[int] = []
    sent: list[dict] = []

    async def receive() -> dict:
        received.append(1)
        more = len(received) < chunks
        return {"type": "http.request", "body": b"A" * MIB, "more_body": more}

    async def send(message: dict) -> None:
        sent.append(message)

    with ThreadPoolExecutor(1) as thread:  # a loop of its own, as test_hosts.call runs one
        thread.submit(asyncio.run, endpoint(scope, receive, send)).result()
    assert status(sent) == 403  # no ticket is a megabyte long
    assert len(received) == 1  # the first megabyte told; the other 63 were never read


# --- the CLI's refusals ---------------------------------------------------------------------------


def refused(*args: str) -> str:
    """The one line ``goldset ARGS`` refuses with (exit 2, no traceback)."""
    result: Result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("Error: ") and "Traceback" not in result.output
    return lines[-1]


def test_a_prompt_template_that_is_not_utf8_is_refused_naming_it(demo_db, tmp_path):
    template = tmp_path / "prompt.md"
    template.write_bytes(b"Grade \xff on $scale.")
    line = refused(
        "judge", "--db", str(demo_db), "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
        "--prompt", str(template),
    )  # fmt: skip
    assert str(template) in line and "UTF-8" in line


def test_a_judge_name_with_a_control_character_is_refused_before_any_call(demo_db):
    # It would be printed to the terminal (an escape sequence) and kept as an annotator's name.
    line = refused(
        "judge", "--db", str(demo_db), "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
        "--name", "x\x1b[2Jy", "--retries", "0",
    )  # fmt: skip
    assert "control character" in line


def test_a_user_name_the_rules_refuse_is_bad_input(demo_db):
    line = refused("user", "add", "ana\u2028", "--password", "long enough", "--db", str(demo_db))
    assert "invalid user name" in line
    with Store(demo_db) as store:
        assert store.annotators() == []


@pytest.mark.parametrize("command", [["user", "add", "ana"], ["user", "passwd", "root"]])
def test_a_password_of_bytes_that_are_not_utf8_is_bad_input(demo_db, command):
    # A terminal in Latin-1 gives b"pass\xe9word"; Python's argv holds it as a lone surrogate.
    with Store(demo_db) as store:
        store.add_annotator("root", role="admin", password_hash=hash_password("root-secret"))
    line = refused(*command, "--password", "pass\udce9word", "--db", str(demo_db))
    assert "UTF-8" in line
    with Store(demo_db) as store:
        assert [user["name"] for user in store.annotators()] == ["root"]


def test_an_output_in_a_folder_that_does_not_exist_is_refused(demo_db, tmp_path):
    missing = tmp_path / "no such folder"
    assert str(missing) in refused("export", "--db", str(demo_db), "--out", str(missing / "g"))
    run = tmp_path / "run.trec"
    run.write_text("q01 Q0 d1 1 1.0 r\n")
    per_query = str(missing / "per-query.jsonl")
    line = refused("eval", "--db", str(demo_db), "--run", str(run), "--per-query", per_query)
    assert per_query in line


@pytest.mark.parametrize("command", [["agreement"], ["calibrate", "--judge", "m"]])
def test_a_bootstrap_count_beyond_memory_is_refused_before_any_work(demo_db, command):
    line = refused(*command, "--db", str(demo_db), "--bootstrap", "99999999999")
    assert "--bootstrap" in line


def compare_args(cranfield_dir: Path, *options: str) -> list[str]:
    runs = cranfield_dir / "runs"
    return [
        "compare", "--golden", str(cranfield_dir / "qrels.tsv"),
        "--baseline", str(runs / "bm25.trec"), "--candidate", str(runs / "tfidf-title.trec"),
        *options,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-miss-rise", "nan"),  # every comparison with nan is false: no rule could fail
        ("--max-mrr-drop", "-1"),  # a negative allowance reads as "must improve by 1"
        ("--max-slice-drop", "inf"),
    ],
)
def test_a_gate_allowance_that_is_no_number_of_points_is_refused(cranfield_dir, option, value):
    # Exit 1 would read as a failed gate in CI, not as a refused command.
    line = refused(*compare_args(cranfield_dir, "--gate", option, value))
    assert option in line


def test_a_cutoff_past_any_ranking_is_refused_not_an_overflow(cranfield_dir):
    runs = cranfield_dir / "runs"
    line = refused(
        "eval", "--golden", str(cranfield_dir / "qrels.tsv"), "--run", str(runs / "bm25.trec"),
        "-m", "mrr@99999999999999999999",
    )  # fmt: skip
    assert "--metric" in line and "cutoff" in line


@pytest.mark.parametrize(
    "options",
    [
        ["--queries", "10", "--docs-per-query", "inf", "--seconds", "1", "--rate", "1"],
        ["--queries", "10", "--docs-per-query", "3", "--seconds", "nan", "--rate", "1"],
        ["--queries", "10", "--docs-per-query", "3", "--seconds", "1", "--rate", "inf"],
    ],
)
def test_a_cost_of_infinite_or_unknown_figures_is_refused(options):
    assert "not a finite number" in refused("cost", *options)


def test_eval_refuses_a_score_floor_that_is_not_a_number(cranfield_dir):
    runs = cranfield_dir / "runs"
    line = refused(
        "eval", "--golden", str(cranfield_dir / "qrels.tsv"), "--run", str(runs / "bm25.trec"),
        "--abstain-below", "nan",
    )  # fmt: skip
    assert "--abstain-below" in line


def test_who_changes_the_protocol_cannot_hold_a_line_break(tmp_path):
    # configure prints its change log a line per change: a line break would forge one.
    db = tmp_path / "p.db"
    line = refused("configure", "--db", str(db), "--depth", "3", "--by", "ana\n2026 by root")
    assert "control character" in line
    assert not db.exists()  # a refused configure leaves no project behind


# --- the admin page's qrels of a project holding ids that TREC cannot hold -----------------------

ADMIN_PAGE = "../labeler/views/admin.py"
DASHBOARD_PAGE = "../labeler/views/dashboard.py"
SPACED = {"query_id": "legacy one", "query": "q", "status": "done", "judgments": {"d 1": 1}}
PLAIN = {"query_id": "plain", "query": "q", "status": "done", "judgments": {"d2": 1}}


def admin_project(path: Path, records: list[dict], monkeypatch) -> Path:
    """A project with admin ``root`` and ``records``, made under the id rule of before (no
    control character only), as an older goldset made it; the app opens it."""
    with monkeypatch.context() as old_rules:
        old_rules.setattr(validation, "id_character", validation.control_character)
        old_rules.setattr(importing, "id_character", validation.control_character)
        with Store(path) as store:
            store.import_records(records, "legacy.jsonl")
            store.add_annotator("root", role="admin", password_hash=hash_password("root-secret"))
    monkeypatch.setenv(DB_ENV, str(path))
    return path


def admin_clicks_qrels(page: str) -> AppTest:
    """The admin or dashboard ``page``, signed in as ``root``, once "TREC qrels" is clicked."""
    at = AppTest.from_file(page, default_timeout=60)
    at.session_state["annotator"] = "root"
    at.run()
    next(button for button in at.button if button.label == "TREC qrels").click().run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("page", [ADMIN_PAGE, DASHBOARD_PAGE])
def test_the_admin_is_told_which_ids_keep_the_qrels_from_being_exported(
    tmp_path, monkeypatch, page
):
    admin_project(tmp_path / "legacy.db", [SPACED, PLAIN], monkeypatch)
    at = admin_clicks_qrels(page)
    assert [error.value for error in at.error] == [
        "The golden set cannot be exported as TREC qrels."
    ]
    [detail] = [text.value for text in at.text if "TREC qrels" in text.value]
    assert "'legacy one'" in detail and "'d 1'" in detail and "jsonl" in detail
    assert not [button for button in at.get("download_button") if "qrels" in button.proto.label]


@pytest.mark.parametrize("page", [ADMIN_PAGE, DASHBOARD_PAGE])
def test_the_admin_downloads_the_qrels_of_a_project_whose_ids_fit(tmp_path, monkeypatch, page):
    admin_project(tmp_path / "plain.db", [PLAIN], monkeypatch)
    at = admin_clicks_qrels(page)
    assert not at.error
    labels = [button.proto.label for button in at.get("download_button")]
    assert "Download golden.qrels" in labels
