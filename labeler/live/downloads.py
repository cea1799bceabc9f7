"""Downloads: the golden set and reports as files, and uploads written to a temporary
folder (the one place the app goes through temporary files)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from eval.readers import Run, read_run
from labeler.live.figures import report_table
from labeler.store import Store

__all__ = [
    "exported",
    "golden_jsonl",
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
    return report_table(report).to_csv(index=False)


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
