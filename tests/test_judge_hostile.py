"""A hostile or broken judge endpoint: the key goes nowhere else, and every failure is that
pair's recorded outcome, never a traceback.

A redirect to another host (the key must not follow), a byte every 0.5 s past the deadline,
200 MB, a truncated body, an SSH banner instead of HTTP, a 70 KiB header, token counts of
10^30 and -5, a key given twice, a grade of 5,000 digits, a store that refuses the record; and
a server variable (SERVER_ONLY_SECRET) named as the key from the command line.
"""

from __future__ import annotations

import itertools
import json
import sqlite3

import pytest
from click.testing import CliRunner
from helpers.fake_judge import FakeJudge, Reply, completion, http_head
from test_judges import JUDGE, goldset_judge, run_judge, tasks

from goldset.labeler import judges
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

BODY = completion('{"grade": 1, "reason": "on topic"}', {"prompt_tokens": 5})


@pytest.fixture
def pairs_store(make_store) -> Store:
    """Two queries of two docs: four pairs for a judge."""
    return make_store(tasks(2, 2))


def only_call(store) -> dict:
    """The one call the judge made, as the store keeps it."""
    calls = store.judge_calls_frame(JUDGE)
    assert len(calls) == 1
    return calls.iloc[0].to_dict()


def details(store) -> list[str]:
    with store._reading():
        return [row[0] for row in store.conn.execute("SELECT detail FROM judge_calls ORDER BY id")]


def wire(*pieces: bytes, pause: float = 0.0) -> Reply:
    return Reply(wire=pieces, pause=pause)


