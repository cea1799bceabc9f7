"""Reading golden sets and runs (eval/readers.py): formats are sniffed, trec_eval's rules hold,
and every bad input is an InputError naming the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pandas.testing import assert_frame_equal

from goldset.eval.metrics import evaluate
from goldset.eval.readers import InputError, read_golden, read_run


def write(path: Path, content: str | bytes) -> Path:
    """Write ``content`` (text or raw bytes) to ``path`` and return the path."""
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def jsonl(*records: dict) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def scored(*pairs: tuple[str, float]) -> list[dict]:
    """A JSONL run's ``results`` list from (doc_id, score) pairs."""
    return [{"doc_id": doc_id, "score": score} for doc_id, score in pairs]


def judged(golden) -> list[tuple[str, str, int]]:
    """The golden set's judgements as sorted (query_id, doc_id, grade) triples."""
    return sorted(golden.judgments.itertuples(index=False, name=None))


def rows_of(run) -> list[tuple[str, str, float]]:
    """The run's results as sorted (query_id, doc_id, score) triples."""
    return sorted(run.results[["query_id", "doc_id", "score"]].itertuples(index=False, name=None))


def error_from(reader, path: Path) -> InputError:
    with pytest.raises(InputError) as caught:
        reader(path)
    return caught.value


# --- format sniffing -------------------------------------------------------------------------

SAME_LABELS = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d7", 1)]


def test_read_golden_sniffs_golden_jsonl_trec_qrels_and_beir_tsv(tmp_path):
    golden_jsonl = write(
        tmp_path / "golden.jsonl",
        jsonl(
            {"query_id": "q1", "judgments": {"d1": 2, "d2": 0}},
            {"query_id": "q2", "judgments": {"d7": 1}},
        ),
    )
    trec_qrels = write(tmp_path / "qrels.txt", "q1 0 d1 2\nq1 0 d2 0\nq2 0 d7 1\n")
    beir_qrels = write(
        tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td7\t1\n"
    )
    for path in (golden_jsonl, trec_qrels, beir_qrels):
        assert judged(read_golden(path)) == SAME_LABELS, path.name


def test_golden_jsonl_keeps_status_answerability_slice_and_mode(tmp_path):
    labelled = {"query": "retry helper", "slice": "tail", "status": "done", "mode": "first_hit"}
    path = write(
        tmp_path / "golden.jsonl",
        jsonl(
            {"query_id": "q1", **labelled, "answerable": True, "judgments": {"d1": 1}},
            {"query_id": "q2", "status": "skipped", "answerable": False},
        ),
    )
    queries = read_golden(path).queries.set_index("query_id")
    assert queries.loc["q1", ["query", "slice", "status", "mode"]].tolist() == [
        "retry helper",
        "tail",
        "done",
        "first_hit",
    ]
    assert bool(queries.loc["q1", "answerable"]) is True
    assert queries.loc["q2", ["slice", "status"]].tolist() == ["", "skipped"]
    assert bool(queries.loc["q2", "answerable"]) is False


def test_qrels_queries_are_all_done_and_answerable(tmp_path):
    golden = read_golden(write(tmp_path / "qrels.txt", "q1 0 d1 0\nq2 0 d2 1\n"))
    assert list(golden.scored_query_ids()) == ["q1", "q2"]


def test_read_run_sniffs_trec_and_jsonl(tmp_path):
    trec = write(tmp_path / "run.trec", "q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\n")
    jsonl_run = write(
        tmp_path / "run.jsonl",
        jsonl({"query_id": "q1", "results": scored(("d1", 2.5), ("d2", 1.5))}),
    )
    assert rows_of(read_run(jsonl_run)) == [("q1", "d1", 2.5), ("q1", "d2", 1.5)]
    assert rows_of(read_run(trec)) == rows_of(read_run(jsonl_run))
    assert read_run(trec).name == "run"


# --- trec_eval's layout rules ----------------------------------------------------------------


def test_run_comment_lines_start_with_hash_in_column_zero(tmp_path):
    path = write(
        tmp_path / "run.trec",
        "# bm25, k1=1.2\nq1 Q0 d#1 1 2.0 bm25\n\n q1 Q0 d2 2 1.0 bm25\n",
    )
    assert rows_of(read_run(path)) == [("q1", "d#1", 2.0), ("q1", "d2", 1.0)]


