"""The public Python API, ``import goldset``: evaluate and compare take paths, DataFrames and
dicts and give what the commands give; ``goldset.Project`` does what the project commands do."""

import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest

import goldset
from goldset.eval.errors import InputError
from goldset.labeler.store import DEMO_TASKS, ProjectError


class Cranfield(NamedTuple):
    """The files of the Cranfield collection these tests read."""

    qrels: Path
    bm25: Path
    tfidf: Path


def cli_json(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "goldset", *args, "--json"], capture_output=True, text=True
    )
    assert done.returncode in (0, 1, 3), done.stderr
    return json.loads(done.stdout)


def nested(frame: pd.DataFrame, value: str) -> dict:
    return {
        query_id: dict(zip(rows["doc_id"], rows[value], strict=True))
        for query_id, rows in frame.groupby("query_id", sort=False)
    }


@pytest.fixture(scope="module")
def cranfield(cranfield_dir: Path) -> Cranfield:
    """Cranfield's qrels and its two runs, bm25 and tfidf-title."""
    runs = cranfield_dir / "runs"
    return Cranfield(cranfield_dir / "qrels.tsv", runs / "bm25.trec", runs / "tfidf-title.trec")


@pytest.fixture(scope="module")
def cranfield_frames(cranfield: Cranfield) -> tuple[pd.DataFrame, pd.DataFrame]:
    qrels = pd.read_csv(cranfield.qrels, sep="\t", dtype={"query-id": str, "corpus-id": str})
    qrels.columns = ["query_id", "doc_id", "grade"]
    run = pd.read_csv(
        cranfield.bm25,
        sep=r"\s+",
        header=None,
        names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
    )
    run[["query_id", "doc_id"]] = run[["query_id", "doc_id"]].astype(str)
    return qrels, run[["query_id", "doc_id", "score"]]


def test_evaluate_gives_the_figures_of_goldset_eval_from_a_path_a_frame_and_a_dict(
    cranfield, cranfield_frames
):
    expected = cli_json(
        "eval", "--golden", str(cranfield.qrels), "--run", str(cranfield.bm25), "--bootstrap", "200"
    )
    qrels, run = cranfield_frames
    for golden, ran in [
        (cranfield.qrels, cranfield.bm25),
        (str(cranfield.qrels), str(cranfield.bm25)),
        (qrels, run),
        (nested(qrels, "grade"), nested(run, "score")),
    ]:
        report = goldset.evaluate(golden, ran, bootstrap=200)
        summary = report.summary()
        for spec, entry in expected["metrics"].items():
            assert summary.loc[spec, "mean"] == pytest.approx(entry["mean"], abs=1e-12)
            assert [summary.loc[spec, "ci_low"], summary.loc[spec, "ci_high"]] == pytest.approx(
                entry["ci95"], abs=1e-12
            )
        assert report.result["queries"] == expected["queries"]
        assert len(report.per_query()) == expected["queries"]["answerable"]
        assert report.to_dataframe().equals(report.per_query())


def test_compare_gives_the_verdict_and_deltas_of_goldset_compare(cranfield):
    qrels, bm25, tfidf = cranfield
    expected = cli_json(
        "compare", "--golden", str(qrels), "--baseline", str(bm25), "--candidate", str(tfidf)
    )
    comparison = goldset.compare(qrels, bm25, tfidf)
    assert comparison.verdict == expected["gate"]["verdict"] == "fail"
    summary = comparison.summary()
    for spec, entry in expected["metrics"].items():
        assert summary.loc[spec, "delta"] == pytest.approx(entry["delta"], abs=1e-12)
    changed = comparison.changed_queries()
    assert len(changed) == sum(len(rows) for rows in expected["changed_queries"].values())
    assert set(changed["change"]) <= set(expected["changed_queries"])


def test_a_query_with_an_empty_dict_in_a_run_is_one_the_system_abstained_on():
    golden = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    report = goldset.evaluate(golden, {"q1": {"d1": 1.0}, "q2": {}}, ["mrr@10"], bootstrap=0)
    assert report.result["queries"]["missing_from_run"] == 0
    assert report.per_query()["mrr@10"].to_dict() == {"q1": 1.0, "q2": 0.0}


