"""Concurrency: 8 processes write 500 judgements each into one database file at the same
time: exactly 4,000 events are stored and no process sees an error ("database is locked"
is what a plain BEGIN gives here; the store's BEGIN IMMEDIATE queues writers instead).

The writers are forked processes, each with its own connection, released together.
"""

import multiprocessing

import pytest

from goldset.labeler.store import DEMO_TASKS, Store

WRITERS = 8
JUDGEMENTS = 500


def write_judgements(db, worker: int, start, errors) -> None:
    """One writer: open the project, wait for the start signal, judge 500 times."""
    try:
        with Store(db) as store:
            queries = [f"q{n:02d}" for n in range(1, 51)]
            pairs = [(q, c["doc_id"]) for q in queries for c in store.candidates(q)]
            start.wait()
            for step in range(JUDGEMENTS):
                query_id, doc_id = pairs[(7 * step + 61 * worker) % len(pairs)]
                store.judge(query_id, doc_id, (step + worker) % 2, f"writer{worker}", seconds=0.5)
    except BaseException as error:
        errors.put(f"writer {worker}: {error!r}")
        raise


@pytest.mark.parametrize("repetition", range(3))
def test_eight_writers_store_exactly_four_thousand_events(tmp_path, repetition):
    db = tmp_path / "project.db"
    with Store(db) as store:
        store.import_tasks(DEMO_TASKS)
    processes = multiprocessing.get_context("fork")
    start, errors = processes.Event(), processes.Queue()
    writers = [
        processes.Process(target=write_judgements, args=(db, worker, start, errors))
        for worker in range(WRITERS)
    ]
    for writer in writers:
        writer.start()
    start.set()
    for writer in writers:
        writer.join(timeout=600)
    assert [writer.exitcode for writer in writers] == [0] * WRITERS
    assert errors.empty()
    with Store(db) as store:
        log = store.events_frame()
        assert len(log) == WRITERS * JUDGEMENTS
        assert log["id"].is_unique
        assert log.groupby("annotator").size().tolist() == [JUDGEMENTS] * WRITERS
        assert store.status()["judgements"] == WRITERS * JUDGEMENTS
