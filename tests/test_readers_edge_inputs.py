"""The edge inputs of `goldset eval` (issue 10): files with the small quirks real files carry.

Each case is a qrels file and a run file. Either goldset's per-query values equal trec_eval's
(pytrec_eval, given the data the file means as plain dicts), or the file is refused: exit 2,
the message naming the file. Never a different number, a phantom query or a traceback. Each
case goes through the CLI and through each TREC parser (plain, general, fast) directly; the
three give the same values, or refuse at the same line and field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytrec_eval
from click.testing import CliRunner

from goldset.eval.metrics import evaluate
from goldset.eval.readers import InputError, read_golden, read_run
from goldset.labeler.cli import cli

MEASURES = {
    "recip_rank": "mrr",
    "success_1": "hit@1",
    "success_10": "hit@10",
    "P_10": "precision@10",
    "recall_10": "recall@10",
    "ndcg_cut_10": "ndcg@10",
}
PARSERS = ("plain", "general", "fast")

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d4 1\nq2 0 d5 1\n"
RUN = "q1 Q0 d2 1 3.0 t\nq1 Q0 d1 2 2.0 t\nq1 Q0 d9 3 1.0 t\nq2 Q0 d5 1 1.5 t\nq2 Q0 d6 2 0.5 t\n"
QRELS_DICT = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d4": 1, "d5": 1}}
RUN_DICT = {"q1": {"d2": 3.0, "d1": 2.0, "d9": 1.0}, "q2": {"d5": 1.5, "d6": 0.5}}


@dataclass(frozen=True)
class Case:
    """A qrels and a run file (text or bytes); ``qrels_dict``/``run_dict`` say what they mean
    (None: the files are refused, and ``refused`` names which one)."""

    qrels: str | bytes = QRELS
    run: str | bytes = RUN
    qrels_dict: dict | None = field(default_factory=lambda: QRELS_DICT)
    run_dict: dict | None = field(default_factory=lambda: RUN_DICT)
    refused: str | None = None
    expected: dict | None = None  # per-query values by hand, where pytrec_eval cannot take it
    qrels_name: str = "qrels.txt"
    run_name: str = "run.trec"


def refused(which: str, **files) -> Case:
    """A case whose ``which`` file ("qrels" or "run") has no sensible reading."""
    return Case(**files, qrels_dict=None, run_dict=None, refused=which)


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def spaced(text: str, separator: str) -> str:
    return "\n".join(separator.join(line.split()) for line in text.splitlines()) + "\n"


def run_with(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


NBSP_QRELS = "q1 0 d\u00a01 1\nq1 0 d1 0\n"
NBSP_RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d\u00a01 2 1.0 t\n"
NBSP_MEANING = {
    "qrels_dict": {"q1": {"d\u00a01": 1, "d1": 0}},
    "run_dict": {"q1": {"d1": 2.0, "d\u00a01": 1.0}},
}

CASES = {
    # --- line ends, BOM, blank lines, comments --------------------------------------------
    "crlf qrels": Case(qrels=crlf(QRELS)),
    "crlf run": Case(run=crlf(RUN)),
    "lone cr line ends": Case(qrels=QRELS.replace("\n", "\r"), run=RUN.replace("\n", "\r")),
    "bom qrels": Case(qrels="\ufeff" + QRELS),
    "bom run": Case(run="\ufeff" + RUN),
    "bom and crlf": Case(qrels="\ufeff" + crlf(QRELS), run="\ufeff" + crlf(RUN)),
    "trailing blank line in qrels": Case(qrels=QRELS + "\n"),
    "trailing blank lines in run": Case(run=RUN + "\n\n\n"),
    "blank line first": Case(qrels="\n" + QRELS, run="\n" + RUN),
    "blank lines amid": Case(qrels=QRELS.replace("\n", "\n\n"), run=RUN.replace("\n", "\n\n")),
    "whitespace-only lines": Case(qrels=" \t\n" + QRELS + "\t\n", run="  \n" + RUN + "\x0b\n"),
    "no final newline": Case(qrels=QRELS.rstrip("\n"), run=RUN.rstrip("\n")),
    "comment lines": Case(qrels="# judged by ana\n" + QRELS, run=RUN + "# end of run\n"),
    "indented comment": Case(qrels="   # note\n" + QRELS, run="\t#q1 Q0 d3 1 9 t\n" + RUN),
    "commented-out line": Case(run=RUN + "#q1 Q0 d3 0 99 t\n"),
    # --- field separators ----------------------------------------------------------------
    "tab separated": Case(qrels=spaced(QRELS, "\t"), run=spaced(RUN, "\t")),
    "runs of spaces": Case(qrels=spaced(QRELS, "   "), run=spaced(RUN, "  ")),
    "mixed tabs and spaces": Case(qrels=spaced(QRELS, " \t "), run=spaced(RUN, "\t ")),
    "leading tab": Case(qrels="\t" + QRELS.replace("\n", "\n\t")[:-1], run="\t" + RUN),
    "leading spaces": Case(qrels="  " + QRELS, run="    " + RUN.replace("\n", "\n  ")[:-2]),
    "trailing spaces and tabs": Case(
        qrels=QRELS.replace("\n", " \t\n"), run=RUN.replace("\n", "  \n")
    ),
    "vertical tab and form feed separate": Case(
        qrels=spaced(QRELS, "\x0b"), run=spaced(RUN, "\x0c")
    ),
    "seven fields in a run": Case(run=RUN.replace(" t\n", " t extra\n")),
    "many fields in a run": Case(run=RUN.replace(" t\n", " t a b c d e f\n")),
    "unit separator in the tag": Case(run=RUN.replace(" t\n", " t\x1fx\n")),
    # --- numbers -------------------------------------------------------------------------
    "grade with plus sign and zeros": Case(qrels=QRELS.replace(" 1\n", " +01\n")),
    "grade minus zero": Case(qrels=QRELS.replace(" 0\n", " -0\n")),
    # pytrec_eval crashes on this grade: the values are worked out by hand (nDCG: the one
    # relevant doc at rank 2 of an ideal 1, 1 / log2(3)).
    "largest int64 grade": Case(
        qrels="q1 0 d1 9223372036854775807\nq1 0 d2 0\n",
        expected={
            "q1": {
                "mrr": 0.5,
                "hit@1": 0.0,
                "hit@10": 1.0,
                "precision@10": 0.1,
                "recall@10": 1.0,
                "ndcg@10": 1 / math.log2(3),
            }
        },
    ),
    "integer-spelled scores": Case(run=RUN.replace("3.0", "3").replace("2.0", "+2")),
    "exponent-spelled scores": Case(run=RUN.replace("3.0", "30e-1").replace("1.5", ".15E1")),
    "minus zero ties zero": Case(
        run=run_with("q1 Q0 d1 1 0 t", "q1 Q0 d2 2 -0 t", "q1 Q0 d3 3 -0.0 t"),
        run_dict={"q1": {"d1": 0.0, "d2": -0.0, "d3": -0.0}},
    ),
    "denormal scores": Case(
        run=run_with("q1 Q0 d1 1 1.5e-45 t", "q1 Q0 d3 2 3e-45 t", "q1 Q0 d2 3 0 t"),
        run_dict={"q1": {"d1": 1.5e-45, "d3": 3e-45, "d2": 0.0}},
    ),
    "seventeen-digit scores": Case(
        run=run_with(
            "q1 Q0 d1 1 1.0000000000000002 t",
            "q1 Q0 d2 2 1.0000000000000004 t",
            "q1 Q0 d3 3 0.10000000000000001 t",
            "q1 Q0 d9 4 0.1 t",
        ),
        run_dict={"q1": {"d1": 1.0000000000000002, "d2": 1.0000000000000004, "d3": 0.1, "d9": 0.1}},
    ),
    "1e400 reads as inf": Case(
        run=run_with("q1 Q0 d2 1 1e400 t", "q1 Q0 d3 2 1e30 t", "q1 Q0 d1 3 -1e400 t"),
        run_dict={"q1": {"d2": math.inf, "d3": 1e30, "d1": -math.inf}},
    ),
    "inf and infinity spelled any case": Case(
        run=run_with("q1 Q0 d2 1 -Infinity t", "q1 Q0 d3 2 INF t", "q1 Q0 d1 3 0 t"),
        run_dict={"q1": {"d2": -math.inf, "d3": math.inf, "d1": 0.0}},
    ),
    "ties at inf break by doc id": Case(
        run=run_with("q1 Q0 d1 1 inf t", "q1 Q0 d2 2 inf t", "q1 Q0 d3 3 inf t"),
        run_dict={"q1": {"d1": math.inf, "d2": math.inf, "d3": math.inf}},
    ),
    "ties at minus inf break by doc id": Case(
        run=run_with("q2 Q0 d4 1 -inf t", "q2 Q0 d5 2 -inf t", "q2 Q0 d6 3 -inf t"),
        run_dict={"q2": {"d4": -math.inf, "d5": -math.inf, "d6": -math.inf}},
    ),
    # --- ids -----------------------------------------------------------------------------
    "numeric-looking ids": Case(
        qrels="001 0 1.0 1\n001 0 1e5 0\n1 0 NA 1\n",
        run=run_with("001 Q0 1e5 1 2 t", "001 Q0 1.0 2 1 t", "1 Q0 nan 1 1 t", "1 Q0 NA 2 0 t"),
        qrels_dict={"001": {"1.0": 1, "1e5": 0}, "1": {"NA": 1}},
        run_dict={"001": {"1e5": 2.0, "1.0": 1.0}, "1": {"nan": 1.0, "NA": 0.0}},
    ),
    "non-ascii ids": Case(
        qrels="café 0 文档 1\ncafé 0 cafe\u0301 0\n",
        run=run_with("café Q0 cafe\u0301 1 2 t", "café Q0 文档 2 1 t"),
        qrels_dict={"café": {"文档": 1, "cafe\u0301": 0}},
        run_dict={"café": {"cafe\u0301": 2.0, "文档": 1.0}},
    ),
    "all as a query id": Case(
        qrels=QRELS + "all 0 x 1\n",
        run=RUN + "all Q0 x 1 1 t\n",
        qrels_dict={**QRELS_DICT, "all": {"x": 1}},
        run_dict={**RUN_DICT, "all": {"x": 1.0}},
    ),
    "hash inside ids": Case(
        qrels="q#1 0 a#b 1\n",
        run="q#1 Q0 a#b 1 1 t\n",
        qrels_dict={"q#1": {"a#b": 1}},
        run_dict={"q#1": {"a#b": 1.0}},
    ),  # fmt: skip
    "no-break space inside an id": Case(qrels=NBSP_QRELS, run=NBSP_RUN, **NBSP_MEANING),
    "no-break space inside an id, another line double spaced": Case(
        qrels=NBSP_QRELS.replace("q1 0 d1", "q1  0 d1"), run=NBSP_RUN, **NBSP_MEANING
    ),
    "no-break space opening a line is part of the query id": Case(
        qrels="\u00a0q1 0 d1 1\n",
        run="\u00a0q1 Q0 d1 1 1 t\n",
        qrels_dict={"\u00a0q1": {"d1": 1}},
        run_dict={"\u00a0q1": {"d1": 1.0}},
    ),
    "em space and ideographic space inside ids": Case(
        qrels="q\u20031 0 d\u30001 1\n",
        run="q\u20031 Q0 d\u30001 1 1 t\n",
        qrels_dict={"q\u20031": {"d\u30001": 1}},
        run_dict={"q\u20031": {"d\u30001": 1.0}},
    ),
    # --- empty runs ------------------------------------------------------------------------
    "empty run": Case(run="", run_dict={}),
    "comment-only run": Case(run="# nothing retrieved\n\n", run_dict={}),
    "run missing a query": Case(run=RUN.split("q2")[0], run_dict={"q1": RUN_DICT["q1"]}),
    # --- refused -------------------------------------------------------------------------
    "empty qrels": refused("qrels", qrels=""),
    "comment-only qrels": refused("qrels", qrels="# nothing judged yet\n\n"),
    "five-field run line": refused("run", run=RUN + "q2 Q0 d7 3 0.1\n"),
    "five-field run line with a double space": refused("run", run=RUN + "q2 Q0  d7 3 0.1\n"),
    "every run line has five fields": refused("run", run=run_with("q1 Q0 d1 1 2.0")),
    "qrels missing a grade": refused("qrels", qrels=QRELS + "q2 0 d6\n"),
    "qrels missing a grade, trailing space": refused("qrels", qrels=QRELS + "q2 0 d6 \n"),
    "qrels with five fields": refused("qrels", qrels=QRELS + "q2 0 d6 1 x\n"),
    "grade past int64": refused("qrels", qrels=QRELS + "q2 0 d6 99999999999999999999\n"),
    "grade 10^30": refused("qrels", qrels=QRELS + "q2 0 d6 " + "1" + "0" * 30 + "\n"),
    "grade of 400 digits": refused("qrels", qrels=QRELS + "q2 0 d6 " + "9" * 400 + "\n"),
    "grade 1.0": refused("qrels", qrels=QRELS + "q2 0 d6 1.0\n"),
    "nan score": refused("run", run=RUN + "q2 Q0 d7 3 nan t\n"),
    "hex float score": refused("run", run=RUN + "q2 Q0 d7 3 0x1p3 t\n"),
    "score with underscore": refused("run", run=RUN + "q2 Q0 d7 3 1_000 t\n"),
    "score with comma": refused("run", run=RUN + "q2 Q0 d7 3 1,5 t\n"),
    "control character in a doc id": refused("run", run=RUN + "q2 Q0 d\x017 3 0.1 t\n"),
    "DEL in a query id": refused("qrels", qrels=QRELS + "q\x7f2 0 d6 1\n"),
    "C1 control (NEL) in a doc id": refused("qrels", qrels=QRELS + "q2 0 d\u00856 1\n"),
    "doc repeated in a query": refused("run", run=RUN + "q1 Q0 d1 4 0.5 t\n"),
    "doc judged twice": refused("qrels", qrels=QRELS + "q1 0 d1 0\n"),
    "invalid utf-8": refused("run", run=RUN.encode() + b"q2 Q0 d\xff 3 0.1 t\n"),
    # --- BEIR qrels.tsv and JSONL inputs ---------------------------------------------------
    "beir qrels with bom and crlf": Case(
        qrels="\ufeffquery-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq1\td3\t2\r\n\r\n",
        qrels_name="qrels.tsv",
        qrels_dict={"q1": {"d1": 1, "d3": 2}},
    ),
    "beir qrels with a fourth column": refused(
        "qrels", qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\tx\n", qrels_name="qrels.tsv"
    ),
    "jsonl run with Infinity and 1e400": Case(
        run=json.dumps({"query_id": "q1", "results": [{"doc_id": "d2", "score": 1e400}]})
        + "\n"
        + '{"query_id": "q2", "results": [{"doc_id": "d5", "score": -Infinity}]}\n',
        run_name="run.jsonl",
        run_dict={"q1": {"d2": math.inf}, "q2": {"d5": -math.inf}},
    ),
    "jsonl run with a 400-digit score": Case(
        run='{"query_id": "q1", "results": [{"doc_id": "d1", "score": ' + "9" * 400 + "}]}\n",
        run_name="run.jsonl",
        run_dict={"q1": {"d1": math.inf}},
    ),
    "jsonl run with NaN": refused(
        "run",
        run='{"query_id": "q1", "results": [{"doc_id": "d1", "score": NaN}]}\n',
        run_name="run.jsonl",
    ),  # fmt: skip
    "jsonl run with a tab in a doc id": refused(
        "run",
        run=json.dumps({"query_id": "q1", "results": [{"doc_id": "d\t1"}]}) + "\n",
        run_name="run.jsonl",
    ),  # fmt: skip
    "golden jsonl with a grade of 10^30": refused(
        "qrels",
        qrels=json.dumps({"query_id": "q1", "judgments": {"d1": 10**30}}) + "\n",
        qrels_name="golden.jsonl",
    ),  # fmt: skip
}


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def expected_values(case: Case) -> dict[str, dict[str, float]]:
    """trec_eval's per-query values (pytrec_eval on what the files mean); a judged query
    the run left out scores 0 (as trec_eval -c)."""
    if case.expected is not None:
        return case.expected
    evaluator = pytrec_eval.RelevanceEvaluator(case.qrels_dict, set(MEASURES))
    found = evaluator.evaluate(case.run_dict)
    zeros = dict.fromkeys(MEASURES, 0.0)
    return {
        query_id: {MEASURES[m]: found.get(query_id, zeros)[m] for m in MEASURES}
        for query_id in case.qrels_dict
    }


def assert_same_values(values: dict, expected: dict) -> None:
    assert sorted(values) == sorted(expected)  # no phantom query, none lost
    for query_id, metrics in expected.items():
        for metric, value in metrics.items():
            assert values[query_id][metric] == pytest.approx(value, abs=1e-12), (query_id, metric)


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case_files(request, tmp_path) -> tuple[Case, Path, Path]:
    case = CASES[request.param]
    return (
        case,
        write(tmp_path / case.qrels_name, case.qrels),
        write(tmp_path / case.run_name, case.run),
    )


def test_catalogue_has_at_least_45_edge_inputs():
    assert len(CASES) >= 45
    assert sum(case.refused is not None for case in CASES.values()) >= 15


def test_goldset_eval_gives_trec_eval_values_or_refuses_naming_the_file(case_files, tmp_path):
    case, qrels, run = case_files
    per_query = tmp_path / "per_query.jsonl"
    metrics = [arg for metric in MEASURES.values() for arg in ("-m", metric)]
    args = ["eval", "--golden", qrels, "--run", run, *metrics, "--bootstrap", "0"]
    result = CliRunner().invoke(cli, [str(arg) for arg in [*args, "--per-query", per_query]])
    if case.refused:
        bad_file = qrels if case.refused == "qrels" else run
        assert result.exit_code == 2, result.output
        assert str(bad_file) in result.output
        assert "Traceback" not in result.output
        return
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in per_query.read_text().splitlines()]
    values = {row["query_id"]: row for row in rows}
    assert len(values) == len(rows)
    assert_same_values(values, expected_values(case))


def test_every_parser_gives_the_same_reading_or_the_same_refusal(case_files):
    case, qrels, run = case_files
    outcomes = []
    for parser in PARSERS:
        try:
            golden, ranked = read_golden(qrels, parser=parser), read_run(run, parser=parser)
        except InputError as error:
            assert error.source in (str(qrels), str(run))
            outcomes.append(("refused", error.source, error.line, error.field, error.problem))
            continue
        values = evaluate(golden, ranked, list(MEASURES.values()))
        outcomes.append(("read", values.to_dict(orient="index")))
    assert outcomes[1:] == outcomes[:-1]
    if case.refused:
        assert outcomes[0][0] == "refused"
        assert outcomes[0][1] == str(qrels if case.refused == "qrels" else run)
    else:
        assert outcomes[0][0] == "read"
        assert_same_values(outcomes[0][1], expected_values(case))


INF_TIES = "q1 Q0 d1 1 inf t\nq1 Q0 d2 2 Infinity t\nq1 Q0 d3 3 1e400 t\nq2 Q0 d4 1 -inf t\n"


@pytest.mark.parametrize("parser", PARSERS)
def test_scores_at_inf_are_read_as_inf_on_every_path(tmp_path, parser):
    """Ties at ±inf are ties (the ranking breaks them by doc id, as any other tie)."""
    run = read_run(write(tmp_path / "run.trec", INF_TIES), parser=parser)
    assert run.scores.tolist() == [math.inf, math.inf, math.inf, -math.inf]
