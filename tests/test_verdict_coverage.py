"""A verdict covers the candidates it saw: the documents a later pool adds to a query closed
with "miss" or "unanswerable" are its holes (work in the queue), not zeros — the query stays
done while they are pending, and the new run's figures there are exact only once they are
judged (issue 26)."""

import json

import pytest
import streamlit as st
from test_app_label import TASKS, heading, open_app, press

from goldset.eval.exactness import exact_queries
from goldset.eval.metrics import per_query_values, rank_run
from goldset.labeler import live
from goldset.labeler.store import Store

METRICS = ("mrr@10", "hit@10")
QUERIES = ("miss", "unanswerable", "hit")
OLD = ("d1", "d2", "d3")  # the first run's top 3 of each query
NEW = ("d6", "d5", "d4")  # the second run's top 3: documents not in the pool yet


def write_lines(path, lines) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def run_file(folder, name: str, docs) -> str:
    """A TREC run ranking ``docs`` in this order on every query."""
    return write_lines(
        folder / f"{name}.trec",
        [f"{q} Q0 {q}-{d} {r} {10 - r} {name}" for q in QUERIES for r, d in enumerate(docs, 1)],
    )


@pytest.fixture
def closed(tmp_path):
    """Three queries pooled from a first run, labelled by ana: "miss" (one doc judged 0, then
    M), "unanswerable" (U at once) and "hit" (its first doc relevant); and the second run."""
    corpus = write_lines(
        tmp_path / "corpus.jsonl",
        [
            json.dumps({"_id": f"{q}-d{n}", "title": f"doc {n}", "text": "text"})
            for q in QUERIES
            for n in range(1, 7)
        ],
    )
    queries = write_lines(
        tmp_path / "queries.jsonl", [json.dumps({"_id": q, "text": f"about {q}"}) for q in QUERIES]
    )
    with Store(tmp_path / "p.db") as store:
        store.pool(corpus, queries, [run_file(tmp_path, "first", OLD)], depth=3)
        store.judge("miss", "miss-d1", 0, "ana")
        store.mark("miss", "miss", "ana")
        store.mark("unanswerable", "unanswerable", "ana")
        store.judge("hit", "hit-d1", 1, "ana")
        yield store, run_file(tmp_path, "second", NEW)


def exact_on(store: Store, run: str) -> dict[str, bool]:
    """Per scored query of the golden set: whether the run's MRR@10 and hit@10 are exact."""
    ranking = rank_run(live.golden_set(store), live.project_run(store, run, depth=None), METRICS)
    flags = exact_queries(ranking, 10)
    return dict(zip(per_query_values(ranking, METRICS).query_ids, flags.tolist(), strict=True))


def figures(store: Store, run: str) -> dict:
    """The run's per-query MRR@10 and hit@10 over the golden set."""
    ranking = rank_run(live.golden_set(store), live.project_run(store, run, depth=None), METRICS)
    return per_query_values(ranking, METRICS).frame().to_dict()


def golden_set(store: Store) -> tuple[list, dict]:
    """The golden set as eval reads it: done queries, and the grade of each judged pair."""
    queries, judgments = store.golden_frames()
    done = queries[queries["status"] == "done"]
    grades = judgments.set_index(["query_id", "doc_id"])["grade"].to_dict()
    return done[["query_id", "answerable"]].values.tolist(), grades


def offered(store: Store, annotator: str) -> set[str]:
    """Every query the queue offers the annotator, once round."""
    seen, query_id = set(), store.next_query(annotator)
    while query_id is not None and query_id not in seen:
        seen.add(query_id)
        query_id = store.next_query(annotator, after=query_id)
    return seen


def new_docs(query_id: str) -> set[str]:
    return {f"{query_id}-{doc}" for doc in NEW}


def test_a_new_runs_docs_on_verdict_queries_are_holes_not_zeros(closed):
    store, second = closed
    golden_before, first_before = golden_set(store), figures(store, "first")
    assert offered(store, "ana") == set()  # everything done, no work left

    store.pool(None, None, [second], depth=3)

    for query_id in ("miss", "unanswerable"):
        state = store.query_state(query_id)
        assert state["status"] == "done" and state["holes"] == 3, query_id
        assert not new_docs(query_id) & set(store.labels(query_id)), "graded by the verdict"
        assert store.query_state(query_id, "ana")["holes"] == 3
    assert store.query_state("unanswerable")["answerable"] is False
    assert golden_set(store) == golden_before  # the golden set does not move...
    assert figures(store, "first") == first_before  # ...nor the first run's figures
    assert exact_on(store, "first") == {"miss": True, "hit": True}
    assert exact_on(store, "second") == {"miss": False, "hit": False}
    assert offered(store, "ana") == {"miss", "unanswerable", "hit"}
    assert store.next_candidate("miss", "ana")["doc_id"] == "miss-d6"  # the new run's top


def test_judging_the_holes_makes_the_figures_exact(closed):
    store, second = closed
    store.pool(None, None, [second], depth=3)
    assert exact_on(store, "second") == {"miss": False, "hit": False}
    for doc in NEW:
        store.judge("miss", f"miss-{doc}", 0, "ana")  # all 0: still a miss
    store.judge("unanswerable", "unanswerable-d6", 0, "ana")
    store.judge("unanswerable", "unanswerable-d5", 2, "ana")  # the answer, after all
    store.judge("hit", "hit-d6", 0, "ana")
    store.judge("hit", "hit-d5", 0, "ana")
    store.judge("hit", "hit-d4", 0, "ana")

    miss, found = store.query_state("miss"), store.query_state("unanswerable")
    assert (miss["status"], miss["answerable"], miss["holes"]) == ("done", True, 0)
    assert miss["first_relevant_rank"] is None
    assert (found["status"], found["answerable"], found["holes"]) == ("done", True, 0)
    position = {c["doc_id"]: c["position"] for c in store.candidates("unanswerable")}
    assert found["first_relevant_rank"] == position["unanswerable-d5"]
    assert offered(store, "ana") == set()
    assert exact_on(store, "second") == {"miss": True, "unanswerable": True, "hit": True}
    assert exact_on(store, "first") == {"miss": True, "unanswerable": True, "hit": True}


