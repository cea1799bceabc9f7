"""The malformed and adversarial files of issues 11 and 29, across every format and command.

Each case is one file given to `goldset import`, `goldset pool` or `goldset eval` (the other
inputs of the command being valid). Each is refused: exit 2, the message naming the file,
the line and the field, no traceback, and the project database (imported once before the
refusals) unchanged: its bytes, its WAL's and its logical dump. Cases are built here, one per
line, named for what they are; ``VALID`` lists what the same rules accept (long CSV fields,
ids with combining marks and other scripts, 40,000 candidates for one query).

Issue 29: whitespace of any kind (a space, a tab, a no-break space) in an id of every format a
project reads, a key given twice in an object of every JSON format, and pools refused only
once they had begun (a doc not in the corpus, a run named ``import``, a known doc or query
given again with other text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.projects import project_state

from goldset.labeler.cli import cli

TASK = {"query_id": "mal-ok", "query": "a query", "candidates": [{"doc_id": "x1", "score": 1.0}]}
GOLDEN = {"query_id": "mal-gold", "query": "a query", "status": "done", "judgments": {"d1": 1}}
CORPUS = [{"_id": "pd1", "title": "t", "text": "one"}, {"_id": "pd2", "title": "t", "text": "two"}]
QUERIES = [{"_id": "pq1", "text": "first"}, {"_id": "pq2", "text": "second"}]
POOL_RUN = "pq1 Q0 pd1 1 2.0 r\npq1 Q0 pd2 2 1.0 r\npq2 Q0 pd2 1 1.0 r\n"
QRELS = "q01 0 d1 1\nq01 0 d2 0\n"
RUN = "q01 Q0 d1 1 2.0 r\nq01 Q0 d2 2 1.0 r\n"


@dataclass(frozen=True)
class Malformed:
    """A file given as ``role`` (tasks, corpus, queries, pool-run, eval-run, golden); the
    refusal must name ``line`` and ``field`` (None where no field can be named: not JSON,
    not UTF-8, nested past sanity, a whole-file problem)."""

    role: str
    name: str
    content: str | bytes
    line: int | None
    field: str | None


def jsonl(*records: object) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def task(line: str | dict, field: str | None, name: str = "tasks.jsonl", **changes) -> Malformed:
    """Tasks JSONL: a valid task on line 1, then ``line`` (raw text, or TASK with changes)."""
    second = line if isinstance(line, str) else json.dumps({**TASK, "query_id": "mal-2", **line})
    return Malformed("tasks", name, jsonl(TASK) + second + "\n", 2, field)


def candidate(field_value: dict, field: str) -> Malformed:
    """A task whose one candidate has ``field_value`` merged in."""
    return task({"candidates": [{"doc_id": "x2", "score": 1.0, **field_value}]}, field)


def golden(changes: dict, field: str | None) -> Malformed:
    """Golden-set JSONL (an import of labels): a valid record, then one with ``changes``."""
    record = {**GOLDEN, "query_id": "mal-gold-2", **changes}
    return Malformed("tasks", "golden.jsonl", jsonl(GOLDEN, record), 2, field)


def csv_file(text: str, line: int | None, field: str | None) -> Malformed:
    return Malformed("tasks", "tasks.csv", text, line, field)


def csv_rows(*rows: str, line: int, field: str | None) -> Malformed:
    """A tasks CSV: header, one valid row, then ``rows``."""
    body = "query_id,query,doc_id,title,score\nmal-c,a query,c1,title,1.0\n" + "".join(
        row + "\n" for row in rows
    )
    return csv_file(body, line, field)


def corpus(record: object, field: str | None) -> Malformed:
    text = jsonl(*CORPUS) + (record if isinstance(record, str) else json.dumps(record)) + "\n"
    return Malformed("corpus", "corpus.jsonl", text, 3, field)


def queries(record: object, field: str | None) -> Malformed:
    text = jsonl(*QUERIES) + (record if isinstance(record, str) else json.dumps(record)) + "\n"
    return Malformed("queries", "queries.jsonl", text, 3, field)


def pool_run(line: str | bytes, field: str | None) -> Malformed:
    text = POOL_RUN.encode() + (line if isinstance(line, bytes) else line.encode()) + b"\n"
    return Malformed("pool-run", "bm25.trec", text, 4, field)


def eval_run(line: str, field: str | None, name: str = "run.trec") -> Malformed:
    base = RUN if name.endswith(".trec") else jsonl({"query_id": "q01", "results": []})
    return Malformed("eval-run", name, base + line + "\n", base.count("\n") + 1, field)


def eval_golden(line: str, field: str | None, name: str = "qrels.txt") -> Malformed:
    base = QRELS if name.endswith(".txt") else jsonl(GOLDEN)
    return Malformed("golden", name, base + line + "\n", base.count("\n") + 1, field)


def pool_jsonl(record: str, field: str | None) -> Malformed:
    """A JSONL run to pool: two valid queries' results, then ``record`` (raw text)."""
    base = jsonl(
        {"query_id": "pq1", "results": [{"doc_id": "pd1", "score": 2}]},
        {"query_id": "pq2", "results": [{"doc_id": "pd2", "score": 1}]},
    )
    return Malformed("pool-run", "bm25.jsonl", base + record + "\n", 3, field)


