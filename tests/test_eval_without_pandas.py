"""The eval path works on arrays and never needs pandas; its output is what pandas gave.

A golden set read from a file holds its columns as arrays; the app builds one from DataFrames.
Both must give the same report, byte for byte. The CLI's text tables are laid out without
pandas, exactly as ``DataFrame.to_string`` lays out text.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from goldset.eval.compare import compare_runs
from goldset.eval.readers import Golden, read_golden, read_run
from goldset.eval.report import build_report
from goldset.labeler.cli.text import text_table

CRANFIELD = Path(__file__).parent.parent.parent / "shared" / "datasets" / "cranfield"


def golden_from_pandas(qrels_tsv: Path) -> Golden:
    """A BEIR qrels.tsv read by pandas into the two frames the app passes to Golden."""
    judgments = pd.read_csv(qrels_tsv, sep="\t", dtype={"query-id": str, "corpus-id": str})
    judgments = judgments.set_axis(["query_id", "doc_id", "grade"], axis=1)
    query_ids = judgments["query_id"].unique()
    queries = pd.DataFrame(
        {
            "query_id": query_ids,
            "query": "",
            "slice": "",
            "status": "done",
            "answerable": True,
            "mode": "",
        }
    )
    return Golden(queries, judgments.astype({"grade": "int64"}))


def test_cranfield_eval_json_equals_the_report_of_the_golden_set_read_by_pandas():
    qrels, run = CRANFIELD / "qrels.tsv", CRANFIELD / "runs" / "bm25.trec"
    done = subprocess.run(
        [sys.executable, "-m", "goldset.labeler.cli", "eval", "--golden", qrels, "--run", run]
        + ["--bootstrap", "1000", "--seed", "0", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    expected = build_report(golden_from_pandas(qrels), read_run(run), bootstrap=1000, seed=0)
    expected.pop("per_query")
    assert done.stdout == json.dumps(expected, indent=2) + "\n"


def test_golden_set_from_frames_reports_as_the_one_read_from_its_file(tmp_path: Path):
    golden_path = tmp_path / "golden.jsonl"
    records = [
        {"query_id": "a", "slice": "head", "mode": "full", "judgments": {"d1": 2, "d2": 0}},
        {"query_id": "b", "slice": "tail", "mode": "first_hit", "judgments": {"d3": 1}},
        {"query_id": "c", "slice": "", "judgments": {"d1": 0, "d4": 3}},
        {"query_id": "d", "answerable": False, "judgments": {"d1": 0}},
        {"query_id": "e", "status": "skipped"},
    ]
    golden_path.write_text("".join(json.dumps(record) + "\n" for record in records))
    baseline, candidate = tmp_path / "a.trec", tmp_path / "b.trec"
    baseline.write_text("a Q0 d2 1 2 x\na Q0 d1 2 1 x\nb Q0 d3 1 1 x\nc Q0 d4 1 1 x\n")
    candidate.write_text("a Q0 d1 1 2 y\nb Q0 d9 1 1 y\nd Q0 d1 1 1 y\n")
    from_file = read_golden(golden_path)
    from_frames = Golden(from_file.queries, from_file.judgments)
    assert from_frames.version == from_file.version
    runs = read_run(baseline), read_run(candidate)
    reports = [build_report(golden, runs[0], bootstrap=50) for golden in (from_file, from_frames)]
    assert reports[0].pop("per_query").equals(reports[1].pop("per_query"))
    assert json.dumps(reports[0]) == json.dumps(reports[1])
    comparisons = [compare_runs(golden, *runs, bootstrap=50) for golden in (from_file, from_frames)]
    assert json.dumps(comparisons[0]) == json.dumps(comparisons[1])


text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
# Labels and headers are metric names, ids and slice names: never empty, nor padded with spaces.
unpadded = text.filter(lambda value: value and value.strip() == value)


@given(
    columns=st.lists(unpadded, min_size=1, max_size=4, unique=True),
    labels=st.lists(unpadded, min_size=1, max_size=5, unique=True),
    index_name=st.sampled_from(["", "query_id"]),
    data=st.data(),
)
def test_text_table_is_laid_out_as_pandas_lays_out_text(columns, labels, index_name, data):
    rows = {label: {name: data.draw(text) for name in columns} for label in labels}
    frame = pd.DataFrame.from_dict(rows, orient="index")[columns]
    if index_name:
        frame.index.name = index_name
    assert text_table(rows, columns, index_name) == frame.to_string()
