"""Red team of round 10: the public API's inputs no other test names, each either read as the
same data in a file would be or refused with an error naming where and which field (never a
traceback from pandas, numpy or the codec); an export that would overwrite its own project;
natural id order on ids int() cannot read; a write on another thread while a press is open."""

import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import goldset
from goldset.eval.errors import InputError
from goldset.eval.ids import query_id_order
from goldset.labeler.store import DEMO_TASKS, ProjectError

RUN = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 1.0, "d9": 0.5}}


def means(golden, run=RUN) -> dict:
    return goldset.evaluate(golden, run, ["mrr@10", "ndcg@10"], bootstrap=0).summary()["mean"]


@pytest.mark.parametrize(
    ("golden", "run", "field"),
    [
        ({"q1\ud800": {"d1": 1}}, RUN, "query_id"),
        ({"q1": {"d\ud800": 1}}, RUN, "judgments"),
        ({"q1": {"d1": 1}}, {"q1": {"d\udfff": 1.0}}, "results[0].doc_id"),
        ([{"query_id": "q1", "slice": "s\ud800", "judgments": {"d1": 1}}], RUN, "slice"),
    ],
)
def test_a_lone_surrogate_in_a_python_input_is_refused_naming_its_field(golden, run, field):
    # A JSONL file's "\ud800" escape is refused so; a dict once reached the UTF-8 encoder.
    with pytest.raises(InputError, match="surrogate") as refused:
        goldset.evaluate(golden, run, ["mrr@10"], bootstrap=0)
    assert refused.value.field == field


def test_integer_doc_ids_in_a_golden_dict_are_read_as_their_digits_as_in_a_run():
    as_integers = {"q1": {1: 1}, "q2": {9: 2}}
    as_strings = {"q1": {"1": 1}, "q2": {"9": 2}}
    run = {"q1": {1: 1.0, 2: 2.0}, "q2": {9: 1.0}}
    assert means(as_integers, run).to_dict() == means(as_strings, run).to_dict()
    records = [{"query_id": "q1", "judgments": {1: 1}}, {"query_id": "q2", "judgments": {9: 2}}]
    assert means(records, run).to_dict() == means(as_strings, run).to_dict()


@pytest.mark.parametrize("key", [True, 1.5])
def test_a_doc_id_that_is_no_id_is_refused_in_a_golden_dict(key):
    with pytest.raises(InputError) as refused:
        means({"q1": {key: 1}})
    assert refused.value.field == "judgments"


def test_two_keys_that_give_one_doc_id_are_refused():
    with pytest.raises(InputError, match="given twice"):
        means({"q1": {1: 1, "1": 0}})


@pytest.mark.parametrize("column", ["grade", "query_id"])
def test_a_golden_frame_with_a_column_given_twice_is_refused_naming_it(column):
    frame = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "grade": [1]})
    doubled = pd.concat([frame, frame[[column]]], axis=1)
    with pytest.raises(InputError, match="twice") as refused:
        means(doubled)
    assert refused.value.field == column


def test_a_run_frame_with_a_column_given_twice_is_refused_naming_it():
    run = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]})
    with pytest.raises(InputError, match="twice") as refused:
        means({"q1": {"d1": 1}}, pd.concat([run, run[["score"]]], axis=1))
    assert refused.value.field == "score"


def test_a_bool_query_id_in_a_golden_frame_is_refused_not_merged_into_query_1():
    # True == 1 as a dict key: it was filed under query 1, a silent misreading.
    frame = pd.DataFrame(
        {"query_id": pd.array([1, True], dtype=object), "doc_id": ["d1", "d9"], "grade": [1, 1]}
    )
    with pytest.raises(InputError) as refused:
        means(frame, {"1": {"d1": 1.0}})
    assert (refused.value.line, refused.value.field) == (2, "query_id")


def test_integer_and_string_query_ids_in_a_golden_frame_are_one_query_as_in_a_run_frame():
    mixed = pd.DataFrame(
        {"query_id": pd.array([1, "1"], dtype=object), "doc_id": ["d1", "d2"], "grade": [0, 1]}
    )
    run = {"1": {"d1": 2.0, "d2": 1.0}}
    assert means(mixed, run).to_dict() == means({"1": {"d1": 0, "d2": 1}}, run).to_dict()


def test_a_summary_of_no_metric_still_has_its_columns():
    summary = goldset.evaluate({"q1": {"d1": 1}}, RUN, [], bootstrap=0).summary()
    assert list(summary.columns) == ["mean", "ci_low", "ci_high"]
    assert summary.empty


@pytest.fixture
def demo_project(tmp_path) -> goldset.Project:
    project = goldset.Project(tmp_path / "project.db", create=True)
    project.import_tasks(DEMO_TASKS)
    return project


@pytest.mark.parametrize("export", ["export_golden", "export_qrels"])
@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_an_export_aimed_at_its_own_project_is_refused_and_the_project_kept(
    demo_project, export, suffix
):
    target = demo_project.path.with_name(demo_project.path.name + suffix)
    with pytest.raises(ProjectError, match="the project itself"):
        getattr(demo_project, export)(target)
    assert goldset.Project(demo_project.path).status()["queries"] == 50