DEEP = "[" * 1000 + "]" * 1000
NESTED_100 = "[" * 100 + "]" * 100
LONG_INT = "1" * 5000
HUGE = "9" * 400

CASES = {
    # --- tasks JSONL: ids --------------------------------------------------------------------
    "query_id holding a tab": task({"query_id": "a\tb"}, "query_id"),
    "query_id holding a newline": task({"query_id": "a\nb"}, "query_id"),
    "query_id holding NUL": task({"query_id": "a\x00b"}, "query_id"),
    "query_id holding DEL": task({"query_id": "a\x7fb"}, "query_id"),
    "query_id holding a C1 control": task({"query_id": "a\x85b"}, "query_id"),
    "query_id empty": task({"query_id": ""}, "query_id"),
    "query_id true": task({"query_id": True}, "query_id"),
    "query_id a float": task({"query_id": 1.5}, "query_id"),
    "query_id null": task({"query_id": None}, "query_id"),
    "doc_id holding a tab": candidate({"doc_id": "x\t2"}, "candidates[0].doc_id"),
    "doc_id holding a newline": candidate({"doc_id": "x\n2"}, "candidates[0].doc_id"),
    "doc_id holding a carriage return": candidate({"doc_id": "x\r2"}, "candidates[0].doc_id"),
    "doc_id holding an escape": candidate({"doc_id": "x\x1b[31m"}, "candidates[0].doc_id"),
    "doc_id empty": candidate({"doc_id": ""}, "candidates[0].doc_id"),
    "doc_id an object": candidate({"doc_id": {"id": 1}}, "candidates[0].doc_id"),
    # --- tasks JSONL: numbers --------------------------------------------------------------
    "score of 400 digits": task(
        '{"query_id": "mal-2", "query": "q", "candidates": [{"doc_id": "x", "score": '
        + HUGE
        + "}]}",
        "candidates[0].score",
    ),
    "score 1e400": task(
        '{"query_id": "mal-2", "query": "q", "candidates": [{"doc_id": "x", "score": 1e400}]}',
        "candidates[0].score",
    ),
    "score Infinity": task(
        '{"query_id": "mal-2", "query": "q", "candidates": [{"doc_id": "x", "score": Infinity}]}',
        "candidates[0].score",
    ),
    "score NaN": task(
        '{"query_id": "mal-2", "query": "q", "candidates": [{"doc_id": "x", "score": NaN}]}',
        "candidates[0].score",
    ),
    "score a string": candidate({"score": "1.0"}, "candidates[0].score"),
    "integer of 5000 digits": task('{"query_id": "mal-2", "n": ' + LONG_INT + "}", None),
    # --- tasks JSONL: structure ------------------------------------------------------------
    "JSON nested 1000 levels": task('{"query_id": "mal-2", "deep": ' + DEEP + "}", None),
    "JSON nested 100 levels": task('{"query_id": "mal-2", "deep": ' + NESTED_100 + "}", None),
    "lone high surrogate in the query": task(
        '{"query_id": "mal-2", "query": "a \\ud800 b", "candidates": [{"doc_id": "x"}]}', "query"
    ),
    "lone low surrogate in a title": task(
        '{"query_id": "mal-2", "query": "q", "candidates": [{"doc_id": "x", "title": "\\udc00"}]}',
        "candidates[0].title",
    ),
    "lone surrogate in a doc_id": task(
        '{"query_id": "mal-2", "query": "q", "candidates": [{"doc_id": "\\udbff"}]}',
        "candidates[0].doc_id",
    ),
    "title a number": candidate({"title": 7}, "candidates[0].title"),
    "candidate a string": task({"candidates": ["x1"]}, "candidates[0]"),
    "candidates an object": task({"candidates": {"doc_id": "x"}}, "candidates"),
    "doc repeated within the query": task(
        {"candidates": [{"doc_id": "x"}, {"doc_id": "x"}]}, "candidates[1].doc_id"
    ),
    "metadata a list": task({"metadata": [1]}, "metadata"),
    "slice a list": task({"slice": ["tail"]}, "slice"),
    "query empty": task({"query": "  "}, "query"),
    "line a JSON string": task('"just text"', None),
    "line a number": task("42", None),
    "line null": task("null", None),
    "trailing comma": task('{"query_id": "mal-2",}', None),
    "invalid UTF-8": Malformed(
        "tasks", "tasks.jsonl", jsonl(TASK).encode() + b'{"q": "\xc3"}\n', 2, None
    ),
    "empty tasks file": Malformed("tasks", "tasks.jsonl", "\n\n", None, None),
    # --- golden-set JSONL (importing labels) ------------------------------------------------
    "grade 10^30": golden({"judgments": {"d1": 10**30}}, "judgments.d1"),
    "grade of 400 digits": golden({"judgments": {"d1": int(HUGE)}}, "judgments.d1"),
    "grade above the project's scale": golden({"judgments": {"d1": 4}}, "judgments.d1"),
    "grade negative": golden({"judgments": {"d1": -1}}, "judgments.d1"),
    "grade 1.0": golden({"judgments": {"d1": 1.0}}, "judgments.d1"),
    "grade a string": golden({"judgments": {"d1": "1"}}, "judgments.d1"),
    "grade true": golden({"judgments": {"d1": True}}, "judgments.d1"),
    "judged doc_id holding a tab": golden({"judgments": {"d\t1": 1}}, "judgments"),
    "judged doc_id empty": golden({"judgments": {"": 1}}, "judgments"),
    "judgments a list": golden({"judgments": [["d1", 1]]}, "judgments"),
    "labelled_at year 1 at +14:00": golden(
        {"labelled_at": "0001-01-01T00:00:00+14:00"}, "labelled_at"
    ),
    "labelled_at year 9999 at -14:00": golden(
        {"labelled_at": "9999-12-31T23:59:59-14:00"}, "labelled_at"
    ),
    "labelled_at not a time": golden({"labelled_at": "yesterday"}, "labelled_at"),
    "labelled_at a number": golden({"labelled_at": 1764583262}, "labelled_at"),
    "seconds negative": golden({"seconds": -1}, "seconds"),
    "seconds of 400 digits": golden({"seconds": int(HUGE)}, "seconds"),
    "seconds a string": golden({"seconds": "41.5"}, "seconds"),
    "seconds infinite": Malformed(
        "tasks",
        "golden.jsonl",
        jsonl(GOLDEN) + '{"query_id": "g2", "query": "q", "judgments": {}, "seconds": 1e400}\n',
        2,
        "seconds",
    ),
    "status unknown": golden({"status": "maybe"}, "status"),
    "mode unknown": golden({"mode": "quick"}, "mode"),
    "answerable a string": golden({"answerable": "yes"}, "answerable"),
    "annotators a string": golden({"annotators": "ana"}, "annotators"),
    "annotator holding a newline": golden({"annotators": ["an\na"]}, "annotators[0]"),
    "judged_depth past the judgments": golden({"judged_depth": 9}, "judged_depth"),
    "first_relevant_rank zero": golden({"first_relevant_rank": 0}, "first_relevant_rank"),
    "golden query_id holding a tab": golden({"query_id": "g\t2"}, "query_id"),
    "candidates and judgments both": golden({"candidates": [{"doc_id": "x"}]}, "judgments"),
    # --- tasks CSV -----------------------------------------------------------------------------
    "CSV quote never closed": csv_rows(
        'mal-c,a query,c2,"open title,1.0', "mal-c,q,c3,t,1", line=3, field=None
    ),
    "CSV stray quote after a quoted field": csv_rows(
        'mal-c,a query,c2,"t"x,1.0', line=3, field=None
    ),
    "CSV doc_id column twice": csv_file("query_id,query,doc_id,doc_id\nm,q,a,b\n", 1, "doc_id"),
    "CSV query column twice": csv_file("query_id,query,query,doc_id\nm,q,q,a\n", 1, "query"),
    "CSV without a query_id column": csv_file("query,doc_id\nq,a\n", 1, "query_id"),
    "CSV doc_id holding a control character": csv_rows(
        "mal-c,a query,c\x012,t,1", line=3, field="doc_id"
    ),
    "CSV query_id holding DEL": csv_rows("mal\x7fc,a query,c2,t,1", line=3, field="query_id"),
    "CSV doc_id with NUL": csv_rows("mal-c,a query,c\x002,t,1", line=3, field="doc_id"),
    "CSV score 1e400": csv_rows("mal-c,a query,c2,t,1e400", line=3, field="score"),
    "CSV score nan": csv_rows("mal-c,a query,c2,t,nan", line=3, field="score"),
    "CSV score inf": csv_rows("mal-c,a query,c2,t,inf", line=3, field="score"),
    "CSV score with an underscore": csv_rows("mal-c,a query,c2,t,1_000", line=3, field="score"),
    "CSV score a word": csv_rows("mal-c,a query,c2,t,high", line=3, field="score"),
    "CSV query_id empty": csv_rows(",a query,c2,t,1", line=3, field="query_id"),
    "CSV doc_id empty": csv_rows("mal-c,a query,,t,1", line=3, field="doc_id"),
    "CSV row with too many fields": csv_rows("mal-c,a query,c2,t,1,extra", line=3, field=None),
    "CSV doc repeated after a multi-line title": csv_rows(
        'mal-c,a query,c2,"two\nlines",1', "mal-c,a query,c2,t,1", line=5, field="doc_id"
    ),
    "CSV header only": csv_file("query_id,query,doc_id\n", None, None),
    "CSV invalid UTF-8": Malformed(
        "tasks", "tasks.csv", b"query_id,query,doc_id\nm,\xff,d\n", 2, None
    ),
    # --- corpus.jsonl (goldset pool) ----------------------------------------------------------
    "corpus _id holding a tab": corpus({"_id": "d\t3", "text": "t"}, "_id"),
    "corpus _id holding a newline": corpus({"_id": "d\n3", "text": "t"}, "_id"),
    "corpus _id empty": corpus({"_id": "", "text": "t"}, "_id"),
    "corpus _id a list": corpus({"_id": ["d3"], "text": "t"}, "_id"),
    "corpus _id missing": corpus({"text": "t"}, "_id"),
    "corpus _id repeated": corpus({"_id": "pd1", "text": "again"}, "_id"),
    "corpus title a number": corpus({"_id": "pd3", "title": 3}, "title"),
    "corpus text a list": corpus({"_id": "pd3", "text": ["a"]}, "text"),
    "corpus text with a lone surrogate": corpus('{"_id": "pd3", "text": "\\ud83d"}', "text"),
    "corpus nested 1000 levels": corpus('{"_id": "pd3", "x": ' + DEEP + "}", None),
    "corpus integer of 5000 digits": corpus('{"_id": "pd3", "n": ' + LONG_INT + "}", None),
    "corpus line an array": corpus('["pd3", "text"]', None),
    "corpus not JSON": corpus("{_id: pd3}", None),
    # --- queries.jsonl (goldset pool) ----------------------------------------------------------
    "queries _id holding NUL": queries({"_id": "q\x003", "text": "t"}, "_id"),
    "queries _id holding a C1 control": queries({"_id": "q\x9f3", "text": "t"}, "_id"),
    "queries _id repeated": queries({"_id": "pq1", "text": "again"}, "_id"),
    "queries text missing": queries({"_id": "pq3"}, "text"),
    "queries text a number": queries({"_id": "pq3", "text": 3}, "text"),
    "queries slice a number": queries({"_id": "pq3", "text": "t", "slice": 1}, "slice"),
    "queries nested 100 levels": queries('{"_id": "pq3", "x": ' + NESTED_100 + "}", None),
    "queries not JSON": queries('{"_id": "pq3", "text": "t"', None),
    # --- a TREC run to pool (goldset pool --run) -----------------------------------------------
    "pooled run NaN score": pool_run("pq2 Q0 pd1 2 NaN r", "score"),
    "pooled run line of five fields": pool_run("pq2 Q0 pd1 2 0.5", "tag"),
    "pooled run doc_id with a control character": pool_run("pq2 Q0 pd\x011 2 0.5 r", "doc_id"),
    "pooled run query_id with DEL": pool_run("pq\x7f2 Q0 pd1 2 0.5 r", "query_id"),
    "pooled run doc repeated": pool_run("pq1 Q0 pd1 3 0.5 r", "doc_id"),
    "pooled run hex score": pool_run("pq2 Q0 pd1 2 0x1p3 r", "score"),
    "pooled run score a word": pool_run("pq2 Q0 pd1 2 high r", "score"),
    "pooled run invalid UTF-8": pool_run(b"pq2 Q0 pd\xfe 2 0.5 r", None),
    # --- a run to evaluate (goldset eval --db --run) -------------------------------------------
    "eval run NaN score": eval_run("q01 Q0 d3 3 nan r", "score"),
    "eval run line of four fields": eval_run("q01 Q0 d3 3", "score"),
    "eval run score 1,5": eval_run("q01 Q0 d3 3 1,5 r", "score"),
    "eval run doc repeated": eval_run("q01 Q0 d1 3 0.5 r", "doc_id"),
    "eval run JSONL doc_id holding a newline": eval_run(
        json.dumps({"query_id": "q02", "results": [{"doc_id": "d\n1", "score": 1}]}),
        "results[0].doc_id",
        name="run.jsonl",
    ),
    "eval run JSONL results an object": eval_run(
        json.dumps({"query_id": "q02", "results": {"d1": 1}}), "results", name="run.jsonl"
    ),
    "eval run JSONL score a string": eval_run(
        json.dumps({"query_id": "q02", "results": [{"doc_id": "d1", "score": "1"}]}),
        "results[0].score",
        name="run.jsonl",
    ),
    "eval run JSONL nested 1000 levels": eval_run(
        '{"query_id": "q02", "results": ' + DEEP + "}", None, name="run.jsonl"
    ),
    "eval run JSONL integer of 5000 digits": eval_run(
        '{"query_id": "q02", "results": [{"doc_id": "d", "score": ' + LONG_INT + "}]}",
        None,
        name="run.jsonl",
    ),
    "eval run JSONL query given twice": eval_run(
        json.dumps({"query_id": "q01", "results": []}), "query_id", name="run.jsonl"
    ),
    # --- a golden set to evaluate against (goldset eval --golden) ------------------------------
    "qrels grade past int64": eval_golden("q01 0 d3 99999999999999999999", "grade"),
    "qrels grade of 400 digits": eval_golden("q01 0 d3 " + HUGE, "grade"),
    "qrels grade missing": eval_golden("q01 0 d3", "grade"),
    "qrels grade missing, trailing space": eval_golden("q01 0 d3 ", "grade"),
    "qrels line of five fields": eval_golden("q01 0 d3 1 x", "grade"),
    "qrels doc_id with a control character": eval_golden("q01 0 d\x1f3 1", "doc_id"),
    "qrels doc judged twice": eval_golden("q01 0 d1 0", "doc_id"),
    "golden JSONL grade 10^30": eval_golden(
        json.dumps({"query_id": "q02", "judgments": {"d1": 10**30}}),
        "judgments.d1",
        name="golden.jsonl",
    ),
    "golden JSONL labelled_at out of range": eval_golden(
        json.dumps({"query_id": "q02", "labelled_at": "0001-01-01T00:00:00+14:00"}),
        "labelled_at",
        name="golden.jsonl",
    ),
    "golden JSONL mode unknown": eval_golden(
        json.dumps({"query_id": "q02", "mode": "fast"}), "mode", name="golden.jsonl"
    ),
    "golden JSONL query_id holding a tab": eval_golden(
        json.dumps({"query_id": "q\t2"}), "query_id", name="golden.jsonl"
    ),
    "BEIR qrels with a fourth column": Malformed(
        "golden", "qrels.tsv", "query-id\tcorpus-id\tscore\nq01\td1\t1\tx\n", 2, "score"
    ),
    "empty qrels": Malformed("golden", "qrels.txt", "# no judgements yet\n", None, None),
}

