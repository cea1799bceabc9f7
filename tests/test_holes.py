"""A second system without losing the first: labelling a new run's holes adds work and never
takes a finished first-hit query out of the golden set; the first run's figures stay exact
while the holes are pending, and both runs' are exact once they are judged (issue 26)."""

import json

import pytest

from goldset.eval.exactness import exactness_report
from goldset.eval.metrics import per_query_values, rank_run
from goldset.eval.report import slice_rows
from goldset.labeler import live
from goldset.labeler.store import Store

SLICES = ("api", "how-to", "errors")
DOCS = 12  # per query: q{n}-d1 .. q{n}-d12, the first run ranks them in that order
METRICS = ("mrr@10", "hit@10")


def answer_key() -> dict[str, str | None]:
    """Each query's relevant doc (None: unanswerable), at the first run's rank 1-4, or below
    its top 10 (a miss) for two queries."""
    key = {}
    for n in range(18):
        rank = (1, 2, 3, 4, 11, 3)[n % 6]
        key[f"q{n:02d}"] = f"q{n:02d}-d{rank}"
    key["q05"] = None  # unanswerable
    return key


def write_project_files(folder) -> tuple[str, str, str, str]:
    """A corpus, 18 queries in three slices, the first run (bm25) and a worse second run
    (reversed top 12; the same ranking on the api slice)."""
    corpus = folder / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"_id": f"q{n:02d}-d{d}", "title": f"doc {d}", "text": "text"}) + "\n"
            for n in range(18)
            for d in range(1, DOCS + 1)
        )
    )
    queries = folder / "queries.jsonl"
    queries.write_text(
        "".join(
            json.dumps({"_id": f"q{n:02d}", "text": f"question {n}", "slice": SLICES[n % 3]}) + "\n"
            for n in range(18)
        )
    )
    first, second = folder / "bm25.trec", folder / "worse.trec"
    first.write_text(
        "".join(
            f"q{n:02d} Q0 q{n:02d}-d{d} {d} {100 - d} bm25\n"
            for n in range(18)
            for d in range(1, DOCS + 1)
        )
    )
    lines = []
    for n in range(18):
        order = range(1, DOCS + 1) if SLICES[n % 3] == "api" else range(DOCS, 0, -1)
        lines += [
            f"q{n:02d} Q0 q{n:02d}-d{d} {rank} {100 - rank} worse\n"
            for rank, d in enumerate(order, start=1)
        ]
    second.write_text("".join(lines))
    return str(corpus), str(queries), str(first), str(second)


def label_everything(store: Store, annotator: str, key: dict) -> int:
    """Label as an annotator does, first-hit, query after query until the queue is empty:
    the next candidate each time, then a verdict where none is relevant. Returns the
    number of judgements."""
    judged = 0
    for _ in range(1000):  # a bound, never reached: the queue empties
        query_id = store.next_query(annotator)
        if query_id is None:
            return judged
        while (candidate := store.next_candidate(query_id, annotator)) is not None:
            store.judge(
                query_id, candidate["doc_id"], int(candidate["doc_id"] == key[query_id]), annotator
            )
            judged += 1
        if store.query_state(query_id, annotator)["needs_verdict"]:
            verdict = "miss" if key[query_id] else "unanswerable"
            store.mark(query_id, verdict, annotator)
    raise AssertionError("the queue never emptied")


def figures(store: Store, run: str) -> dict:
    """The run's MRR@10, hit@10 and exact@10 over the golden set, per slice and overall."""
    golden = live.golden_set(store)
    ranking = rank_run(golden, live.project_run(store, run, depth=None), METRICS)
    per_query = per_query_values(ranking, METRICS)
    report = exactness_report(ranking, per_query, 10, slice_rows(golden, per_query.query_ids))
    return {"all": report["all"], **report["slices"]}


def golden_set(store: Store) -> tuple[list, dict]:
    """The golden set as eval reads it: done queries, and the grade of each judged pair."""
    queries, judgments = store.golden_frames()
    done = queries[queries["status"] == "done"]
    grades = judgments.set_index(["query_id", "doc_id"])["grade"].to_dict()
    return done[["query_id", "answerable"]].values.tolist(), grades


def kept(before: tuple[list, dict], after: tuple[list, dict]) -> bool:
    """Whether the golden set ``after`` keeps every done query and judgement of ``before``,
    and adds none (a verdict, U or M, does not grade the docs a new run adds: they are holes)."""
    return after == before


def offered(store: Store, annotator: str) -> set[str]:
    """Every query the queue offers the annotator, once round."""
    first = store.next_query(annotator)
    seen, query_id = set(), first
    while query_id is not None and query_id not in seen:
        seen.add(query_id)
        query_id = store.next_query(annotator, after=query_id)
    return seen


@pytest.fixture
def labelled(tmp_path):
    """The project with the first run labelled first-hit, and the second run's file."""
    corpus, queries, first, second = write_project_files(tmp_path)
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [first], depth=10)
        label_everything(store, "ana", answer_key())
        yield store, second


