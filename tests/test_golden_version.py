"""The golden set's version is pinned: run histories are keyed by it, so a change of hashing
would silently split every history into "before" and "after". Change these strings only
together with a migration of the recorded runs."""

from goldset.eval.readers import golden_from_records, read_golden

SMALL_SET = [
    {
        "query_id": "q1",
        "slice": "head",
        "status": "done",
        "answerable": True,
        "mode": "first_hit",
        "judgments": {"d1": 0, "d2": 1},
    },
    {
        "query_id": "q2",
        "status": "done",
        "answerable": False,
        "mode": "full",
        "judgments": {"d3": 0},
    },
    {"query_id": "q3", "status": "skipped", "judgments": {}},
    {
        "query_id": "q4",
        "slice": "tail",
        "status": "done",
        "answerable": True,
        "mode": "full",
        "judgments": {"d1": 3, "d4": 2},
    },
]


def test_golden_version_of_a_small_fixed_set_is_pinned():
    assert golden_from_records(SMALL_SET).version == "cb831af430b6d9b8"


def test_golden_version_of_the_cranfield_qrels_is_pinned(cranfield_dir):
    assert read_golden(cranfield_dir / "qrels.tsv").version == "5aa1daaa90de68ef"