# --- issue 29: whitespace in an id, of every format a project (or eval's JSONL) reads ----------
# (and invisible format characters, with which two ids would look alike: the red team's round)
SPACES = {
    "a space": " ",
    "a tab": "\t",
    "a no-break space": "\u00a0",
    "a zero-width space": "\u200b",
    "a byte-order mark": "\ufeff",
    "a right-to-left override": "\u202e",
}


def spaced_ids(space: str) -> dict[str, Malformed]:
    """A case per id field of every format, each id holding ``space``."""
    run_line = {"query_id": "q02", "results": [{"doc_id": f"d{space}1", "score": 1}]}
    return {
        "tasks query_id": task({"query_id": f"a{space}b"}, "query_id"),
        "tasks doc_id": candidate({"doc_id": f"x{space}2"}, "candidates[0].doc_id"),
        "CSV query_id": csv_rows(f"mal{space}c,a query,c2,t,1", line=3, field="query_id"),
        "CSV doc_id": csv_rows(f"mal-c,a query,c{space}2,t,1", line=3, field="doc_id"),
        "golden query_id": golden({"query_id": f"g{space}2"}, "query_id"),
        "golden judged doc_id": golden({"judgments": {f"d{space}1": 1}}, "judgments"),
        "corpus _id": corpus({"_id": f"pd{space}3", "text": "t"}, "_id"),
        "queries _id": queries({"_id": f"pq{space}3", "text": "t"}, "_id"),
        "pooled JSONL run query_id": pool_jsonl(
            json.dumps({"query_id": f"pq{space}2", "results": []}), "query_id"
        ),
        "pooled JSONL run doc_id": pool_jsonl(
            json.dumps({"query_id": "pq3", "results": [{"doc_id": f"pd{space}1", "score": 1}]}),
            "results[0].doc_id",
        ),
        "eval JSONL run query_id": eval_run(
            json.dumps({"query_id": f"q{space}2", "results": []}), "query_id", name="run.jsonl"
        ),
        "eval JSONL run doc_id": eval_run(
            json.dumps(run_line), "results[0].doc_id", name="run.jsonl"
        ),
        "eval golden JSONL query_id": eval_golden(
            json.dumps({"query_id": f"q{space}2"}), "query_id", name="golden.jsonl"
        ),
        "eval golden JSONL judged doc_id": eval_golden(
            json.dumps({"query_id": "q02", "judgments": {f"d{space}1": 1}}),
            "judgments",
            name="golden.jsonl",
        ),
    }