def test_undoing_the_verdict_takes_back_only_its_zeros(closed):
    store, second = closed
    store.pool(None, None, [second], depth=3)
    assert store.undo("ana")["query_id"] == "hit"  # her latest action first
    assert store.undo("ana")["query_id"] == "unanswerable"
    assert store.undo("ana")["query_id"] == "miss"
    state = store.query_state("miss", "ana")
    assert (state["status"], state["holes"], state["asserted"]) == ("in_progress", 0, [])
    assert store.labels("miss", "ana") == {"miss-d1": 0}  # as before the verdict
    assert store.labels("unanswerable", "ana") == {}
    assert store.query_state("unanswerable")["status"] == "pending"


def test_a_verdict_given_after_the_pool_covers_its_new_docs(closed):
    store, second = closed
    store.pool(None, None, [second], depth=3)
    store.mark("miss", "miss", "ana")  # again, now that the new docs are shown
    state = store.query_state("miss", "ana")
    assert state["status"] == "done" and state["holes"] == 0
    assert set(store.labels("miss", "ana")) == {f"miss-{d}" for d in OLD + NEW}
    assert exact_on(store, "second")["miss"] is True


def test_a_verdict_given_while_a_pool_was_staged_does_not_cover_its_docs(closed, monkeypatch):
    store, second = closed
    store.undo("ana")
    store.undo("ana")  # "unanswerable" open again
    derive = type(store)._rederive

    def verdict_meanwhile(self, *args):
        found = derive(self, *args)  # the states under the new pool, derived unlocked
        with Store(store.path) as other:  # another annotator's process, before publishing
            other.mark("unanswerable", "unanswerable", "ana")
        return found

    monkeypatch.setattr(type(store), "_rederive", verdict_meanwhile)
    store.pool(None, None, [second], depth=3)
    state = store.query_state("unanswerable")
    assert state["status"] == "done" and state["holes"] == 3
    assert set(store.labels("unanswerable")) == {f"unanswerable-{d}" for d in OLD}


def exported(store: Store, path) -> list[dict]:
    store.write_jsonl(path)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_export_and_import_keep_the_holes_of_verdict_queries(closed, tmp_path):
    store, second = closed
    store.pool(None, None, [second], depth=3)
    store.judge("miss", "miss-d6", 0, "ana")  # one hole of three judged
    first = exported(store, tmp_path / "first.jsonl")
    states = {q: store.query_state(q) for q in QUERIES}
    with Store(tmp_path / "fresh.db") as fresh:
        fresh.import_tasks(tmp_path / "first.jsonl")
        assert exported(fresh, tmp_path / "second.jsonl") == first
        again = {q: fresh.query_state(q) for q in QUERIES}
        assert {q: state["holes"] for q, state in again.items()} == {
            "miss": 2,
            "unanswerable": 3,
            "hit": 3,
        }
        assert not new_docs("unanswerable") & set(fresh.labels("unanswerable"))
        for query_id in QUERIES:
            kept = ("status", "answerable", "holes", "first_relevant_rank")
            assert {k: again[query_id][k] for k in kept} == {k: states[query_id][k] for k in kept}
        fresh.mark("unanswerable", "unanswerable", "bob")  # a verdict after the import
        assert fresh.query_state("unanswerable")["holes"] == 0  # covers every candidate


def test_the_projections_equal_their_rebuild_from_the_log(closed):
    store, second = closed
    store.pool(None, None, [second], depth=3)
    store.judge("unanswerable", "unanswerable-d6", 0, "ana")
    live_states = {q: store.query_state(q) for q in QUERIES}
    live_labels = {q: store.labels(q) for q in QUERIES}
    assert [live_states[q]["holes"] for q in QUERIES] == [3, 2, 3]
    store.rebuild_projections()
    assert {q: store.query_state(q) for q in QUERIES} == live_states
    assert {q: store.labels(q) for q in QUERIES} == live_labels


def test_the_label_page_opens_a_verdict_query_at_the_new_runs_doc(tmp_path, monkeypatch):
    path = tmp_path / "project.db"
    corpus = write_lines(tmp_path / "corpus.jsonl", [json.dumps({"_id": "q1-new", "text": "t"})])
    run = write_lines(tmp_path / "second.trec", ["q1 Q0 q1-new 1 9 second"])
    with Store(path) as store:
        store.import_records(TASKS)
    monkeypatch.setenv("GOLDSET_DB", str(path))
    st.cache_resource.clear()
    try:
        press(open_app(), "u")  # q1: unanswerable, at its first candidate
        with Store(path) as store:
            store.add_corpus(corpus)
            store.pool(None, None, [run], depth=1)
        at = open_app()
        assert "query number 1" in heading(at)  # back in the queue, for its hole
        press(at, "1")  # the new run's doc: the answer
        assert "query number 2" in heading(at)
    finally:
        st.cache_resource.clear()
    with Store(path) as store:
        state = store.query_state("q1")
        assert (state["answerable"], state["holes"]) == (True, 0)
        assert store.labels("q1")["q1-new"] == 1
