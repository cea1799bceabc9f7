"""The dashboard's figures as JSON, to keep them in the project database between server lives.

Only the figures' own types are rebuilt (frames, the dashboard's dataclasses, plain JSON):
a project file is data, so reading it back never runs code (no pickle).
"""

from __future__ import annotations

import dataclasses
import json

import pandas as pd

from goldset.eval import cost
from goldset.labeler.live.dashboard import Alert, Dashboard, Snapshot
from goldset.labeler.live.planning import CostSummary, QueriesNeeded

_KINDS = (Dashboard, Snapshot, Alert, QueriesNeeded, CostSummary, cost.Cost, cost.MeasuredCost)
KEPT_TYPES = {kind.__name__: kind for kind in _KINDS}


def figures_json(figures: Dashboard) -> str:
    """``figures`` as one JSON text (:func:`figures_from_json` reads it back, equal)."""
    return json.dumps(_encoded(figures))


def figures_from_json(text: str) -> Dashboard:
    """The figures that :func:`figures_json` wrote."""
    return json.loads(text, object_hook=_decoded)


def _encoded(value: object) -> object:
    """``value`` as JSON-able objects: frames and the kept dataclasses tagged by kind."""
    if isinstance(value, pd.DataFrame):
        columns = {name: value[name] for name in value.columns}
        return {
            "__frame__": [str(name) for name in value.columns],
            "dtypes": [str(column.dtype) for column in columns.values()],
            "data": [_column(column) for column in columns.values()],
        }
    if dataclasses.is_dataclass(value) and type(value).__name__ in KEPT_TYPES:
        fields = {f.name: _encoded(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"__kind__": type(value).__name__, **fields}
    if isinstance(value, dict):
        return {str(key): _encoded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encoded(item) for item in value]
    return value.item() if hasattr(value, "item") else value  # numpy scalars


def _column(column: pd.Series) -> list:
    """A frame column's values as JSON: times as ISO text, missing values as None."""
    if isinstance(column.dtype, pd.DatetimeTZDtype):
        return [moment.isoformat() for moment in column]
    return [None if pd.isna(item) else _encoded(item) for item in column.tolist()]


def _decoded(value: dict) -> object:
    """One JSON object of :func:`_encoded` back as what it was."""
    if "__frame__" in value:
        frame = pd.DataFrame(dict(zip(value["__frame__"], value["data"], strict=True)))
        frame = frame.reindex(columns=value["__frame__"])
        return frame.astype(dict(zip(value["__frame__"], value["dtypes"], strict=True)))
    if "__kind__" in value:
        fields = dict(value)
        return KEPT_TYPES[fields.pop("__kind__")](**fields)
    return value
