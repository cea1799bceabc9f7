"""Export → import into a fresh project → export gives the same records, for every state a
query can be in; and the labels an import replays are on nobody's undo stack."""

import json

import pytest

from goldset.labeler.store import Store


def tasks(count: int, prefix: str = "t") -> list[dict]:
    return [
        {
            "query_id": f"{prefix}{n}",
            "query": f"question {n}",
            "slice": "head" if n % 2 else "tail",
            "candidates": [
                {"doc_id": f"{prefix}{n}-d{rank}", "title": f"doc {rank}", "text": "text"}
                for rank in range(1, 5)
            ],
        }
        for n in range(1, count + 1)
    ]


def write_lines(path, lines) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def pool_two_runs(store: Store, folder) -> None:
    """Queries p1, p2 pooled from runs A and B, which disagree on their order."""
    corpus = write_lines(
        folder / "corpus.jsonl",
        [json.dumps({"_id": f"c{n}", "title": f"c {n}", "text": "text"}) for n in range(1, 7)],
    )
    queries = write_lines(
        folder / "queries.jsonl",
        [json.dumps({"_id": f"p{n}", "text": f"pooled {n}"}) for n in (1, 2)],
    )
    run_a = write_lines(
        folder / "A.trec",
        [f"p{q} Q0 c{d} {r} {10 - r} A" for q in (1, 2) for r, d in enumerate((1, 2, 3), 1)],
    )
    run_b = write_lines(
        folder / "B.trec",
        [f"p{q} Q0 c{d} {r} {10 - r} B" for q in (1, 2) for r, d in enumerate((4, 5, 1), 1)],
    )
    store.pool(corpus, queries, [run_a, run_b], depth=3)


def judge_down(store: Store, query_id: str, grades, annotator: str = "ana", mode="first_hit"):
    for grade in grades:
        doc_id = store.next_candidate(query_id, annotator, mode=mode)["doc_id"]
        store.judge(query_id, doc_id, grade, annotator, seconds=2.5, mode=mode)


@pytest.fixture
def every_state(tmp_path):
    """One project holding a query in every state the store allows."""
    with Store(tmp_path / "original.db") as store:
        store.import_records(tasks(10))
        pool_two_runs(store, tmp_path)
        for name, role in (("ana", "annotator"), ("bob", "annotator"), ("rita", "reviewer")):
            store.add_annotator(name, role=role)
        # done with holes on a pool: run A's first doc is relevant, run B is not settled
        store.judge("p1", "c1", 1, "ana", seconds=3.0)
        # done on a pool, judged in the order that settles both runs
        judge_down(store, "p2", [0, 0, 1])
        judge_down(store, "t1", [0, 1])  # done, first relevant at 2
        judge_down(store, "t2", [0])
        store.mark("t2", "skip", "ana")  # skipped
        store.mark("t3", "unanswerable", "ana", seconds=4.0)  # unanswerable
        judge_down(store, "t4", [0, 0, 0, 0])
        store.attach("t4", "t9-d1", 1, "ana", seconds=7.0)  # a miss with the answer attached
        judge_down(store, "t5", [2, 0, 1, 3], mode="full")  # full mode, done
        judge_down(store, "t6", [1, 0], mode="full")  # full mode, half way: pending
        judge_down(store, "t7", [0, 0, 0, 1], annotator="ana")  # adjudicated: rank 4 wins
        judge_down(store, "t7", [1], annotator="bob")
        store.adjudicate(
            "t7", "rita", {"t7-d1": 0, "t7-d4": 1}, True, adopted="ana", note="d1 is off topic"
        )
        judge_down(store, "t8", [0, 1], annotator="ana")  # a disagreement not yet decided
        judge_down(store, "t8", [1], annotator="bob")
        store.set_note("t9", "bob", "ambiguous")  # a note only
        judge_down(store, "t10", [0, 0])  # in progress on an imported list
        yield store