def test_commented_out_run_line_is_skipped(tmp_path):
    path = write(tmp_path / "run.trec", "q1 Q0 d1 1 2.0 bm25\n#q1 Q0 d2 2 1.0 bm25\n")
    assert rows_of(read_run(path)) == [("q1", "d1", 2.0)]


def test_hash_inside_a_docno_is_data_in_runs_and_qrels(tmp_path):
    run = read_run(write(tmp_path / "run.trec", "q1 Q0 sdk/retry.py#backoff 1 2.0 bm25\n"))
    golden = read_golden(write(tmp_path / "qrels.txt", "q1 0 sdk/retry.py#backoff 1\n"))
    assert rows_of(run) == [("q1", "sdk/retry.py#backoff", 2.0)]
    assert judged(golden) == [("q1", "sdk/retry.py#backoff", 1)]


def test_commented_out_qrels_line_is_skipped(tmp_path):
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1\n#q1 0 d2 1\n")
    assert judged(read_golden(path)) == [("q1", "d1", 1)]


CLEAN_RUN = (
    "q1 Q0 001 1 3.5 bm25\nq1 Q0 NA 2 3.5 bm25\nq2 Q0 d#x 1 -1e2 bm25\nq10 Q0 1.0 1 0 bm25\n"
)
MESSY_RUN = (
    "# the same run, written carelessly\n"
    "q1\tQ0\t001\t1\t3.5\tbm25 extra fields\n"
    "   q1  Q0   NA 2 3.5 bm25\n"
    "\n"
    "q2 Q0 d#x 1 -1e2 bm25\t\n"
    "q10 Q0 1.0 1 0 bm25 x y z\n"
)


def test_general_parser_and_fast_path_give_identical_runs(tmp_path):
    clean = read_run(write(tmp_path / "clean.trec", CLEAN_RUN), name="bm25")
    messy = read_run(write(tmp_path / "messy.trec", MESSY_RUN), name="bm25")
    assert_frame_equal(messy.results, clean.results)
    assert list(messy.query_ids) == list(clean.query_ids) == ["q1", "q2", "q10"]
    assert rows_of(clean) == [
        ("q1", "001", 3.5),
        ("q1", "NA", 3.5),
        ("q10", "1.0", 0.0),
        ("q2", "d#x", -100.0),
    ]


def test_tab_separated_run_reads_like_space_separated(tmp_path):
    tabs = read_run(write(tmp_path / "tabs.trec", CLEAN_RUN.replace(" ", "\t")), name="bm25")
    spaces = read_run(write(tmp_path / "spaces.trec", CLEAN_RUN), name="bm25")
    assert_frame_equal(tabs.results, spaces.results)


