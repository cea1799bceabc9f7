"""Hostile content in queries and documents is stored and exported verbatim: it is data."""

import json

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "![x](http://example.invalid/t.png)",
    "[a](javascript:alert(1))",
    "null\x00byte and \x00 another",
    "\u202eright-to-left override\u202c and \u200fRLM\u200e",
    "{{ template }} ${injection} '; DROP TABLE events; --",
]


def hostile_task(index: int, text: str) -> dict:
    return {
        "query_id": f"h{index}",
        "query": text,
        "slice": text,
        "candidates": [{"doc_id": f"doc{index}", "title": text, "text": text, "score": 1.0}],
    }


def test_hostile_text_is_stored_and_exported_verbatim(store, tmp_path):
    store.import_records([hostile_task(i, text) for i, text in enumerate(HOSTILE)])
    for i, text in enumerate(HOSTILE):
        store.judge(f"h{i}", f"doc{i}", 1, "ana")
        store.set_note(f"h{i}", "ana", text)
        candidate = store.candidates(f"h{i}")[0]
        assert candidate["title"] == candidate["text"] == text
    out = tmp_path / "golden.jsonl"
    store.write_jsonl(out)
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["query"] for r in records] == HOSTILE
    assert [r["slice"] for r in records] == HOSTILE
    assert [r["notes"] for r in records] == HOSTILE


def test_ten_megabytes_of_text_round_trips(store):
    big = ("goldset " * 1_310_720)[: 10 * 2**20]
    store.import_records([hostile_task(0, "big document")])
    store.import_records(
        [{"query_id": "big", "query": "big", "candidates": [{"doc_id": "big", "text": big}]}]
    )
    assert store.document("big")["text"] == big
    assert store.search("goldset")[0]["doc_id"] == "big"


def test_hostile_doc_id_and_query_id_are_kept_as_given(store):
    # Markup and letters of other scripts are kept; a control character (\x00, \t), whitespace
    # and an invisible format character (a right-to-left override) are refused in an id
    # (tests/test_malformed_catalogue.py).
    weird = "<b>q</b>\u05d0&amp;"
    store.import_records(
        [{"query_id": weird, "query": "q", "candidates": [{"doc_id": weird, "text": "t"}]}]
    )
    store.judge(weird, weird, 1, "ana")
    record = store.golden_records()[0]
    assert record["query_id"] == weird and record["judgments"] == {weird: 1}
