"""The run history: how a run is identified (its SHA-256) and tagged, what ``goldset eval
--record`` and the Compare page keep of a report, and the history read back as tables and
flags (:meth:`goldset.labeler.store.Store.record_eval` stores the figures; this module reads them
off the report).

>>> parse_tags("model=e5, chunking=512")
{'model': 'e5', 'chunking': '512'}
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from goldset.eval import gate
from goldset.eval.metrics import DEFAULT_METRICS
from goldset.eval.readers import Golden, Run
from goldset.eval.report import build_report
from goldset.labeler.live.dashboard import moving_apart
from goldset.labeler.live.formats import ALL, finite
from goldset.labeler.live.project import CANDIDATES, CUTOFF
from goldset.labeler.pooling import file_sha256
from goldset.labeler.store import Store

__all__ = [
    "Flag",
    "history_flags",
    "HISTORY_MISS_RISE_POINTS",
    "HISTORY_MRR_DROP",
    "history_records",
    "history_table",
    "parse_tags",
    "project_run_sha256",
    "record_report",
    "record_run",
    "run_sha256",
]


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
    return file_sha256(source)


def record_report(store: Store, report: Mapping, sha256: str, tags: Mapping[str, str]) -> int:
    """Keep a report's figures (:func:`goldset.eval.report.build_report`'s means overall and per
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


HISTORY_MISS_RISE_POINTS = 2.0  # run history: flag a miss-rate rise of more than 2 points
HISTORY_MRR_DROP = 0.05  # run history: flag an MRR@10 drop (overall or a slice) beyond this


def record_run(
    store: Store, golden: Golden, run: Run, run_sha256: str, tags: Mapping[str, str]
) -> int:
    """Keep a run's figures in the run history with its tags (as ``goldset eval --record``);
    returns the record id."""
    report = build_report(golden, run, DEFAULT_METRICS, bootstrap=0)
    return record_report(store, report, run_sha256, tags)


def project_run_sha256(store: Store, run: str) -> str:
    """The SHA-256 that identifies a run held in the project, as ``goldset eval --db
    --record`` computes it: a pooled run's file hash, or (``candidates``) the hash of the
    candidate lists as a CSV of query_id, doc_id, score."""
    if run == CANDIDATES:
        return run_sha256(store.candidate_run_frame())
    return next(pooled["sha256"] for pooled in store.status()["runs"] if pooled["name"] == run)


@dataclass(frozen=True)
class Flag:
    """Something that changed between two consecutive records of the run history."""

    record: int
    previous: int
    kind: str  # golden_changed | regression | moving_apart | warning | not_compared
    message: str


def history_table(records: Sequence[Mapping]) -> pd.DataFrame:
    """The run history as one row per record, slice (``all`` and each slice) and metric:
    DataFrame(record, recorded_at, run, golden_version, tags, slice, metric, value)."""
    rows = []
    for record in records:
        tags = ", ".join(f"{key}={value}" for key, value in record["tags"].items())
        groups = [(ALL, record["metrics"]), *record["slices"].items()]
        for slice_name, metrics in groups:
            for metric, value in metrics.items():
                rows.append(
                    (record["id"], record["recorded_at"], record["run"], record["golden_version"],
                     tags, slice_name, metric, value)
                )  # fmt: skip
    columns = ["record", "recorded_at", "run", "golden_version", "tags", "slice", "metric", "value"]
    return pd.DataFrame(rows, columns=columns)


def history_records(records: Sequence[Mapping]) -> pd.DataFrame:
    """The run history as one row per record: record, recorded_at, run, golden_version,
    tags, then each metric's mean overall (``all``) and per slice (``mrr@10 · tail``)."""
    rows = []
    for record in records:
        row = {key: record[key] for key in ("id", "recorded_at", "run", "golden_version")}
        row["tags"] = ", ".join(f"{key}={value}" for key, value in record["tags"].items())
        row.update({f"{metric} · {ALL}": value for metric, value in record["metrics"].items()})
        for name, metrics in record["slices"].items():
            row.update({f"{metric} · {name}": value for metric, value in metrics.items()})
        rows.append(row)
    return pd.DataFrame(rows).rename(columns={"id": "record"})


def history_flags(records: Sequence[Mapping]) -> list[Flag]:
    """Flags between consecutive records (oldest first): a miss-rate rise of more than 2
    points, an MRR@10 drop of more than 0.05 overall or in a slice (eval's release gate with
    those allowances), MRR@10 and hit@1 moving apart, and the gate's warnings. Records of
    different golden-set versions are never compared: that they differ is the flag."""
    flags = []
    for before, after in zip(records, records[1:], strict=False):
        flags += [
            Flag(after["id"], before["id"], kind, text) for kind, text in _changes(before, after)
        ]
    return flags


def _changes(before: Mapping, after: Mapping) -> list[tuple[str, str]]:
    """(kind, message) of what changed from one record to the next (see history_flags)."""
    if before["golden_version"] != after["golden_version"]:
        return [
            (
                "golden_changed",
                f"record #{after['id']} used golden set {after['golden_version']}, record "
                f"#{before['id']} used {before['golden_version']}: not compared",
            )
        ]
    needed = (f"mrr@{CUTOFF}", f"miss@{CUTOFF}")
    if any(not finite(r["metrics"].get(m)) for r in (before, after) for m in needed):
        return [
            ("not_compared", f"record #{after['id']} or #{before['id']} lacks MRR@10 or miss@10")
        ]
    verdict = gate.gate_on_means(
        before["metrics"],
        after["metrics"],
        before["slices"],
        after["slices"],
        max_miss_rise=HISTORY_MISS_RISE_POINTS,
        max_mrr_drop=HISTORY_MRR_DROP,
        max_slice_drop=HISTORY_MRR_DROP,
    )
    apart = moving_apart(before["metrics"], after["metrics"])
    return [
        *(("regression", reason) for reason in verdict.reasons),
        *([("moving_apart", apart)] if apart else []),
        *(("warning", warning) for warning in verdict.warnings),
    ]