def test_records_carry_slices_and_statuses_as_the_golden_jsonl_does():
    records = [
        {"query_id": "q1", "slice": "head", "judgments": {"d1": 1}},
        {"query_id": "q2", "slice": "tail", "judgments": {"d2": 1}},
        {"query_id": "q3", "status": "pending", "judgments": {}},
    ]
    report = goldset.evaluate(records, {"q1": {"d1": 1.0}, "q2": {"d9": 1.0}}, bootstrap=0)
    assert report.result["queries"]["pending"] == 1
    assert report.slices().loc[("head", "mrr@10"), "mean"] == 1.0
    assert report.slices().loc[("tail", "mrr@10"), "mean"] == 0.0
    assert list(report.worst()["query_id"])[0] == "q2"


@pytest.mark.parametrize(
    "golden, run, field",
    [
        ({"q1": ["d1"]}, {"q1": {"d1": 1.0}}, "q1"),  # judgements not a dict
        ({"q1": {"d1": 1}}, {"q1": ["d1"]}, "q1"),  # results not a dict
        ({"q 1": {"d1": 1}}, {"q1": {"d1": 1.0}}, "query_id"),  # whitespace in an id, as in files
        ({"q1": {"d1": 1}}, {"q1": {"d1": "high"}}, "results[0].score"),  # as a JSONL run
        ({"q1": {"d1": 1}}, {"q1": {"d1": True}}, "results[0].score"),  # a bool is no score
        ({"q1": {"d1": 1}}, {"q1": {"d1": float("nan")}}, "results[0].score"),
        (
            {"q1": {"d1": 1}},
            pd.DataFrame({"query_id": ["q1", None], "doc_id": ["d1", "d2"], "score": [1.0, 2.0]}),
            "query_id",
        ),
        (
            {"q1": {"d1": 1}},
            pd.DataFrame({"query_id": [1.0], "doc_id": ["d1"], "score": [1]}),
            "query_id",
        ),  # a float id (a column with gaps) is not read as "1.0"
        (pd.DataFrame({"query_id": ["q1"], "doc": ["d1"]}), {"q1": {}}, "doc_id"),
        ({}, {"q1": {"d1": 1.0}}, None),  # no query at all
    ],
)
def test_bad_input_in_any_form_is_refused_naming_its_field(golden, run, field):
    with pytest.raises(InputError) as refused:
        goldset.evaluate(golden, run, bootstrap=0)
    assert refused.value.field == field


def test_a_dict_run_is_read_as_the_same_run_in_a_jsonl_file(tmp_path):
    run = {"q1": {"d 1": 1.0}}
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"query_id": "q1", "results": [{"doc_id": "d 1", "score": 1.0}]}))
    messages = []
    for given in (run, path):
        with pytest.raises(InputError) as refused:
            goldset.evaluate({"q1": {"d1": 1}}, given, bootstrap=0)
        messages.append(str(refused.value).split(": ", 1)[1])
    assert messages[0] == messages[1]


def test_integer_ids_are_read_as_their_digits_in_every_form():
    golden = pd.DataFrame({"query_id": [1, 2], "doc_id": [10, 20], "grade": [1, 1]})
    run = pd.DataFrame({"query_id": [1, 2], "doc_id": [10, 30], "score": [1.0, 2.0]})
    expected = {"1": 1.0, "2": 0.0}
    for given in (run, {1: {10: 1.0}, 2: {30: 2.0}}):
        report = goldset.evaluate(golden, given, ["mrr@10"], bootstrap=0)
        assert report.per_query()["mrr@10"].to_dict() == expected


def test_a_repeated_pair_in_a_frame_is_refused_not_kept_once():
    frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d1"], "grade": [1, 0]})
    with pytest.raises(InputError, match="repeated"):
        goldset.evaluate(frame, {"q1": {"d1": 1.0}}, bootstrap=0)


