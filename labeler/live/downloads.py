"""Downloads: the golden set and reports as files, and uploads written to a temporary
folder (the one place the app goes through temporary files)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from goldset.eval.readers import Run, read_run
from goldset.labeler.live.figures import report_table
from goldset.labeler.store import Store

__all__ = [
    "FORMULA_STARTS",
    "exported",
    "golden_jsonl",
    "inert_cell",
    "inert_csv",
    "golden_qrels",
    "read_uploaded_run",
    "report_csv",
    "report_json",
    "saved_uploads",
    "uploaded_file",
]


def read_uploaded_run(file_name: str, data: bytes) -> Run:
    """Read a run file uploaded from the browser (TREC or JSONL; its name's stem names the
    run). Raises ValueError (an InputError naming the line and field for bad content)."""
    with saved_uploads((file_name, data)) as [path]:
        return read_run(path)


def golden_jsonl(store: Store) -> bytes:
    """The golden set as JSONL, as ``goldset export --format jsonl`` writes it."""
    return exported(store.write_jsonl)


def golden_qrels(store: Store) -> bytes:
    """The golden set as TREC qrels, as ``goldset export --format qrels`` writes it."""
    return exported(store.write_qrels)


def report_json(report: Mapping) -> str:
    """A metrics report as JSON (the ``goldset eval --json`` object)."""
    return json.dumps({key: value for key, value in report.items() if key != "per_query"}, indent=2)


def report_csv(report: Mapping) -> str:
    """A metrics report as CSV: one row per slice and metric (see :func:`report_table`)."""
    return inert_csv(report_table(report))


# A spreadsheet evaluates a cell that starts with one of these (OWASP's CSV injection rule):
# ``=HYPERLINK(...)`` in a slice name would become a live link, ``@SUM(...)`` a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(value: object) -> object:
    """``value`` as a spreadsheet shows it but never evaluates: text starting with one of
    :data:`FORMULA_STARTS` gets a leading ``'``. Anything else, numbers included, is
    returned as it is: a number is not text, so ``-0.05`` stays the number -0.05, while the
    text ``"-0.05"`` (a slice so named, say) becomes ``'-0.05`` like any text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def inert_csv(frame: pd.DataFrame) -> str:
    """``frame`` as CSV (without its index) whose text cells and column names are inert
    (:func:`inert_cell`); numeric columns are written as numbers. Every CSV goldset writes
    goes through it. Rows end in CRLF (RFC 4180), so that a cell holding a carriage return
    is quoted, not split into two rows."""
    columns = {
        position: column if pd.api.types.is_numeric_dtype(column) else column.map(inert_cell)
        for position, (_, column) in enumerate(frame.items())
    }
    inert = pd.DataFrame(columns, index=frame.index)
    inert.columns = [inert_cell(name) for name in frame.columns]
    return inert.to_csv(index=False, lineterminator="\r\n")


def uploaded_file(folder: str, file_name: str, data: bytes) -> Path:
    """Write uploaded bytes to ``folder`` under the upload's own file name."""
    name = Path(file_name).name  # never a directory from the browser
    if name in ("", ".", ".."):
        raise ValueError(f"{file_name!r} is not a file name")
    path = Path(folder) / name
    path.write_bytes(data)
    return path


@contextmanager
def saved_uploads(*uploads: tuple[str, bytes] | None) -> Iterator[list[Path | None]]:
    """Uploads (file name, bytes) written to a temporary folder under their own names, for
    readers that take a path (errors then name the user's file); None stays None. The folder
    is removed on leaving."""
    with tempfile.TemporaryDirectory() as folder:
        yield [None if upload is None else uploaded_file(folder, *upload) for upload in uploads]


def exported(write: Callable[[Path], object], name: str = "export") -> bytes:
    """The bytes that ``write(path)`` writes (an export to a file), through a temporary file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        write(path)
        return path.read_bytes()
