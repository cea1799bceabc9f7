"""A small team project with planted disagreements, shared by the team tests (store, CLI,
AppTest and browser): six queries over two slices, two annotators judging all six blind,
a reviewer and an admin.

The planted labels (first-hit mode; ``U``/``M`` = the verdict after four non-relevant docs):

=====  ===========  ===========  =========================================
query  ana          bob          what differs
=====  ===========  ===========  =========================================
q1     1            1            nothing
q2     0 1          1            first relevant rank 2 vs 1 (RR gap 0.5)
q3     0 0 0 0 U    0 0 0 0 M    unanswerable vs miss (RR gap 0)
q4     0 0 1        0 0 1        nothing
q5     0 0 0 1      1            first relevant rank 4 vs 1 (RR gap 0.75)
q6     0 0 0 0 M    0 0 0 0 M    nothing
=====  ===========  ===========  =========================================
"""

from __future__ import annotations

from pathlib import Path

from goldset.labeler.auth import hash_password
from goldset.labeler.store import Store

PASSWORD = "correct horse"
ANNOTATORS = ("ana", "bob")
USERS = {"ana": "annotator", "bob": "annotator", "rita": "reviewer", "alan": "admin"}
TASKS = [
    {
        "query_id": f"q{number}",
        "query": f"question {number}",
        "slice": "head" if number <= 3 else "tail",
        "candidates": [
            {"doc_id": f"q{number}-d{rank}", "title": f"doc {number}.{rank}", "text": "text"}
            for rank in range(1, 5)
        ],
    }
    for number in range(1, 7)
]
# Keys each annotator types, query by query (the label page's keys).
PLANTED_KEYS = {
    "ana": {"q1": "1", "q2": "01", "q3": "0000u", "q4": "001", "q5": "0001", "q6": "0000m"},
    "bob": {"q1": "1", "q2": "1", "q3": "0000m", "q4": "001", "q5": "1", "q6": "0000m"},
}
# What the plant gives (see the module docstring): the adjudication queue, most consequential
# first, and the figures worked out by hand.
PLANTED_QUEUE = ["q5", "q2", "q3"]
# Docs judged by both: 14; (ana, bob) relevant/not: (1,1) 2, (0,1) 2, (0,0) 10.
# p_o = 12/14, p_e = (2·4 + 12·10)/14² → kappa = 40/68.
PLANTED_KAPPA = 40 / 68
# Coincidences: o00 = 20, o11 = 4, o01 = o10 = 2; n = 28, n0 = 22, n1 = 6 →
# alpha = 1 − 27 · 4 / (2 · 22 · 6).
PLANTED_ALPHA = 1 - 27 * 4 / (2 * 22 * 6)
PLANTED_RANK_AGREEMENT = 4 / 6  # q1, q3 (none/none), q4, q6
PLANTED_VERDICT_AGREEMENT = 1 / 2  # q3 differs, q6 agrees


def team_project(path: Path, *, with_passwords: bool = True) -> Path:
    """Create the project at ``path``: the six queries and the four users (password
    ``PASSWORD`` unless ``with_passwords`` is false: hashing costs ~50 ms a user)."""
    with Store(path) as store:
        store.import_records(TASKS)
        for name, role in USERS.items():
            password_hash = hash_password(PASSWORD) if with_passwords else None
            store.add_annotator(name, role=role, password_hash=password_hash)
    return path


def type_keys(store: Store, annotator: str, query_id: str, keys: str) -> None:
    """Apply label-page keys through the store: digits judge the next candidate, u/m give
    the verdict."""
    for key in keys:
        if key in "um":
            store.mark(query_id, "unanswerable" if key == "u" else "miss", annotator)
        else:
            doc_id = store.next_candidate(query_id, annotator)["doc_id"]
            store.judge(query_id, doc_id, int(key), annotator)


def plant(store: Store) -> None:
    """Assign all six queries to both annotators and label them as planted."""
    for annotator, keys_by_query in PLANTED_KEYS.items():
        store.assign(annotator, list(keys_by_query))
        for query_id, keys in keys_by_query.items():
            type_keys(store, annotator, query_id, keys)
