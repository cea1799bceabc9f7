"""``goldset compare --gate`` where CI looks: exit codes per verdict, JUnit XML read by
junitparser, Markdown for GitHub's job summary, and no failure on noise (issue 27)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import junitparser
import pytest
from click.testing import CliRunner
from helpers.trec_formats import read_qrels_dict

from goldset.labeler.cli import cli
from goldset.labeler.cli.gate_output import markdown

QUERY_IDS = [f"q{i:03d}" for i in range(100)]


def golden_file(path: Path, slice_of=lambda i: "head" if i < 50 else "tail") -> Path:
    """100 answerable queries, each with one relevant doc "hit"; half head, half tail."""
    records = (
        {"query_id": query_id, "slice": slice_of(i), "judgments": {"hit": 1}}
        for i, query_id in enumerate(QUERY_IDS)
    )
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def run_file(path: Path, ranks: dict[str, int | None]) -> Path:
    """Each query finds "hit" at its rank (None: not in the top 10; absent: rank 1)."""
    lines = []
    for query_id in QUERY_IDS:
        rank = ranks.get(query_id, 1)
        docs = [f"other{n}" for n in range(11)]
        docs.insert(10 if rank is None else rank - 1, "hit")
        if rank is None:
            docs = docs[:10] + ["x"] + docs[10:]
        lines += [f"{query_id} Q0 {doc} {n} {100 - n} run" for n, doc in enumerate(docs, 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def gate(tmp_path: Path, candidate_ranks: dict, *options: str, golden: Path | None = None):
    golden = golden or golden_file(tmp_path / "golden.jsonl")
    baseline = run_file(tmp_path / "old.trec", {})
    candidate = run_file(tmp_path / "new.trec", candidate_ranks)
    args = ["compare", "--golden", golden, "--baseline", baseline, "--candidate", candidate]
    return CliRunner().invoke(cli, [*map(str, args), "--gate", *options])


REGRESSION = {f"q{i:03d}": None for i in range(0, 100, 7)}  # 15 new misses, both slices
NOISE = {"q000": 2, "q051": 2}  # two queries from rank 1 to 2


# --- exit codes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ranks", "options", "exit_code", "verdict"),
    [
        ({}, (), 0, "PASSED"),
        (REGRESSION, (), 1, "FAILED"),
        (NOISE, (), 3, "INCONCLUSIVE"),
        (NOISE, ("--inconclusive", "pass"), 0, "INCONCLUSIVE"),
        (NOISE, ("--inconclusive", "fail"), 1, "INCONCLUSIVE"),
        (REGRESSION, ("--inconclusive", "pass"), 1, "FAILED"),
    ],
)
def test_gate_exit_code_says_the_verdict(tmp_path, ranks, options, exit_code, verdict):
    result = gate(tmp_path, ranks, *options)
    assert result.exit_code == exit_code, result.output
    assert f"gate: {verdict}" in result.output


def test_json_and_another_format_are_refused_as_a_usage_error(tmp_path):
    result = gate(tmp_path, {}, "--json", "--format", "junit")
    assert result.exit_code == 2
    assert "--json and --format junit ask for two formats" in result.output


def test_json_alias_and_format_json_print_the_same(tmp_path):
    by_alias = gate(tmp_path, NOISE, "--json")
    by_format = gate(tmp_path, NOISE, "--format", "json")
    assert by_alias.stdout == by_format.stdout
    verdict = json.loads(by_alias.stdout)["gate"]
    assert (verdict["schema"], verdict["verdict"]) == ("goldset.gate/1", "inconclusive")


def test_a_p_value_at_its_floor_prints_as_an_inequality(tmp_path):
    result = gate(tmp_path, REGRESSION, "--bootstrap", "999")
    row = next(line for line in result.output.splitlines() if line.startswith("miss@10"))
    assert "< 0.001 " in row + " "  # the randomization p-value: 1 / (999 + 1)
    assert " 0.0010" not in row


# --- JUnit XML ------------------------------------------------------------------------------------


def junit_cases(tmp_path: Path, ranks: dict, *options: str) -> dict[str, junitparser.TestCase]:
    result = gate(tmp_path, ranks, "--format", "junit", *options)
    report = tmp_path / "gate.xml"
    report.write_text(result.stdout)
    xml = junitparser.JUnitXml.fromfile(str(report))
    suites = list(xml)
    assert len(suites) == 1
    return {case.name: case for case in suites[0]}


def test_junit_has_a_test_case_per_rule_and_slice_with_the_reason_as_failure(tmp_path):
    cases = junit_cases(tmp_path, REGRESSION)
    assert set(cases) == {"miss@10", "mrr@10", "slice head: mrr@10", "slice tail: mrr@10"}
    (failure,) = cases["miss@10"].result
    assert isinstance(failure, junitparser.Failure)
    assert failure.message.startswith("miss@10 rose by 15.00 points")
    assert failure.message.endswith("15 new misses (head 8, tail 7)")
    assert all(case.classname == "goldset.gate" for case in cases.values())


def test_junit_marks_an_undecided_rule_skipped_or_failed_as_the_team_chose(tmp_path):
    cases = junit_cases(tmp_path, NOISE)
    (skipped,) = cases["mrr@10"].result
    assert isinstance(skipped, junitparser.Skipped)
    assert "cannot tell yet" in skipped.message
    assert cases["miss@10"].result == []  # kept: passed
    strict = junit_cases(tmp_path, NOISE, "--inconclusive", "fail")
    assert isinstance(strict["mrr@10"].result[0], junitparser.Failure)


def test_junit_suite_counts_match_its_cases_and_carry_what_the_schema_requires(tmp_path):
    result = gate(tmp_path, NOISE, "--format", "junit")
    report = tmp_path / "gate.xml"
    report.write_text(result.stdout)
    xml = junitparser.JUnitXml.fromfile(str(report))
    (suite,) = list(xml)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (4, 0, 0, 1)
    assert (xml.tests, xml.failures, xml.errors) == (4, 0, 0)
    # Jenkins' junit-10.xsd: a suite's name and tests; a case's name, classname and time.
    assert suite.name.startswith("goldset gate: new vs old") and suite.time == 0
    assert all(case.name and case.classname and case.time == 0 for case in suite)


# --- Markdown -------------------------------------------------------------------------------------


def markdown_table(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header row starts with ``header``, as cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} "))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_markdown_gives_the_verdict_the_rules_table_and_the_new_misses(tmp_path):
    result = gate(tmp_path, REGRESSION, "--format", "markdown")
    report = json.loads(gate(tmp_path, REGRESSION, "--json").stdout)
    text = result.stdout
    assert text.startswith("## Release gate: ❌ fail\n")
    rows = markdown_table(text, "rule")
    assert len(rows) == len(report["gate"]["rules"]) == 4
    for row, rule in zip(rows, report["gate"]["rules"], strict=True):
        assert row[0].startswith(rule["name"].replace(":", "\\:").replace("@", "\\@"))
        assert row[3].endswith(rule["status"])
        assert row[1] == (
            f"{rule['delta']:+.2f} pts" if rule["units"] == "points" else f"{rule['delta']:+.4f}"
        )
    assert "**New misses (a relevant doc in the top 10 before, none now): 15**" in text
    assert "- q000 (head): rank 1 → none" in text


def test_markdown_escapes_data_so_it_never_becomes_markup():
    hostile = "<img src=x onerror=alert(1)> [x](http://e.vil) @team #1 **b** | c"
    result = {
        "baseline": hostile,
        "candidate": "new",
        "golden_version": "v",
        "metrics": {},
        "changed_queries": {
            "new_misses": [
                {"query_id": hostile, "slice": "", "baseline_rank": 1, "candidate_rank": None}
            ],
            "new_hits": [],
            "worse": [],
            "better": [],
        },
        "gate": {"verdict": "pass", "rules": [], "warnings": []},
    }
    text = markdown(result)
    assert "<img" not in text and "&lt;img src=x onerror=alert\\(1\\)&gt;" in text
    assert "[x](http" not in text and "\\[x\\]\\(http\\:" in text
    assert not re.search(r"(?<!\\)[@#*|]", text.split("\n")[2])  # each one escaped
    assert "\\@team \\#1 \\*\\*b\\*\\* \\| c" in text


# --- noise is not a regression --------------------------------------------------------------------


def two_swaps(cranfield_dir: Path, path: Path) -> tuple[Path, list[str]]:
    """bm25 with ranks 1 and 2 swapped in the first two queries whose rank 1 is relevant and
    rank 2 is not: MRR@10 falls by 2 × 0.5 / 225."""
    qrels = read_qrels_dict(cranfield_dir / "qrels.tsv")
    lines = (cranfield_dir / "runs" / "bm25.trec").read_text().splitlines()
    by_query: dict[str, list[list[str]]] = {}
    for line in lines:
        fields = line.split()
        by_query.setdefault(fields[0], []).append(fields)
    swapped = []
    for query_id, rows in by_query.items():
        first, second = rows[0][2], rows[1][2]
        judged = qrels.get(query_id, {})
        if len(swapped) < 2 and judged.get(first, 0) > 0 and judged.get(second, 0) <= 0:
            rows[0][4], rows[1][4] = rows[1][4], rows[0][4]
            swapped.append(query_id)
    path.write_text("".join(" ".join(row) + "\n" for rows in by_query.values() for row in rows))
    return path, swapped


def test_cranfield_two_swaps_are_not_a_failure(cranfield_dir, tmp_path):
    candidate, swapped = two_swaps(cranfield_dir, tmp_path / "swapped.trec")
    args = ["compare", "--golden", cranfield_dir / "qrels.tsv"]
    args += ["--baseline", cranfield_dir / "runs" / "bm25.trec", "--candidate", candidate]
    result = CliRunner().invoke(cli, [*map(str, args), "--gate", "--json"])
    report = json.loads(result.stdout)
    assert len(swapped) == 2
    assert report["metrics"]["mrr@10"]["delta"] == pytest.approx(-1 / 225)
    assert report["gate"]["verdict"] == "inconclusive"
    assert result.exit_code == 3
    mrr = next(rule for rule in report["gate"]["rules"] if rule["name"] == "mrr@10")
    assert mrr["status"] == "undecided" and mrr["more_queries"] > 225