def test_other_types_are_a_type_error():
    with pytest.raises(TypeError, match="a golden set is"):
        goldset.evaluate(42, {"q1": {}})
    with pytest.raises(TypeError, match="a run is"):
        goldset.evaluate({"q1": {"d1": 1}}, 3.5)


def test_a_project_imports_reports_evaluates_and_exports_as_the_commands_do(tmp_path):
    with pytest.raises(ProjectError, match="no goldset project"):
        goldset.Project(tmp_path / "missing.db")
    project = goldset.Project(tmp_path / "p.db", create=True)
    counts = project.import_tasks(DEMO_TASKS)
    assert counts["queries_added"] == len(DEMO_TASKS.read_text().splitlines())
    assert project.import_tasks(DEMO_TASKS)["queries_added"] == 0  # the same file again
    progress = project.progress()
    assert progress["pending"].sum() == counts["queries_added"]
    assert project.status()["queries"] == counts["queries_added"]
    nothing_done = project.evaluate(bootstrap=0).summary()
    assert nothing_done["mean"].isna().all()  # no done query yet: no figure, not a zero
    assert project.export_golden(tmp_path / "golden.jsonl") == counts["queries_added"]
    assert project.export_qrels(tmp_path / "qrels.txt") == 0
    assert len(project.golden_records()) == counts["queries_added"]


def test_a_file_that_is_not_a_project_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("hello")
    with pytest.raises(ProjectError, match="not a goldset project"):
        goldset.Project(path, create=True)
    assert path.read_text() == "hello"


def test_import_goldset_is_light_and_its_names_are_the_documented_ones():
    code = (
        "import sys, goldset; heavy = {'pandas', 'streamlit', 'sqlite_utils', 'pyarrow'}; "
        "print(sorted(heavy & set(sys.modules)), sorted(goldset.__all__))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("]", 1)[0] == "["
    for name in ("evaluate", "compare", "Project", "Evaluation", "Comparison", "__version__"):
        assert name in done.stdout
        assert getattr(goldset, name) is not None
    with pytest.raises(AttributeError):
        goldset.no_such_name  # noqa: B018


def test_a_project_pools_runs_and_sets_its_protocol_as_the_commands_do(tmp_path, cranfield_dir):
    cranfield = cranfield_dir
    project = goldset.Project(tmp_path / "pooled.db", create=True)
    protocol = project.configure(mode="full", max_grade=4, rel_threshold=1)
    assert (protocol["mode"], protocol["max_grade"]) == ("full", 4)
    counts = project.pool(
        [cranfield / "runs" / "bm25.trec", cranfield / "runs" / "tfidf-title.trec"],
        2,
        corpus=cranfield / "corpus.jsonl",
        queries=cranfield / "queries.jsonl",
    )
    status = project.status()
    assert status["queries"] == 225 and [run["depth"] for run in status["runs"]] == [2, 2]
    assert counts  # the pool's own counts, as `goldset pool` prints them
    assert project.configure()["mode"] == "full"  # nothing given: nothing changes
    assert project.candidates().query_ids.size == 225


def test_reports_name_runs_as_the_commands_do_and_print_in_one_line(cranfield):
    comparison = goldset.compare(cranfield.qrels, cranfield.bm25, cranfield.tfidf, bootstrap=0)
    assert (comparison.result["baseline"], comparison.result["candidate"]) == (
        "bm25",
        "tfidf-title",
    )
    assert repr(comparison).startswith("Comparison('bm25' -> 'tfidf-title', verdict='fail'")
    from_dicts = goldset.compare({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, {"q1": {"d1": 1.0}})
    assert (from_dicts.result["baseline"], from_dicts.result["candidate"]) == (
        "baseline",
        "candidate",
    )
    report = goldset.evaluate(cranfield.qrels, cranfield.bm25, ["mrr@10"], bootstrap=0)
    mean = report.summary().loc["mrr@10", "mean"]
    assert repr(report) == f"Evaluation(run='bm25', queries=225, mrr@10={mean:.4f})"