for space_name, space in SPACES.items():
    for where, case in spaced_ids(space).items():
        CASES[f"{where} holding {space_name}"] = case
# In a TREC run a space or a tab separates fields: only a Unicode space can be inside an id,
# and trec_eval reads it as part of the id; a project cannot hold it.
CASES["pooled TREC run doc_id holding a no-break space"] = pool_run(
    "pq2 Q0 pd\u00a01 2 0.5 r", "doc_id"
)
CASES["pooled TREC run query_id holding an ideographic space"] = pool_run(
    "pq\u30002 Q0 pd1 2 0.5 r", "query_id"
)

# What an exported golden record carries beyond its judgments (the pool, each annotator's labels,
# a reviewer's decision) follows the same rules: a doc named only there enters the project too.
DECISION = {"reviewer": "rev", "judgments": {"d1": 1}, "answerable": True}
CASES.update(
    {
        "golden pool doc_id holding a space": golden(
            {"pool": {"order": ["d1", "d 2"], "runs": {}}}, "pool.order"
        ),
        "golden pool doc_id holding NUL": golden(
            {"pool": {"order": ["d1", "d\x002"], "runs": {}}}, "pool.order"
        ),
        "golden pool run name holding a tab": golden(
            {"pool": {"order": ["d1"], "runs": {"a\tb": ["d1"]}}}, "pool.runs"
        ),
        "golden annotator's labels under a name holding a newline": golden(
            {"labels": {"an\na": {"judgments": {"d1": 1}}}}, "labels"
        ),
        "golden decision by a reviewer holding NUL": golden(
            {"adjudication": {**DECISION, "reviewer": "r\x00v"}}, "adjudication.reviewer"
        ),
        "golden decision doc_id holding a no-break space": golden(
            {"adjudication": {**DECISION, "judgments": {"d\u00a01": 1}}}, "adjudication.judgments"
        ),
        "golden decision grade above the project's scale": golden(
            {"adjudication": {**DECISION, "judgments": {"d1": 99}}}, "adjudication.judgments.d1"
        ),
    }
)

