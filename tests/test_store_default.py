"""The bundled demo set and the default project created from it on first use."""

import json

from goldset.labeler import store as store_module
from goldset.labeler.store import DEMO_TASKS, Store

WORKED_EXAMPLE = [
    "parse ISO-8601 duration",
    "retry with jitter helper",
    "deprecated v1 auth client",
    "stream upload large file",
]


def demo_records() -> list[dict]:
    return [json.loads(line) for line in DEMO_TASKS.read_text(encoding="utf-8").splitlines()]


def test_demo_starts_with_the_worked_example_each_with_ten_candidates():
    records = demo_records()
    assert [r["query"] for r in records[:4]] == WORKED_EXAMPLE
    assert all(len(r["candidates"]) == 10 for r in records)


def test_demo_has_forty_more_queries_over_two_slices():
    records = demo_records()
    assert len(records) >= 44
    assert {r["slice"] for r in records} == {"head", "tail"}


def test_worked_example_answers_sit_at_ranks_one_three_none_and_two():
    records = demo_records()
    answers = [
        "cirrus/timeutil.py#parse_duration",
        "cirrus/http/retry.py#backoff",
        "cirrus/auth/v1.py#LegacyAuthClient",
        "cirrus/storage/upload.py#upload_stream",
    ]
    ranks = [
        next((i for i, c in enumerate(r["candidates"], 1) if c["doc_id"] == answer), None)
        for r, answer in zip(records[:4], answers, strict=True)
    ]
    assert ranks == [1, 3, None, 2]


def test_default_project_is_created_from_the_demo_on_first_use_only(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "DEFAULT_DB", tmp_path / "goldset.db")
    with Store.open_default() as store:
        assert store.status()["queries"] == len(demo_records())
        store.judge("q01", "cirrus/timeutil.py#parse_duration", 1, "ana")
    with Store.open_default() as store:
        assert store.query_state("q01", "ana")["complete"]
        assert store.status()["queries"] == len(demo_records())