def test_rank_column_is_ignored(tmp_path):
    ranked = read_run(write(tmp_path / "a.trec", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 2.0 t\n"), "t")
    misranked = read_run(write(tmp_path / "b.trec", "q1 Q0 d1 9 1.0 t\nq1 Q0 d2 x 2.0 t\n"), "t")
    assert_frame_equal(misranked.results, ranked.results)
    golden = read_golden(write(tmp_path / "qrels.txt", "q1 0 d2 1\n"))
    assert evaluate(golden, misranked, ["mrr@10"]).loc["q1", "mrr@10"] == 1.0


# --- JSONL runs --------------------------------------------------------------------------------


def test_jsonl_run_empty_results_means_the_system_abstained(tmp_path):
    path = write(
        tmp_path / "run.jsonl",
        jsonl(
            {"query_id": "q1", "results": scored(("d1", 1.0))},
            {"query_id": "q2", "results": []},
        ),
    )
    run = read_run(path)
    assert list(run.query_ids) == ["q1", "q2"]
    assert rows_of(run) == [("q1", "d1", 1.0)]


def test_jsonl_run_without_scores_ranks_in_list_order(tmp_path):
    path = write(
        tmp_path / "run.jsonl",
        jsonl({"query_id": "q1", "results": [{"doc_id": "a"}, {"doc_id": "b"}, {"doc_id": "c"}]}),
    )
    first_listed = read_golden(write(tmp_path / "a.txt", "q1 0 a 1\n"))
    last_listed = read_golden(write(tmp_path / "c.txt", "q1 0 c 1\n"))
    assert evaluate(first_listed, read_run(path), ["mrr@10"]).loc["q1", "mrr@10"] == 1.0
    assert evaluate(last_listed, read_run(path), ["mrr@10"]).loc["q1", "mrr@10"] == 1 / 3


# --- errors name file, line and field ---------------------------------------------------------


def test_input_error_message_is_file_line_field_problem():
    error = InputError("runs/bm25.trec", 7, "score", "not a number")
    assert isinstance(error, ValueError)
    assert str(error) == "runs/bm25.trec:7: field 'score': not a number"
    assert (error.source, error.line, error.field, error.problem) == (
        "runs/bm25.trec",
        7,
        "score",
        "not a number",
    )


def test_run_error_message_has_the_documented_format(tmp_path):
    path = write(tmp_path / "run.trec", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 abc t\n")
    assert str(error_from(read_run, path)) == f"{path}:2: field 'score': not a number: 'abc'"


def bad(reader, name: str, content: str, line: int, field: str | None, case: str):
    """One bad input: read with ``reader``, it must fail at ``line`` naming ``field``."""
    return pytest.param(reader, name, content, line, field, id=case)


BAD_INPUTS = [
    bad(read_run, "run.trec", "q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1\n", 2, "tag", "run line, 5 fields"),
    bad(read_run, "run.trec", "q1 Q0 d1 1 2 t\nq1 Q0 d2 2 abc t\n", 2, "score", "run score abc"),
    bad(read_run, "run.trec", "q1 Q0 d1 1 2 t\nq1 Q0 d2 2 nan t\n", 2, "score", "run score nan"),
    bad(read_run, "run.trec", "q1 Q0 d1 1 2 t x\nq1  Q0 d2 2 NaN t\n", 2, "score", "messy NaN"),
    bad(
        read_run, "run.trec", "# c\n\nq1 Q0 d1 1 2 t\nq1 Q0 d2 2 x t\n", 4, "score", "after comment"
    ),
    bad(read_run, "run.jsonl", '{"query_id": "q1", "results": []}\n{oops\n', 2, None, "not JSON"),
    bad(
        read_run,
        "run.jsonl",
        jsonl({"query_id": "q1", "results": []}, {"results": []}),
        2,
        "query_id",
        "jsonl run without query_id",
    ),
    bad(
        read_run,
        "run.jsonl",
        jsonl({"query_id": "q1", "results": scored(("d1", float("nan")))}),
        1,
        "results[0].score",
        "jsonl run score NaN",
    ),
    bad(
        read_golden,
        "golden.jsonl",
        jsonl({"query_id": "q1"}, {"query_id": "q2", "status": "maybe"}),
        2,
        "status",
        "golden status not done, skipped or pending",
    ),
    bad(
        read_golden,
        "golden.jsonl",
        jsonl({"query_id": "q1", "answerable": "yes"}),
        1,
        "answerable",
        "golden answerable not a bool",
    ),
    bad(
        read_golden,
        "golden.jsonl",
        jsonl({"query_id": "q1", "judgments": {"d1": 1.5}}),
        1,
        "judgments.d1",
        "golden grade not an integer",
    ),
    bad(
        read_golden,
        "golden.jsonl",
        jsonl({"query_id": "q1"}, {"query_id": "q2"}, {"query_id": "q1"}),
        3,
        "query_id",
        "golden query repeated",
    ),
    bad(
        read_golden,
        "golden.jsonl",
        jsonl({"query_id": "q1"}, {"query": "no id"}),
        2,
        "query_id",
        "golden without query_id",
    ),
    bad(read_golden, "golden.jsonl", '{"query_id": "q1"}\n{"query_id":\n', 2, None, "not JSON"),
    bad(read_golden, "qrels.txt", "q1 0 d1 1\nq1 0 d2 1.5\n", 2, "grade", "qrels grade 1.5"),
    bad(
        read_golden,
        "qrels.tsv",
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\thigh\n",
        3,
        "score",
        "beir score not an integer",
    ),
]


@pytest.mark.parametrize(("reader", "name", "content", "line", "field"), BAD_INPUTS)
def test_bad_input_names_file_line_and_field(tmp_path, reader, name, content, line, field):
    path = write(tmp_path / name, content)
    error = error_from(reader, path)
    assert (error.line, error.field) == (line, field)
    prefix = f"{path}:{line}: field '{field}': " if field else f"{path}:{line}: "
    assert str(error).startswith(prefix)


@pytest.mark.parametrize("fields", ["q1", "q1 Q0 d2", "q1 Q0 d2 2"])
def test_trec_run_line_with_fewer_than_six_fields_says_so(tmp_path, fields):
    path = write(tmp_path / "run.trec", f"q1 Q0 d1 1 2.0 t\n{fields}\n")
    error = error_from(read_run, path)
    assert error.line == 2
    assert "6 fields" in error.problem


def test_trec_run_where_every_line_has_five_fields_names_the_first(tmp_path):
    path = write(tmp_path / "run.trec", "q1 Q0 d1 1 2.0\nq1 Q0 d2 2 1.0\n")
    error = error_from(read_run, path)
    assert error.line == 1
    assert "6 fields" in error.problem


INVALID_UTF8_CASES = {
    "trec run": (read_run, "run.trec", b"q1 Q0 d1 1 2 t\nq1 Q0 d\xff2 2 1 t\n", 2),
    "jsonl run": (
        read_run,
        "run.jsonl",
        b'{"query_id": "q1", "results": []}\n{"query_id": "\xff"}',
        2,
    ),
    "golden jsonl": (read_golden, "golden.jsonl", b'{"query_id": "q1"}\n{"query_id": "\xff"}\n', 2),
    "trec qrels": (read_golden, "qrels.txt", b"q1 0 d1 1\nq1 0 d\xff2 1\n", 2),
    "beir qrels": (read_golden, "qrels.tsv", b"query-id\tcorpus-id\tscore\nq1\td\xff\t1\n", 2),
}


@pytest.mark.parametrize(
    ("reader", "name", "content", "line"), INVALID_UTF8_CASES.values(), ids=INVALID_UTF8_CASES
)
def test_invalid_utf8_names_file_and_line(tmp_path, reader, name, content, line):
    path = write(tmp_path / name, content)
    error = error_from(reader, path)
    assert str(error).startswith(f"{path}:{line}: ")
    assert "UTF-8" in error.problem


# --- repeated documents: the line named holds the repeat ----------------------------------------


@pytest.mark.parametrize("repeat_score", ["2.0", "0.5"], ids=["same score", "different score"])
def test_doc_repeated_within_a_trec_query_names_a_line_holding_it(tmp_path, repeat_score):
    path = write(
        tmp_path / "run.trec",
        f"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d1 1 3.0 t\nq1 Q0 d1 3 {repeat_score} t\n",
    )
    error = error_from(read_run, path)
    assert error.line in (1, 4)
    assert error.field == "doc_id"
    assert "'d1'" in error.problem and "'q1'" in error.problem


@pytest.mark.parametrize("repeat_score", [2.0, 0.5], ids=["same score", "different score"])
def test_doc_repeated_within_a_jsonl_query_names_its_line(tmp_path, repeat_score):
    path = write(
        tmp_path / "run.jsonl",
        jsonl(
            {"query_id": "q0", "results": scored(("d1", 2.0))},
            {"query_id": "q1", "results": scored(("d1", 2.0), ("d2", 1.0), ("d1", repeat_score))},
        ),
    )
    error = error_from(read_run, path)
    assert (error.line, error.field) == (2, "doc_id")
    assert str(error).startswith(f"{path}:2: field 'doc_id': ")


def test_doc_judged_twice_in_trec_qrels_names_a_line_holding_it(tmp_path):
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\nq1 0 d1 2\n")
    error = error_from(read_golden, path)
    assert error.line in (1, 4)
    assert error.field == "doc_id"


def test_doc_judged_twice_in_beir_qrels_names_a_line_holding_it(tmp_path):
    path = write(
        tmp_path / "qrels.tsv",
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td1\t1\nq1\td1\t2\n",
    )
    error = error_from(read_golden, path)
    assert error.line in (2, 5)
    assert error.field == "doc_id"


def test_golden_version_depends_on_the_labels_not_on_line_order(cranfield_dir, tmp_path):
    qrels = (cranfield_dir / "qrels.tsv").read_text().splitlines()
    header, rows = qrels[0], qrels[1:]
    shuffled = tmp_path / "qrels.tsv"
    shuffled.write_text("\n".join([header, *reversed(rows)]) + "\n")
    relabelled = tmp_path / "relabelled.tsv"
    query_id, doc_id, grade = rows[0].split("\t")
    relabelled.write_text("\n".join([header, f"{query_id}\t{doc_id}\t{int(grade) + 1}", *rows[1:]]))
    original = read_golden(cranfield_dir / "qrels.tsv").version
    assert read_golden(shuffled).version == original
    assert read_golden(relabelled).version != original