# --- issue 29: a key given twice in one object, in every JSON format ---------------------------
CASES.update(
    {
        "tasks query_id given twice": task(
            '{"query_id": "mal-2", "query_id": "mal-3", "query": "q", "candidates": []}',
            "query_id",
        ),
        "tasks candidate doc_id given twice": task(
            '{"query_id": "mal-2", "query": "q", "candidates": [{"doc_id": "a", "doc_id": "b"}]}',
            "doc_id",
        ),
        "golden grade given twice": task(
            '{"query_id": "g2", "query": "q", "judgments": {"d1": 0, "d1": 3}}', "d1"
        ),
        "corpus _id given twice": corpus('{"_id": "pd3", "_id": "pd4", "text": "t"}', "_id"),
        "queries text given twice": queries('{"_id": "pq3", "text": "a", "text": "b"}', "text"),
        "pooled JSONL run score given twice": pool_jsonl(
            '{"query_id": "pq3", "results": [{"doc_id": "pd2", "score": 1, "score": 3}]}',
            "score",
        ),
        "eval JSONL run results given twice": eval_run(
            '{"query_id": "q02", "results": [], "results": [{"doc_id": "d1"}]}',
            "results",
            name="run.jsonl",
        ),
        "eval golden JSONL status given twice": eval_golden(
            '{"query_id": "q02", "status": "done", "status": "skipped"}',
            "status",
            name="golden.jsonl",
        ),
    }
)