def test_goldset_export_onto_its_own_db_is_refused_and_the_project_kept(demo_project):
    db = str(demo_project.path)
    done = subprocess.run(
        [sys.executable, "-m", "goldset", "export", "--db", db, "--out", db],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "the project itself" in done.stderr
    assert "Traceback" not in done.stderr
    assert goldset.Project(db).status()["queries"] == 50


def test_an_id_with_a_digit_run_longer_than_int_reads_is_ordered_not_a_crash(tmp_path):
    # Natural order read each digit run with int(), which refuses more than 4,300 digits:
    # goldset eval and compare stopped on such an id, one the readers accept.
    long_id = "q" + "1" * 5000
    golden = {long_id: {"d1": 1}, "q2": {"d1": 1}, "q10": {"d1": 1}}
    run = {long_id: {"d2": 1.0}, "q2": {"d2": 1.0}, "q10": {"d2": 1.0}}
    worst = goldset.evaluate(golden, run, ["mrr@10"], bootstrap=0).worst()
    assert list(worst["query_id"]) == ["q2", "q10", long_id]
    better = {query_id: {"d1": 1.0} for query_id in golden}
    changed = goldset.compare(golden, run, better, ["mrr@10"], bootstrap=0).changed_queries()
    assert list(changed["query_id"]) == ["q2", "q10", long_id]


def test_natural_order_reads_digits_of_any_script_and_leading_zeros_as_int_does():
    ids = ["q10", "q9", "q0010", "q01", "q1", "q\u0661\u0662", "q11", "q"]
    order = query_id_order(ids)
    assert [ids[position] for position in order.argsort()] == [
        "q",
        "q01",
        "q1",
        "q9",
        "q0010",
        "q10",
        "q11",
        "q\u0661\u0662",
    ]


@pytest.mark.parametrize(
    "options",
    [{"depth": 0}, {"depth": -1}, {"depth": 2.0}, {"abstain_below": float("nan")}],
)
@pytest.mark.parametrize("call", ["evaluate", "compare"])
def test_ranking_options_goldset_eval_refuses_are_refused_by_the_api(options, call):
    # depth 0 scored every query 0 and -1 raised numpy's "repeats may not contain negative
    # values"; a NaN floor abstained on nothing: goldset eval refuses all of them.
    runs = (RUN,) if call == "evaluate" else (RUN, RUN)
    with pytest.raises(ValueError, match=next(iter(options))):
        getattr(goldset, call)({"q1": {"d1": 1}}, *runs, ["mrr@10"], bootstrap=0, **options)


@pytest.mark.parametrize(
    "records",
    [[("q1", "d1", 1), ("q2", "d9", 1)], [("q1", {"d1": 1})], {"q1": {"d1": 1}}.items()],
)
def test_tuples_given_as_golden_records_are_refused_naming_the_record(records):
    # The reader takes (line, record) pairs: a triple raised "too many values to unpack",
    # and ("q1", {...}) was read as a record {"d1": 1} at line "q1".
    with pytest.raises(InputError, match="expected a JSON object") as refused:
        means(records)
    assert (refused.value.source, refused.value.line) == ("<records>", 1)


def test_a_write_on_another_thread_waits_for_the_open_one_never_joins_it(make_store):
    # The open write was the store's, not its thread's: a second thread's press joined the
    # first's transaction without its lock, returned as if stored, and was rolled back with
    # the first one's refusal.
    store = make_store()
    inside, refused = threading.Event(), []

    def first_press() -> None:
        try:
            with store.key_press("page-1", 1):
                store.conn.execute(
                    "INSERT INTO key_presses (page, seq, applied_at) VALUES ('a', 1, '')"
                )
                inside.set()
                time.sleep(0.3)  # the second press is sent meanwhile
                raise RuntimeError("refused halfway")
        except RuntimeError as error:
            refused.append(error)

    def second_press() -> None:
        inside.wait(5)
        with store.key_press("page-2", 7):
            store.conn.execute(
                "INSERT INTO key_presses (page, seq, applied_at) VALUES ('b', 1, '')"
            )

    threads = [threading.Thread(target=first_press), threading.Thread(target=second_press)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert refused, "the first press was not refused"
    assert store.applied_key_press("page-2") == 7
    assert store.applied_key_press("page-1") == 0
    pages = store.conn.execute("SELECT page FROM key_presses ORDER BY page").fetchall()
    assert pages == [("b",), ("page-2",)]


@pytest.mark.parametrize("as_given", [str, lambda path: path, lambda path: [path]])
def test_a_project_pools_one_run_given_as_a_path(tmp_path, as_given):
    # A string was iterated as a list of runs: "/" was read first, "Is a directory: '/'".
    (tmp_path / "run.trec").write_text("q1 Q0 d2 1 2.0 sys\nq1 Q0 d1 2 1.0 sys\n")
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "d1", "text": "one"}\n{"_id": "d2", "text": "two"}\n'
    )
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "which"}\n')
    project = goldset.Project(tmp_path / "project.db", create=True)
    project.pool(
        as_given(tmp_path / "run.trec"),
        1,
        corpus=tmp_path / "corpus.jsonl",
        queries=tmp_path / "queries.jsonl",
    )
    candidates = project.candidates()
    assert [str(doc) for doc in candidates.doc_ids] == ["d2"]


def test_one_metric_may_be_given_as_its_name():
    # A string was iterated as metrics: "unknown metric 'm'".
    golden = {"q1": {"d1": 1}, "q2": {"d9": 1}}
    alone = goldset.evaluate(golden, RUN, "mrr@10").summary()
    pd.testing.assert_frame_equal(alone, goldset.evaluate(golden, RUN, ["mrr@10"]).summary())
    compared = goldset.compare(golden, RUN, RUN, "ndcg@10", bootstrap=0).summary()
    assert "ndcg@10" in compared.index
