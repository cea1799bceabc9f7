"""A small golden set (what a CI gate evaluates) is read and scored with numpy alone.

`goldset eval` on a small file must not import pyarrow or pandas (their start-up would be
most of its time), and the numpy path must give the very report the Arrow path gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldset.eval import columns, trec
from goldset.eval.columns import to_pylist
from goldset.eval.compare import compare_runs
from goldset.eval.errors import InputError
from goldset.eval.readers import read_golden, read_run
from goldset.eval.report import build_report

CRANFIELD = Path(__file__).parent.parent.parent / "shared" / "datasets" / "cranfield"

# Runs the CLI in this interpreter, then prints which heavy modules it loaded (numpy.ma:
# 12 ms, pulled in by np.unique) and how many threads it started.
CLI_THEN_MODULES = """
import sys, threading
started = []
start = threading.Thread.start
threading.Thread.start = lambda thread: (started.append(thread), start(thread))[1]
from goldset.labeler.cli import cli
try:
    cli(sys.argv[1:])
except SystemExit as done:
    assert done.code in (0, None), done.code
heavy = ("pyarrow", "pandas", "streamlit", "sqlite_utils", "sqlite3", "numpy.ma",
         "goldset.labeler.cli.project", "goldset.labeler.cli.team", "goldset.labeler.cli.judges")
         # other commands
print("MODULES " + " ".join(sorted(name for name in heavy if name in sys.modules)))
print(f"THREADS {len(started)}")
"""


def fresh_interpreter(code: str, *arguments: str | Path) -> list[str]:
    """The lines that ``code`` prints, run with these arguments in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()


def cli_footprint(*arguments: str | Path) -> tuple[list[str], int]:
    """The heavy modules that a `goldset` command line loads, and how many threads it
    starts, run in a fresh interpreter."""
    modules, threads = fresh_interpreter(CLI_THEN_MODULES, *arguments)[-2:]
    assert modules.startswith("MODULES") and threads.startswith("THREADS")
    return modules.split()[1:], int(threads.split()[1])


def test_eval_of_a_small_golden_set_imports_neither_pyarrow_nor_pandas_nor_starts_a_thread():
    qrels, run = CRANFIELD / "qrels.tsv", CRANFIELD / "runs" / "bm25.trec"
    loaded = cli_footprint("eval", "--golden", qrels, "--run", run, "--json")
    assert loaded == ([], 0)


# Run in a fresh interpreter after the ``goldset`` console script's entry point
# (``goldset.labeler.cli:main``, or ``cli`` run in-process as a test runs it): whether the cycle
# collector runs, and whether glibc's malloc maps a 64 MiB block on its own (its default)
# rather than carving it from memory it keeps.
PROCESS_STATE_AFTER = """
import atexit, ctypes, gc, sys

class MallocInfo(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split())]

def report():
    import numpy as np
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = MallocInfo
    block = np.ones(1 << 26, dtype=np.uint8)
    print("STATE", gc.isenabled(), mallinfo2().hblkhd >= block.nbytes)

atexit.register(report)
entry, sys.argv = sys.argv[1], ["goldset", *sys.argv[2:]]
from goldset.labeler.cli import cli, main
if entry == "main":
    main()
else:
    from click.testing import CliRunner
    assert CliRunner().invoke(cli, sys.argv[1:]).exit_code == 0
"""


def process_state_after(*arguments: str | Path, entry: str = "main") -> tuple[bool, bool]:
    """(collector running, large blocks mapped apart) once ``goldset`` ran these arguments."""
    state = fresh_interpreter(PROCESS_STATE_AFTER, entry, *arguments)[-1].split()
    assert state[0] == "STATE"
    return state[1] == "True", state[2] == "True"


def test_an_eval_pauses_the_collector_and_keeps_freed_memory_other_commands_change_neither():
    qrels, run = CRANFIELD / "qrels.tsv", CRANFIELD / "runs" / "bm25.trec"
    assert process_state_after("eval", "--golden", qrels, "--run", run, "--json") == (False, False)
    cost = ["--queries", "40", "--docs-per-query", "4", "--seconds", "9", "--rate", "60"]
    assert process_state_after("cost", *cost) == (True, True)