# --- issue 29: pools refused once begun (the project already holds the demo set) ---------------
DEMO_DOC = "cirrus/timeutil.py#parse_duration"  # a candidate of the demo set's q01
CASES.update(
    {
        "pooled run doc in no corpus": pool_run("pq2 Q0 pd9 2 0.5 r", "doc_id"),
        "pooled run named import": Malformed("pool-run", "import.trec", POOL_RUN, None, None),
        "corpus doc of the project with another title": corpus(
            {"_id": DEMO_DOC, "title": "another title", "text": "t"}, "title"
        ),
        "queries query of the project with another text": queries(
            {"_id": "q01", "text": "another text"}, "_id"
        ),
    }
)


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def command(case: Malformed, bad: Path, db: Path) -> list[str]:
    """The goldset command that reads ``bad`` in its role, its other inputs valid."""
    folder = bad.parent / "valid"
    folder.mkdir(exist_ok=True)
    if case.role == "tasks":
        return ["import", str(bad), "--db", str(db)]
    if case.role in ("corpus", "queries", "pool-run"):
        files = {
            "corpus": write(folder / "corpus.jsonl", jsonl(*CORPUS)),
            "queries": write(folder / "queries.jsonl", jsonl(*QUERIES)),
            "pool-run": write(folder / "bm25.trec", POOL_RUN),
        }
        files[case.role] = bad
        args = ["--corpus", files["corpus"], "--queries", files["queries"]]
        return ["pool", *map(str, args), "--run", str(files["pool-run"]), "--db", str(db)]
    if case.role == "eval-run":
        return ["eval", "--db", str(db), "--run", str(bad), "--bootstrap", "0"]
    run = write(folder / "good.trec", RUN)
    return ["eval", "--golden", str(bad), "--run", str(run), "--bootstrap", "0"]


