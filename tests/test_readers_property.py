"""Property-based tests of the TREC parsers (eval/trec.py), with hypothesis.

Messy but valid runs and qrels (any ASCII whitespace between fields, blank lines, comments,
BOM, CRLF or CR line ends, extra run fields, numbers spelled many ways, Unicode in ids) read
the same through the plain, general and fast parsers, and give back exactly the rows that
were written. Random invalid files are refused with an InputError by all three alike, never
another exception.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldset.eval import trec, trec_arrow
from goldset.eval.columns import to_pylist
from goldset.eval.errors import InputError

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Id characters: ASCII, digits and punctuation, '#' inside, non-ASCII letters and Unicode
# spaces that are NOT field separators (no-break, em, ideographic).
ID_CHARS = st.sampled_from(list("abcxyzQ019._-/#:") + ["é", "文", "\u00a0", "\u2003", "\u3000"])
IDS = st.text(ID_CHARS, min_size=1, max_size=8).filter(lambda text: not text.startswith("#"))
SEPARATORS = st.sampled_from([" ", "\t", "  ", " \t", "\t\t", "\x0b", "\x0c", " \x0c "])
LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r"])


def score_spellings(value: float) -> list[str]:
    """Texts that read exactly as ``value`` (strtod's reading)."""
    if math.isinf(value):
        sign = "-" if value < 0 else ""
        return [f"{sign}inf", f"{sign}Infinity", f"{sign}INF", f"{sign}1e400"]
    spellings = [repr(value), f"{value:.17e}", f"{value:.17E}"]
    positive = math.copysign(1.0, value) > 0  # -0.0 is not positive
    if positive:
        spellings.append("+" + repr(value))
    if value.is_integer() and abs(value) < 1e15:
        spellings.append(("" if positive else "-") + str(abs(int(value))))
    return spellings


def grade_spellings(value: int) -> list[str]:
    spellings = [str(value)]
    if value >= 0:
        spellings += [f"+{value}", f"00{value}"]
    return spellings


@st.composite
def messy_file(draw, layout: trec.Layout) -> tuple[bytes, list[tuple[str, str, object]], bool]:
    """A valid file of ``layout``, its rows as written (query_id, doc_id, value), and whether
    it was written in the clean layout (single spaces)."""
    pairs = draw(st.lists(st.tuples(IDS, IDS), min_size=0, max_size=12, unique=True))
    clean = draw(st.booleans())  # single spaces: the layout the fast path takes
    end = draw(LINE_ENDS)
    lines, rows = [], []
    for query_id, doc_id in pairs:
        if layout.integer:
            value = draw(st.integers(-(2**63), 2**63 - 1))
            # Arrow's integers take no '+': a clean file spells grades plainly.
            text = str(value) if clean else draw(st.sampled_from(grade_spellings(value)))
        else:
            value = draw(st.floats(allow_nan=False))
            text = draw(st.sampled_from(score_spellings(value)))
        fields = {layout.names[layout.query]: query_id, layout.names[layout.doc]: doc_id}
        fields[layout.value_name] = text
        words = [
            fields.get(name, draw(st.sampled_from(["Q0", "0", "1", "run"])))
            for name in layout.names
        ]
        if not layout.exact and not clean:
            words += draw(st.lists(st.sampled_from(["x", "1.5", "#"]), max_size=2))
        if clean:
            lines.append(" ".join(words))
        else:
            gaps = [draw(SEPARATORS) for _ in words[1:]]
            line = words[0] + "".join(gap + word for gap, word in zip(gaps, words[1:], strict=True))
            lines.append(
                draw(st.sampled_from(["", " ", "\t"]))
                + line
                + draw(st.sampled_from(["", " ", "\t "]))
            )
            for _ in range(draw(st.integers(0, 1))):
                lines.append(draw(st.sampled_from(["", "   ", "# a comment", "  #q1 Q0 d 1 1 t"])))
        rows.append((query_id, doc_id, value))
    text = "".join(line + end for line in lines)
    if not clean and draw(st.booleans()):
        text = "\ufeff" + text
    return text.encode("utf-8"), rows, clean


def read_with(parser: str, data: bytes, layout: trec.Layout):
    """The parser's rows as (query_id, doc_id, value) triples, or its refusal (line, field)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.txt"
        path.write_bytes(data)
        try:
            if parser == "fast":
                first = next((line for line in data.decode("utf-8", "replace").splitlines()), "")
                rows = trec_arrow.read_fast(path, layout, first)
                if rows is None:
                    return None
            else:
                rows = (trec.read_plain if parser == "plain" else trec_arrow.read_general)(
                    path, layout
                )
        except InputError as error:
            return ("refused", error.line, error.field, error.problem)
    query_ids = rows.query_ids[rows.query_index] if len(rows.query_index) else []
    values = rows.values.tolist()
    return list(zip(list(query_ids), to_pylist(rows.doc_ids), values, strict=True))


def same_rows(found: list, written: list) -> bool:
    """Equal rows, scores compared bit for bit (-0.0 is not 0.0)."""
    return [(q, d, repr(v)) for q, d, v in found] == [(q, d, repr(v)) for q, d, v in written]


@SETTINGS
@given(messy_file(trec.RUN))
def test_messy_valid_run_reads_the_same_on_every_path(case):
    data, written, clean = case
    plain = read_with("plain", data, trec.RUN)
    assert same_rows(plain, written)
    assert read_with("general", data, trec.RUN) == plain
    fast = read_with("fast", data, trec.RUN)
    assert fast is not None or not (clean and written)  # the fast path takes clean files
    assert fast is None or same_rows(fast, written)


@SETTINGS
@given(messy_file(trec.QRELS))
def test_messy_valid_qrels_read_the_same_on_every_path(case):
    data, written, clean = case
    plain = read_with("plain", data, trec.QRELS)
    assert plain == written
    assert read_with("general", data, trec.QRELS) == plain
    fast = read_with("fast", data, trec.QRELS)
    assert fast is not None or not (clean and written)
    assert fast is None or fast == written


NOISE = st.sampled_from(
    [" ", "\t", "\n", "\r", "\x0b", "\x00", "\x1f", "\x7f", "\u0085", "\u00a0", "#", "q1", "Q0",
     "d", "0", "1", "-", "+", ".", "e", "9" * 25, "nan", "inf", "0x1p3", "1_0", "é", "\ufeff"]
)  # fmt: skip


@st.composite
def noisy_file(draw, layout: trec.Layout) -> bytes:
    """Mostly-TREC-looking noise: field-like tokens, odd characters, sometimes invalid UTF-8."""
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        words = draw(st.lists(NOISE, min_size=0, max_size=len(layout.names) + 2))
        lines.append(" ".join(words))
    data = "\n".join(lines).encode("utf-8")
    if draw(st.integers(0, 4)) == 0:
        data += draw(st.binary(min_size=1, max_size=6))
    return data


def check_noise(data: bytes, layout: trec.Layout) -> None:
    plain = read_with("plain", data, layout)  # an exception other than InputError fails here
    assert read_with("general", data, layout) == plain
    fast = read_with("fast", data, layout)
    assert fast is None or fast == plain


@SETTINGS
@given(noisy_file(trec.RUN))
def test_random_run_is_read_or_refused_alike_never_a_traceback(data):
    check_noise(data, trec.RUN)


@SETTINGS
@given(noisy_file(trec.QRELS))
def test_random_qrels_is_read_or_refused_alike_never_a_traceback(data):
    check_noise(data, trec.QRELS)


def test_the_fast_path_declines_a_file_messy_from_its_first_lines_without_parsing_it(
    tmp_path, monkeypatch
):
    def parse(*arguments):
        raise AssertionError("Arrow parsed a file the fast path could only decline")

    monkeypatch.setattr(trec_arrow, "_parsed", parse)
    clean = "q1 Q0 d1 1 2.5 t\n"
    for messy in ("q1  Q0 d1 1 2.5 t\n", "q1\tQ0 d1 1 2.5 t\n", " q1 Q0 d1 1 2.5 t\n", "\n"):
        path = tmp_path / "run.trec"
        path.write_text(messy + clean * 3)
        assert trec_arrow.read_fast(path, trec.RUN, messy) is None
        assert read_with("plain", path.read_bytes(), trec.RUN) == read_with(
            "general", path.read_bytes(), trec.RUN
        )


def test_the_fast_path_declines_an_id_with_del_or_a_c1_control_in_a_clean_layout(tmp_path):
    # Single spaces throughout: the layout check passes, and only the bytes from DEL up
    # (checked on the ids then) tell that the id is not clean.
    for odd in ("\x7f", "\u0085", "\u009f"):
        path = tmp_path / "run.trec"
        path.write_text(f"q1 Q0 d1 1 2.5 t\nq1 Q0 d{odd}2 2 1.5 t\n", encoding="utf-8")
        assert trec_arrow.read_fast(path, trec.RUN, "q1 Q0 d1 1 2.5 t") is None
        refusal = read_with("plain", path.read_bytes(), trec.RUN)
        assert refusal[:3] == ("refused", 2, "doc_id")
        assert read_with("fast", path.read_bytes(), trec.RUN) is None
    path.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 dé2 2 1.5 t\n", encoding="utf-8")
    rows = trec_arrow.read_fast(path, trec.RUN, "q1 Q0 d1 1 2.5 t")
    assert to_pylist(rows.doc_ids) == ["d1", "dé2"]  # past DEL but clean: taken


def test_the_fast_path_declines_ids_that_are_not_utf8_and_takes_ascii_ones_as_written():
    # The ids of a file whose every byte is ASCII are taken without a UTF-8 check (they are
    # UTF-8); a byte past ASCII that is not UTF-8, in a query id or a doc id, is declined by
    # the fast path and refused by the reading, on its line.
    ascii_rows = b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d1 1 0.5 t\n"
    assert read_with("fast", ascii_rows, trec.RUN) == [
        ("q1", "d1", 2.5),
        ("q1", "d2", 1.5),
        ("q2", "d1", 0.5),
    ]
    for line in (b"q1 Q0 d\xff2 2 1.5 t\n", b"q\xc3 Q0 d2 2 1.5 t\n"):
        data = b"q1 Q0 d1 1 2.5 t\n" + line
        assert read_with("fast", data, trec.RUN) is None
        refusal = read_with("plain", data, trec.RUN)
        assert refusal[:2] == ("refused", 2)
        assert read_with("general", data, trec.RUN) == refusal