def test_cli_run_in_process_leaves_the_collector_and_malloc_as_they_were():
    qrels, run = CRANFIELD / "qrels.tsv", CRANFIELD / "runs" / "bm25.trec"
    arguments = ["eval", "--golden", qrels, "--run", run, "--json"]
    assert process_state_after(*arguments, entry="cli") == (True, True)


def test_compare_of_small_runs_with_a_gate_imports_neither_pyarrow_nor_pandas(tmp_path: Path):
    qrels, runs = CRANFIELD / "qrels.tsv", CRANFIELD / "runs"
    arguments = ["compare", "--golden", qrels, "--baseline", runs / "bm25.trec"]
    arguments += ["--candidate", runs / "tfidf-title.trec", "--bootstrap", "200", "--json"]
    assert cli_footprint(*arguments) == ([], 0)


def test_a_small_run_of_long_ids_is_read_without_arrow(tmp_path: Path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    doc = "corpus/section-{:04d}/document-{:012d}.html"
    qrels.write_text("".join(f"topic-{q:08d}-en 0 {doc.format(q, 0)} 1\n" for q in range(200)))
    lines = (
        f"topic-{q:08d}-en Q0 {doc.format(q, d)} {d + 1} {100 - d} bm25-run-long-tag\n"
        for q in range(200)
        for d in range(100)
    )
    run.write_text("".join(lines))  # 20,000 lines but 1.9 MiB: its size alone would say Arrow
    loaded = cli_footprint("eval", "--golden", qrels, "--run", run, "--json")
    assert loaded == ([], 0)


# Every module imported for the first time on a thread other than the main one, by a
# `goldset` command run in a fresh interpreter.
WORKER_IMPORTS = """
import sys, threading

first_imports = []

class Recorder:  # asked first for every module not imported yet
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is not threading.main_thread():
            first_imports.append(name)

sys.meta_path.insert(0, Recorder())
sys.argv = ["goldset", *sys.argv[1:]]
from goldset.labeler.cli import main
try:
    main()
finally:
    print("WORKER_IMPORTS", *first_imports)
"""


def test_a_large_eval_makes_no_first_import_on_its_threads(tmp_path: Path):
    # Two threads making a module's first import at once can meet it half-initialised
    # (CPython 3.11): it failed 1 eval of a 200,000-line messy run in about 100. What eval's
    # threads use is imported before they start (eval.threads.ready_for_threads).
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text("".join(f"q{q} 0 d{q} 1\n" for q in range(800)))
    for messy in (False, True):  # Arrow's fast path, or its general parser
        space = "  " if messy else " "
        lines = (f"q{q}{space}Q0 d{d} {d + 1} {100 - d} t\n" for q in range(800) for d in range(99))
        run.write_text("".join(lines))
        arguments = ["eval", "--golden", qrels, "--run", run, "--json"]
        assert fresh_interpreter(WORKER_IMPORTS, *arguments)[-1] == "WORKER_IMPORTS"


def test_a_large_run_is_read_and_ranked_on_two_threads(tmp_path: Path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text("".join(f"q{q} 0 d{q} 1\n" for q in range(800)))
    lines = (f"q{q} Q0 d{d} {d + 1} {100 - d} t\n" for q in range(800) for d in range(100))
    run.write_text("".join(lines))  # 80,000 lines: read by Arrow, which frees the GIL
    loaded, threads = cli_footprint("eval", "--golden", qrels, "--run", run, "--json")
    assert "pyarrow" in loaded and threads > 0


def test_numpy_and_arrow_paths_give_the_same_reports_on_cranfield():
    qrels, runs = CRANFIELD / "qrels.tsv", CRANFIELD / "runs"
    reports = {}
    for parser in ("plain", "fast"):
        golden = read_golden(qrels, parser=parser)
        baseline = read_run(runs / "bm25.trec", parser=parser)
        candidate = read_run(runs / "tfidf-title.trec", parser=parser)
        report = build_report(golden, baseline, bootstrap=200, frame=False)
        values = report.pop("per_query")
        comparison = compare_runs(golden, baseline, candidate, bootstrap=200)
        reports[parser] = (json.dumps(report), values.values.tolist(), json.dumps(comparison))
    assert isinstance(read_run(runs / "bm25.trec", parser="plain").doc_ids, np.ndarray)
    assert not isinstance(read_run(runs / "bm25.trec", parser="fast").doc_ids, np.ndarray)
    assert reports["plain"] == reports["fast"]


# Pieces of TREC lines, the awkward ones included (each now and then): every ASCII separator,
# a no-break space, a NEL and a DEL (an id's, for the reading; NEL is whitespace to str.split),
# '#' inside an id and at the start of a line, grades and scores in every spelling, int64 + 1.
ODD_FIELDS = ["d\xa03", "d\x854", "d\x7f5", "#c"]
FIELD = st.sampled_from(["q1", "q2", "d1", "d#2", "é", "Q0"] * 4 + ODD_FIELDS)
GRADE = st.sampled_from(["0", "1", "+2", "-1", "007"])
SCORE = st.sampled_from(["1", "-2", "1.5", ".5", "5.", "1e400", "-inf", "Infinity"])
ODD_VALUE = st.sampled_from(["nan", "0x1p3", "1_0", "٣", "9223372036854775808", "x"])
SEPARATOR = st.sampled_from([" ", "\t", "  ", "\x0b", "\x0c", " \x0c "])
LINE_END = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def trec_text(draw: st.DrawFn, layout: trec.Layout) -> bytes:
    """A small file mostly of the layout's lines (some a field short or long, some with an
    odd value), with blank lines and comments."""
    needed = len(layout.names)
    lines = ["query-id\tcorpus-id\tscore\n"] if layout.header else []
    for _ in range(draw(st.integers(0, 6))):
        count = draw(st.sampled_from([needed] * 8 + [needed - 1, needed + 1]))
        fields = draw(st.lists(FIELD, min_size=count, max_size=count))
        if layout.value < count:
            value = GRADE if layout.integer else SCORE
            fields[layout.value] = draw(st.one_of(*[value] * 8, ODD_VALUE))
        gaps = [draw(SEPARATOR) for _ in fields[1:]]
        line = fields[0] + "".join(gap + field for gap, field in zip(gaps, fields[1:], strict=True))
        lines.append(draw(st.sampled_from(["", "", " ", "# note "])) + line + draw(LINE_END))
        if draw(st.integers(0, 3)) == 0:
            lines.append(draw(st.sampled_from(["", "   ", "#q1 Q0 d 1 1 t"])) + draw(LINE_END))
    return "".join(lines).encode()


def read_by(reader, data: bytes, layout: trec.Layout):
    """The reader's rows as (query_id, doc_id, value text, line), or its refusal."""
    try:
        rows = reader(data, layout)
    except InputError as error:
        return ("refused", error.line, error.field)
    if rows is None:
        return None
    query_ids = rows.query_ids[rows.query_index].tolist()
    lines = [rows.line(row) for row in range(len(rows.values))]
    values = [repr(value) for value in rows.values.tolist()]
    return list(zip(query_ids, to_pylist(rows.doc_ids), values, lines, strict=True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([trec.RUN, trec.QRELS, trec.BEIR_QRELS]).flatmap(
        lambda layout: st.tuples(st.just(layout), trec_text(layout))
    ),
    # Blocks of a line or so each, as well as the whole file in one block.
    st.sampled_from([1, 12, 40, trec.QUICK_BLOCK_BYTES]),
)
def test_quick_pass_reads_every_file_it_takes_as_the_line_by_line_loop(case, block_bytes):
    layout, data = case
    quick = read_by(partial(trec.read_quick, block_bytes=block_bytes), data, layout)
    by_line = read_by(lambda data, layout: trec.read_lines(data, layout, "f"), data, layout)
    assert quick is None or quick == by_line


def test_quick_pass_takes_a_clean_run_and_leaves_a_comment_to_the_loop():
    clean = b"q1 Q0 d#1 1 2.5 t\r\nq1\tQ0\td2\t2\t-inf\tt extra\n\nq2 Q0 d1 1 .5 t"
    rows = trec.read_quick(clean, trec.RUN)
    assert rows.query_ids.tolist() == ["q1", "q2"]
    assert to_pylist(rows.doc_ids) == ["d#1", "d2", "d1"]
    assert rows.values.tolist() == [2.5, float("-inf"), 0.5]
    assert rows.lines.tolist() == [1, 2, 4]
    assert trec.read_quick(b"# a comment\n" + clean, trec.RUN) is None
    by_line_blocks = trec.read_quick(clean, trec.RUN, block_bytes=1)  # a block per line
    assert read_by(trec.read_quick, clean, trec.RUN) == read_by(
        lambda data, layout: by_line_blocks, clean, trec.RUN
    )
    beir = b"\n  \nquery-id corpus-id score\nq1 d1 1\n\nq1 d2 0\nq2 d1 2\n"
    for block_bytes in (1, 5, 1 << 16):  # the header is skipped in whichever block it stands
        rows = trec.read_quick(beir, trec.BEIR_QRELS, block_bytes=block_bytes)
        assert rows.query_ids.tolist() == ["q1", "q2"] and rows.query_index.tolist() == [0, 0, 1]
        assert rows.values.tolist() == [1, 0, 2] and rows.lines.tolist() == [4, 6, 7]


def test_concurrently_gives_results_in_order_and_raises_the_first_failure_in_order():
    from goldset.eval.threads import concurrently

    def fail(message: str):
        raise InputError("f", 1, None, message)

    for threads in (True, False):
        assert concurrently(lambda: 1, lambda: "two", threads=threads) == [1, "two"]
        with pytest.raises(InputError, match="second"):
            concurrently(lambda: 1, lambda: fail("second"), lambda: fail("third"), threads=threads)


def test_jsonl_files_give_the_same_report_held_by_numpy_or_by_arrow(tmp_path, monkeypatch):
    golden_path, run_path = tmp_path / "golden.jsonl", tmp_path / "run.jsonl"
    with golden_path.open("w") as golden, run_path.open("w") as run:
        for query in range(40):
            judged = {f"d{query * 7 + i}": (query + i) % 3 for i in range(6)}
            golden.write(json.dumps({"query_id": f"q{query}", "mode": "full", "judgments": judged}))
            results = [{"doc_id": f"d{query * 7 + i}", "score": (i * 7) % 5} for i in range(8)]
            run.write(json.dumps({"query_id": f"q{query}", "results": results}) + "\n")
            golden.write("\n")
    reports, kinds = [], []
    for arrow_rows in (10, 10**9):  # a "large" file (held by Arrow), then a small one
        monkeypatch.setattr(columns, "ARROW_ROWS", arrow_rows)
        golden, run = read_golden(golden_path), read_run(run_path)
        kinds.append((type(golden.judgment_column("doc_id")), type(run.doc_ids)))
        report = build_report(golden, run, bootstrap=50, frame=False)
        values = report.pop("per_query").values.tolist()
        reports.append((json.dumps(report), values))
    assert kinds[0][0] is not np.ndarray and kinds[1] == (np.ndarray, np.ndarray)
    assert reports[0] == reports[1]


def test_the_cli_sets_how_numpy_openblas_and_arrow_use_the_machine_unless_the_user_did():
    probe = (
        "import os, labeler.cli, numpy, pyarrow; "
        "print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['NUMPY_MADVISE_HUGEPAGE'], "
        "pyarrow.default_memory_pool().backend_name)"
    )
    ours = {"OPENBLAS_NUM_THREADS", "NUMPY_MADVISE_HUGEPAGE", "ARROW_DEFAULT_MEMORY_POOL"}
    clean = {name: value for name, value in os.environ.items() if name not in ours}

    def settings(**chosen: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", probe], env={**clean, **chosen}, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    # jemalloc on Linux only (pyarrow's wheels elsewhere may lack it): there, Arrow's default.
    threads, huge_pages, pool = settings()
    assert (threads, huge_pages) == ("1", "0")
    assert pool == "jemalloc" or not sys.platform.startswith("linux")
    chosen = {"OPENBLAS_NUM_THREADS": "2", "ARROW_DEFAULT_MEMORY_POOL": "system"}
    assert settings(**chosen) == ["2", "0", "system"]