def test_catalogue_has_at_least_100_files_across_every_format():
    assert len(CASES) >= 100
    roles = {case.role for case in CASES.values()}
    assert roles == {"tasks", "corpus", "queries", "pool-run", "eval-run", "golden"}


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_file_is_refused_naming_file_line_and_field(module_demo_db, tmp_path, name):
    case = CASES[name]
    bad = write(tmp_path / case.name, case.content)
    before = project_state(module_demo_db)
    result = CliRunner().invoke(cli, command(case, bad, module_demo_db))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "Exception ignored" not in result.output
    message = result.output.strip().splitlines()
    assert len(message) == 1, result.output  # a one-line error
    where = f"{bad}:{case.line}:" if case.line else f"{bad}:"
    assert where in message[0]
    if case.field:
        assert f"field '{case.field}':" in message[0]
    else:
        assert "field '" not in message[0]
    assert project_state(module_demo_db) == before


def long_csv(rows: int, text: str = "body") -> str:
    lines = ["query_id,query,doc_id,title,text"]
    lines += [f"long,a query,doc{i},title {i},{text}" for i in range(rows)]
    return "\n".join(lines) + "\n"


VALID = {
    "a query the system returned nothing for (no candidates)": (
        "tasks.jsonl",
        jsonl({"query_id": "none", "query": "q", "candidates": []}),
    ),
    "CSV row naming a query without a candidate": ("tasks.csv", "query_id,query,doc_id\nnone,q,\n"),
    "CSV field of 200 KiB (a long document)": ("tasks.csv", long_csv(2, '"' + "x" * 200_000 + '"')),
    "CSV quoted field over several lines": ("tasks.csv", long_csv(1, '"one\ntwo, three"')),
    "CSV with 40,000 candidates for one query": ("tasks.csv", long_csv(40_000)),
    "ids holding combining marks and letters of other scripts": (
        "tasks.jsonl",
        jsonl({"query_id": "qe\u03011", "query": "q", "candidates": [{"doc_id": "d\u05d01"}]}),
    ),
    "JSON nested to the depth limit": (
        "tasks.jsonl",
        '{"query_id": "deep", "query": "q", "candidates": [{"doc_id": "d"}], "m": '
        + "[" * 60
        + "]" * 60
        + "}\n",
    ),
}


@pytest.mark.parametrize("name", list(VALID))
def test_what_the_rules_accept_is_imported(tmp_path, name):
    file_name, content = VALID[name]
    path = write(tmp_path / file_name, content)
    result = CliRunner().invoke(cli, ["import", str(path), "--db", str(tmp_path / "p.db")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("1 queries added")