def no_traceback(result) -> None:
    """The command ended as a command does: an exit code, never an escaped exception."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output


# --- the key goes to the named URL only ---------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_the_target_never_sees_the_key(tmp_path, status):
    with Store(tmp_path / "one.db") as store:
        store.import_records(tasks(1, 1))
        with FakeJudge() as elsewhere:
            location = f"{elsewhere.base_url}/chat/completions"
            redirect = Reply(status=status, raw=b"", headers={"Location": location})
            with FakeJudge(lambda body, n: redirect) as fake:
                summary = run_judge(store, fake, api_key="sk-secret", retries=0)
        assert elsewhere.headers == []  # nothing reached the other host, with or without key
        assert {headers["Authorization"] for headers in fake.headers} == {"Bearer sk-secret"}
        assert summary.labelled == 0 and summary.failed == {"unreachable": 1}
        assert store.machine_judgments_frame(JUDGE).empty
        assert details(store) == [f"HTTP {status}: redirected to {location}; not followed"]


def test_goldset_judge_refuses_a_server_variable_as_the_key_and_sends_nothing(
    pairs_store, monkeypatch
):
    monkeypatch.setenv("SERVER_ONLY_SECRET", "hunter2")
    with FakeJudge() as fake:
        result = goldset_judge(pairs_store, fake, "--api-key-env", "SERVER_ONLY_SECRET")
    assert result.exit_code == 2 and fake.requests == []
    assert result.output.startswith("Error: the API key may come only from GOLDSET_JUDGE_*")
    assert result.output.count("\n") == 1 and "hunter2" not in result.output
    no_traceback(result)


def test_a_variable_an_admin_allowed_from_the_cli_may_hold_the_key(pairs_store, monkeypatch):
    monkeypatch.setenv("TEAM_LLM_KEY", "sk-team")
    db = ["--db", str(pairs_store.path)]
    allowed = CliRunner().invoke(cli, ["judge-key-env", *db, "TEAM_LLM_KEY"])
    assert allowed.exit_code == 0 and pairs_store.judge_key_envs() == ["TEAM_LLM_KEY"]
    listed = CliRunner().invoke(cli, ["judge-key-env", *db])
    assert "allowed in this project: TEAM_LLM_KEY" in listed.output
    with FakeJudge() as fake:
        result = goldset_judge(pairs_store, fake, "--api-key-env", "TEAM_LLM_KEY", "--limit", "1")
    assert result.exit_code == 0 and fake.headers[0]["Authorization"] == "Bearer sk-team"
    removed = CliRunner().invoke(cli, ["judge-key-env", *db, "--remove", "TEAM_LLM_KEY"])
    assert removed.exit_code == 0 and pairs_store.judge_key_envs() == []
    with FakeJudge() as fake:
        refused = goldset_judge(pairs_store, fake, "--api-key-env", "TEAM_LLM_KEY")
    assert refused.exit_code == 2 and fake.requests == []


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A=B", ""])
def test_judge_key_env_refuses_what_cannot_name_a_variable(pairs_store, name):
    result = CliRunner().invoke(cli, ["judge-key-env", "--db", str(pairs_store.path), name])
    assert result.exit_code == 2 and "is not the name of an environment variable" in result.output
    assert pairs_store.judge_key_envs() == []


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("GOLDSET_JUDGE_API_KEY", True),
        ("GOLDSET_JUDGE_OPENROUTER", True),
        ("OPENAI_API_KEY", True),
        ("GOLDSET_JUDGE_", False),
        ("SERVER_ONLY_SECRET", False),
        ("AWS_SECRET_ACCESS_KEY", False),
        ("GOLDSET_DB", False),
    ],
)
def test_the_variables_a_key_may_come_from(name, allowed):
    assert judges.key_env_allowed(name) is allowed
    assert judges.key_env_allowed(name, ["SERVER_ONLY_SECRET"]) is (
        allowed or name == "SERVER_ONLY_SECRET"
    )


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://host/v1", "127.0.0.1:8080/v1", "", "http://h/v1\r\nX-A: b"],
)
def test_goldset_judge_refuses_a_base_url_that_is_not_http(pairs_store, url):
    result = CliRunner().invoke(
        cli, ["judge", "--db", str(pairs_store.path), "--base-url", url, "--model", "m"]
    )
    assert result.exit_code == 2 and "base URL must be http" in result.output
    no_traceback(result)


def test_a_key_that_would_break_the_header_is_refused_without_being_shown(pairs_store, monkeypatch):
    monkeypatch.setenv("GOLDSET_JUDGE_API_KEY", "sk-1\r\nX-Injected: yes")
    with FakeJudge() as fake:
        result = goldset_judge(pairs_store, fake)
    assert result.exit_code == 2 and fake.requests == []
    assert result.output == "Error: the API key holds a space or a control character\n"


# --- a deadline for the whole request, and a cap on the body ------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        # the body: all but 8 bytes at once, then a byte every 0.5 s (4 s in all)
        wire(
            http_head(Content_Length=len(BODY)) + BODY[:-8],
            *(bytes([byte]) for byte in BODY[-8:]),
            pause=0.5,
        ),
        # the headers: one line every 0.5 s
        wire(
            b"HTTP/1.1 200 OK\r\n",
            *[b"X-Slow: yes\r\n"] * 8,
            f"Content-Length: {len(BODY)}\r\n\r\n".encode() + BODY,
            pause=0.5,
        ),
    ],
    ids=["body", "headers"],
)
def test_a_server_trickling_past_the_deadline_is_a_timeout_not_a_label(pairs_store, reply):
    with FakeJudge(lambda body, n: reply) as fake:
        summary = run_judge(pairs_store, fake, concurrency=1, timeout=1.0, retries=0)
    assert summary.labelled == 0 and summary.failed == {"timeout": 1}
    assert summary.stopped == "timeout: no whole answer within 1 s"
    assert pairs_store.machine_judgments_frame(JUDGE).empty
    assert only_call(pairs_store)["outcome"] == "timeout"


MB200 = 200 * 1024 * 1024
PIECE = b" " * (64 * 1024)


@pytest.mark.parametrize("announced", [True, False], ids=["content-length", "until-close"])
def test_a_200_mb_answer_is_not_read_past_the_1_mib_cap(pairs_store, announced):
    head = http_head(Content_Length=MB200) if announced else http_head(Connection="close")
    pieces = itertools.chain(
        [head, b'{"choices": []'], itertools.repeat(PIECE, MB200 // len(PIECE))
    )
    with FakeJudge(lambda body, n: Reply(wire=pieces) if n == 1 else Reply()) as fake:
        summary = run_judge(pairs_store, fake, concurrency=1, retries=0)
        # What the server could hand over before the client closed: the cap and the
        # sockets' buffers, not 200 MB.
        assert fake.bytes_sent < 32 * 1024 * 1024
    assert summary.failures[0]["outcome"] == "malformed"
    assert "1 MiB cap" in summary.failures[0]["detail"]
    assert summary.labelled == 3  # the other pairs were asked and labelled


# --- whatever http.client raises is the pair's outcome ------------------------------------------


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (wire(http_head(Content_Length=500) + BODY[:40]), "IncompleteRead"),
        (wire(b"SSH-2.0-OpenSSH_9.6p1 Debian-4\r\n"), "BadStatusLine"),
        (
            wire(http_head(X_Padding="a" * 70 * 1024, Content_Length=len(BODY)) + BODY),
            "LineTooLong",
        ),
        (
            wire(http_head(Transfer_Encoding="chunked") + b"zz\r\n" + BODY),
            "IncompleteRead",
        ),
    ],
    ids=["truncated-body", "ssh-banner", "70-kib-header", "bad-chunk-size"],
)
def test_a_broken_http_answer_is_recorded_as_unreachable_with_one_line(pairs_store, reply, problem):
    with FakeJudge(lambda body, n: reply) as fake:
        summary = run_judge(pairs_store, fake, concurrency=1, retries=1)
    assert summary.labelled == 0 and summary.failed == {"unreachable": 1}
    assert summary.stopped.startswith("unreachable: not a valid HTTP answer")
    assert len(details(pairs_store)) == 2  # the retry met the same
    for detail in details(pairs_store):
        assert detail.startswith(f"not a valid HTTP answer ({problem}")
        assert "\n" not in detail and len(detail) <= 200
    assert pairs_store.machine_judgments_frame(JUDGE).empty


def test_goldset_judge_on_an_ssh_port_ends_with_a_summary_not_a_traceback(pairs_store):
    with FakeJudge(lambda body, n: wire(b"SSH-2.0-OpenSSH_9.6\r\n")) as fake:
        result = goldset_judge(pairs_store, fake, "--retries", "0", "--concurrency", "1")
    no_traceback(result)
    assert result.exit_code == 1 and "0 of 4 pairs labelled; failed: unreachable 1" in result.output
    assert "q0 d0-0: unreachable: not a valid HTTP answer (BadStatusLine" in result.output


# --- the answer, parsed strictly ----------------------------------------------------------------


def test_an_answer_that_names_a_key_twice_is_malformed(pairs_store):
    with FakeJudge(lambda body, n: Reply('{"grade":0,"reason":"x","grade":3}')) as fake:
        summary = run_judge(pairs_store, fake)
    assert summary.failed == {"malformed": 4} and pairs_store.machine_judgments_frame(JUDGE).empty
    assert set(details(pairs_store)) == {
        'the key \'grade\' is given twice: \'{"grade":0,"reason":"x","grade":3}\''
    }


def test_a_response_envelope_that_names_a_key_twice_is_malformed(pairs_store):
    choice = '{"message": {"content": "{\\"grade\\": 1, \\"reason\\": \\"x\\"}"}}'
    raw = f'{{"choices": [{choice}], "choices": []}}'.encode()
    with FakeJudge(lambda body, n: Reply(raw=raw)) as fake:
        summary = run_judge(pairs_store, fake)
    assert summary.failed == {"malformed": 4}
    assert set(details(pairs_store)) == {"not a chat completion: the key 'choices' is given twice"}


def test_a_grade_of_5000_digits_is_that_pairs_failure_and_the_run_goes_on(pairs_store):
    huge = '{"grade": ' + "1" * 5000 + ', "reason": "x"}'
    with FakeJudge(
        lambda body, n: Reply(huge if n == 2 else '{"grade": 1, "reason": "y"}')
    ) as fake:
        summary = run_judge(pairs_store, fake, concurrency=1)
    assert summary.labelled == 3 and summary.stopped is None
    (failure,) = summary.failures
    assert (failure["query_id"], failure["doc_id"], failure["outcome"]) == (
        "q0",
        "d0-1",
        "malformed",
    )
    assert failure["detail"].startswith("a number of more than 4,300 digits")
    assert len(failure["detail"]) <= 200


def test_goldset_judge_names_the_pair_of_a_5000_digit_grade(pairs_store):
    huge = '{"grade": ' + "7" * 5000 + ', "reason": "x"}'
    with FakeJudge(lambda body, n: Reply(huge)) as fake:
        result = goldset_judge(pairs_store, fake, "--concurrency", "1", "--json")
    no_traceback(result)
    report = json.loads(result.output)
    assert report["failed"] == {"malformed": 4} and report["stopped"] is None
    assert [(f["query_id"], f["doc_id"]) for f in report["failures"]] == [
        ("q0", "d0-0"),
        ("q0", "d0-1"),
        ("q1", "d1-0"),
        ("q1", "d1-1"),
    ]


def test_a_reason_with_a_lone_surrogate_is_malformed_not_a_store_error(pairs_store):
    with FakeJudge(lambda body, n: Reply('{"grade": 1, "reason": "\\ud800"}')) as fake:
        summary = run_judge(pairs_store, fake)
    assert summary.failed == {"malformed": 4} and summary.stopped is None


# --- token counts that are not counts -----------------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 10**30, "completion_tokens": 10**30},
        {"prompt_tokens": -5, "completion_tokens": -1},
        {"prompt_tokens": 2**63, "completion_tokens": -(2**63)},
    ],
    ids=["10^30", "negative", "past-int64"],
)
def test_token_counts_that_are_not_counts_are_stored_as_unknown(pairs_store, usage):
    with FakeJudge(lambda body, n: Reply(usage=usage)) as fake:
        summary = run_judge(pairs_store, fake)
    assert summary.labelled == 4 and summary.prompt_tokens == 0
    calls = pairs_store.judge_calls_frame(JUDGE)
    assert calls["prompt_tokens"].isna().all() and calls["completion_tokens"].isna().all()
    figures = pairs_store.machine_judges()[0]
    assert (figures["prompt_tokens"], figures["completion_tokens"]) == (0, 0)


def test_calibrate_prices_a_judge_whose_server_sent_negative_token_counts(pairs_store):
    for q in range(2):
        for d in range(2):
            pairs_store.judge(f"q{q}", f"d{q}-{d}", int(d == 0), "ana", seconds=2.0, mode="full")
    with FakeJudge(lambda body, n: Reply(usage={"prompt_tokens": -7})) as fake:
        goldset_judge(pairs_store, fake, "--name", "fake")
    result = CliRunner().invoke(
        cli,
        [
            "calibrate",
            "--db",
            str(pairs_store.path),
            "--price-in",
            "1",
            "--bootstrap",
            "0",
            "--json",
        ],
    )
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["cost"]["prompt_tokens"] == 0


def test_the_judges_figures_skip_counts_an_older_goldset_kept_and_never_overflow(pairs_store):
    context = {"judge": JUDGE, "model": "m", "prompt_sha256": "h"}
    pair = judges.Pair("q0", "d0-0", "question 0", "", "")
    calls = [
        judges.Call("retryable", 1.0, prompt_tokens=-5, completion_tokens=2**62),
        judges.Call("retryable", 1.0, prompt_tokens=3, completion_tokens=2**62),
    ]
    pairs_store.record_judge_calls(judges.call_rows(pair, calls, context))
    figures = pairs_store.machine_judges()[0]
    assert figures["prompt_tokens"] == 3 and figures["completion_tokens"] >= 2**62


# --- a store that refuses the record ------------------------------------------------------------


def test_a_record_the_store_refuses_is_kept_as_malformed_and_the_run_goes_on(pairs_store):
    refused = []

    def record(pair, calls):
        if calls[-1].outcome == "ok" and not refused:
            refused.append(pair)
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        pairs_store.record_judge_calls(
            judges.call_rows(pair, calls, {"judge": JUDGE, "model": "m", "prompt_sha256": "h"})
        )

    prompt = judges.Prompt.from_template(None, 3)
    pairs = [judges.Pair(**row) for row in pairs_store.machine_pairs(JUDGE)]
    with FakeJudge() as fake:
        endpoint = judges.Endpoint(fake.base_url, "m")
        summary = judges.judge_pairs(pairs, endpoint, prompt, record, judge=JUDGE, concurrency=1)
    assert summary.labelled == 3 and summary.failed == {"malformed": 1} and not summary.stopped
    assert summary.failures[0]["detail"].startswith("not stored (OverflowError: Python int")
    assert len(pairs_store.judge_calls_frame(JUDGE)) == 4


def test_a_store_that_refuses_every_record_stops_the_run_with_a_summary(pairs_store):
    def record(pair, calls):
        raise sqlite3.OperationalError("database or disk is full")

    prompt = judges.Prompt.from_template(None, 3)
    pairs = [judges.Pair(**row) for row in pairs_store.machine_pairs(JUDGE)]
    with FakeJudge() as fake:
        endpoint = judges.Endpoint(fake.base_url, "m")
        summary = judges.judge_pairs(
            pairs,
            endpoint,
            prompt,
            record,
            judge=JUDGE,
            concurrency=1,
            refusals=Store.RECORD_FAILURES,
        )
    assert summary.stopped == (
        "the project could not record a pair: OperationalError: database or disk is full"
    )
    assert len(fake.requests) == 1  # no pair sent after the first refusal