def test_a_new_runs_holes_keep_the_golden_set_and_the_first_runs_figures(labelled):
    store, second = labelled
    golden_before, bm25_before = golden_set(store), figures(store, "bm25")
    assert bm25_before["all"]["share"] == 1.0 and len(golden_before[0]) == 18

    preview = store.pool_preview([second], 10)
    # 12 reversed queries x 2 docs below bm25's top 10; 14 found queries, 6 in the api slice
    # ranked as bm25 ranks them (exact already), 8 reversed ones now with holes, and the 4
    # verdicts (all reversed), whose new docs their verdict did not cover
    found = [q for q, doc in answer_key().items() if doc and not doc.endswith("-d11")]
    assert preview["documents"] == 24 and preview["queries"] == 12
    assert (preview["new_work"], preview["already_exact"]) == (12, len(found) - 8)
    counts = store.pool(None, None, [second], 10)
    assert counts["candidates_added"] == preview["documents"]

    # while the holes are pending: the golden set and the first run's figures do not move
    assert kept(golden_before, golden_set(store))
    assert figures(store, "bm25") == bm25_before
    holed = {q for q in answer_key() if store.query_state(q)["holes"]}
    assert len(holed) == preview["new_work"]
    assert offered(store, "ana") == holed  # the queue offers the holed queries, only them
    worse = figures(store, "worse")
    assert worse["all"]["share"] < 1.0 and worse["api"]["share"] == 1.0

    label_everything(store, "ana", answer_key())
    assert not any(store.query_state(q)["holes"] for q in answer_key())
    assert figures(store, "bm25") == bm25_before
    worse = figures(store, "worse")
    assert all(summary["share"] == 1.0 for summary in worse.values())
    exact = worse["all"]["figures"]["mrr@10"]
    assert exact["exact"] == exact["lower_bound"]  # every query exact: one figure


def test_the_label_page_keeps_an_annotator_on_a_query_until_its_holes_are_judged(labelled):
    store, second = labelled
    store.pool(None, None, [second], 10)
    query_id = store.next_query("ana")
    state = store.query_state(query_id, "ana")
    assert state["status"] == "done" and state["holes"] and not state["complete"]
    candidate = store.next_candidate(query_id, "ana")
    assert candidate is not None and candidate["provenance"].get("worse")


def tied_tasks() -> list[dict]:
    """Queries whose stored candidate lists put a tie in ascending doc id order (as a system
    that kept its own order would); the relevant doc is the first of the tie."""
    return [
        {
            "query_id": f"t{n}",
            "query": f"question {n}",
            "slice": SLICES[n % 3],
            "candidates": [
                {"doc_id": f"t{n}-{name}", "title": name, "text": "text", "score": score}
                for name, score in (("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.0))
            ],
        }
        for n in range(6)
    ]


def test_pooling_the_same_run_again_with_ties_ordered_otherwise_demotes_nothing(tmp_path):
    records = tied_tasks()
    run = tmp_path / "bm25.trec"
    run.write_text(
        "".join(
            f"{record['query_id']} Q0 {c['doc_id']} {rank} {c['score']} bm25\n"
            for record in records
            for rank, c in enumerate(record["candidates"], start=1)
        )
    )
    with Store(tmp_path / "p.db") as store:
        store.import_records(records)
        key = {record["query_id"]: f"{record['query_id']}-b" for record in records}
        label_everything(store, "ana", key)
        before = golden_set(store)
        store.pool(None, None, [run], depth=10)  # trec_eval order: c before b (doc id desc)
        assert golden_set(store) == before
        assert all(store.query_state(q)["status"] == "done" for q in key)
        assert all(store.query_state(q)["holes"] == 1 for q in key)  # c, above the hit b


def test_goldset_eval_prints_exact_at_10_per_slice_and_the_lower_bound(labelled):
    from click.testing import CliRunner

    from goldset.labeler.cli import cli

    store, second = labelled
    store.pool(None, None, [second], 10)
    result = CliRunner().invoke(cli, ["eval", "--db", str(store.path), "--run", second])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("exact@10: queries"))
    table = {line.split()[0]: line.split()[1:] for line in lines[start + 2 : start + 6]}
    assert table["api"][:4] == ["100.0%", "6", "of", "6"]  # ranked as the first run
    # 17 answerable, the api ones exact; not the 3 misses (their verdict did not cover the
    # new run's docs: holes until judged)
    assert table["all"][:4] == ["35.3%", "6", "of", "17"] and "≥" in table["all"]


def test_a_done_query_with_holes_assigned_later_is_still_to_do(labelled):
    store, second = labelled
    store.pool(None, None, [second], 10)
    holed = sorted(
        q
        for q in answer_key()
        if store.query_state(q, "ana")["status"] == "done"
        and store.query_state(q, "ana").get("holes")
    )
    assert holed  # the reversed run left holes on done queries
    store.assign("ana", holed)
    # Dealt after the holes appeared, the assignment is open: the queue offers every one.
    assert store.assignment_counts()["ana"]["open"] == len(holed)
    assert offered(store, "ana") == set(holed)
