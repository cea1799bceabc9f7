"""Downloads: the golden set and reports as files, and uploads written to a temporary
folder (the one place the app goes through temporary files)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path

from eval.readers import Run, read_run
from labeler.live.figures import report_table
from labeler.store import Store


def read_uploaded_run(file_name: str, data: bytes) -> Run:
    """Read a run file uploaded from the browser (TREC or JSONL; its name's stem names the
    run). Raises ValueError (an InputError naming the line and field for bad content)."""
    with tempfile.TemporaryDirectory() as folder:
        return read_run(uploaded_file(folder, file_name, data))


def golden_jsonl(store: Store) -> bytes:
    """The golden set as JSONL, as ``goldset export --format jsonl`` writes it."""
    return _exported(store.write_jsonl)


def golden_qrels(store: Store) -> bytes:
    """The golden set as TREC qrels, as ``goldset export --format qrels`` writes it."""
    return _exported(store.write_qrels)


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


def _exported(write) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export"
        write(path)
        return path.read_bytes()
