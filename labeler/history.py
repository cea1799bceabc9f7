"""The run history: how a run is identified (its SHA-256) and tagged, and what ``goldset eval
--record`` and the Compare page keep of a report (:meth:`labeler.store.Store.record_eval`
stores the figures; this module reads them off the report).

>>> parse_tags("model=e5, chunking=512")
{'model': 'e5', 'chunking': '512'}
>>> run_sha256(b"q1 Q0 d1 1 2.0 bm25\\n")[:12]
'1754456ac7f4'
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # the store imports pooling, which hashes runs with this module
    from labeler.store import Store


def parse_tags(tags: str | Iterable[str]) -> dict[str, str]:
    """Tags as ``{key: value}``, from ``"model=e5, chunking=512"`` (the page's text field) or
    from ``("model=e5", "chunking=512")`` (the CLI's repeated ``--tag``); raises ValueError
    naming a part that is not KEY=VALUE."""
    parts = tags.split(",") if isinstance(tags, str) else tags
    parsed = {}
    for part in filter(None, (piece.strip() for piece in parts)):
        key, separator, value = part.partition("=")
        if not separator or not key.strip():
            raise ValueError(f"tag {part!r} is not KEY=VALUE")
        parsed[key.strip()] = value.strip()
    return parsed


def run_sha256(source: str | Path | bytes | pd.DataFrame) -> str:
    """The SHA-256 that identifies a run: of a file's bytes (a path), of an upload's bytes,
    or, for a run held in the project (no file), of its frame as CSV."""
    if isinstance(source, pd.DataFrame):
        return hashlib.sha256(source.to_csv(index=False).encode()).hexdigest()
    if isinstance(source, bytes):
        return hashlib.sha256(source).hexdigest()
    digest = hashlib.sha256()
    with Path(source).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_report(store: Store, report: Mapping, sha256: str, tags: Mapping[str, str]) -> int:
    """Keep a report's figures (:func:`eval.report.build_report`'s means overall and per
    slice, and its query accounting) in the run history with the run's hash and tags;
    returns the record id."""
    return store.record_eval(
        run=report["run"],
        run_sha256=sha256,
        golden_version=report["golden_version"],
        tags=tags,
        queries=report["queries"],
        metrics={spec: entry["mean"] for spec, entry in report["metrics"].items()},
        slices={
            name: {spec: entry["mean"] for spec, entry in data["metrics"].items()}
            for name, data in report["slices"].items()
        },
    )