def exported(store: Store, path) -> list[dict]:
    store.write_jsonl(path)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_state_survives_export_import_export(every_state, tmp_path):
    first = exported(every_state, tmp_path / "first.jsonl")
    with Store(tmp_path / "fresh.db") as fresh:
        counts = fresh.import_tasks(tmp_path / "first.jsonl")
        second = exported(fresh, tmp_path / "second.jsonl")
    assert counts["queries_added"] == len(first) == 12
    assert second == first


def test_the_round_trip_keeps_what_the_issue_saw_change(every_state, tmp_path):
    records = {record["query_id"]: record for record in exported(every_state, tmp_path / "g")}
    assert records["p1"]["status"] == "done" and records["p1"]["judgments"] == {"c1": 1}
    assert records["t7"]["first_relevant_rank"] == 4 and "labels" in records["t7"]
    with Store(tmp_path / "fresh.db") as fresh:
        fresh.import_tasks(tmp_path / "g")
        again = {record["query_id"]: record for record in fresh.golden_records()}
        assert fresh.decision("t7").adopted == "ana"
        fresh_holes = fresh.query_state("p1")["holes"]
    assert again["p1"]["status"] == "done"
    assert fresh_holes == 2  # run B's c4 and c5, above its first relevant doc, still to judge
    assert again["t7"]["first_relevant_rank"] == 4
    assert again["t7"]["labels"]["ana"]["first_relevant_rank"] == 4
    assert again["t6"]["status"] == "pending" and again["t6"]["mode"] == "full"


def test_records_that_need_no_candidate_list_carry_none(every_state, tmp_path):
    records = {record["query_id"]: record for record in exported(every_state, tmp_path / "g")}
    without = {query_id for query_id, record in records.items() if "pool" not in record}
    assert {"t1", "t3", "t4", "t5", "t9"} <= without  # done top-down, or nothing judged
    assert records["p1"]["pool"]["runs"] == {"A": ["c1", "c2", "c3"], "B": ["c4", "c5", "c1"]}


def test_imported_labels_are_on_nobodys_undo_stack(tmp_path):
    record = {
        "query_id": "q1",
        "query": "x",
        "status": "done",
        "answerable": True,
        "judgments": {"d1": 0, "d2": 1},
        "annotators": ["ana"],
    }
    with Store(tmp_path / "p.db") as store:
        store.import_records([record])
        assert store.undo("ana") is None
        assert store.labels("q1", "ana") == {"d1": 0, "d2": 1}
        store.import_records(tasks(1))
        store.judge("t1", "t1-d1", 1, "ana")
        assert store.undo("ana")["query_id"] == "t1"  # her own press, not the imported ones
        assert store.undo("ana") is None
        assert store.query_state("q1", "ana")["status"] == "done"


def test_a_malformed_pool_is_refused_with_its_line(tmp_path):
    record = {
        "query_id": "q1",
        "query": "x",
        "status": "pending",
        "judgments": {"d1": 0},
        "pool": {"order": ["d1", "d1"], "runs": {}},
    }
    with Store(tmp_path / "p.db") as store:
        with pytest.raises(ValueError, match=r"<records>:1: field 'pool.order'"):
            store.import_records([record])
        assert not store.has_queries()


def projections(store: Store) -> dict:
    tables = {
        "labels": "SELECT * FROM labels ORDER BY 1, 2, 3",
        "query_state": "SELECT * FROM query_state ORDER BY 1, 2",
        "progress": "SELECT * FROM progress WHERE n != 0 ORDER BY 1, 2, 3",
        "queries": "SELECT query_id, status, answerable FROM queries ORDER BY 1",
    }
    return {name: store.conn.execute(sql).fetchall() for name, sql in tables.items()}


def test_an_imported_golden_set_has_the_projections_its_log_gives(every_state, tmp_path):
    every_state.write_jsonl(tmp_path / "g.jsonl")
    with Store(tmp_path / "fresh.db") as fresh:
        fresh.import_tasks(tmp_path / "g.jsonl")
        imported = projections(fresh)
        fresh.rebuild_projections()
        assert projections(fresh) == imported
