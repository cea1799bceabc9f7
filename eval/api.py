"""``goldset.evaluate`` and ``goldset.compare``: evaluation for Python callers.

Golden sets and runs may be given as a path (any file ``goldset eval`` reads), a pandas
DataFrame, a dict, or an already read :class:`~goldset.eval.readers.Golden` /
:class:`~goldset.eval.readers.Run`; every form goes through the same readers and checks as
the files do, so one input has one reading whichever way it arrives:

- a golden set as a dict ``{query_id: {doc_id: grade}}`` (as ranx's ``Qrels``), a DataFrame
  of ``query_id, doc_id, grade``, or a list of golden-set records (dicts as the golden JSONL's
  lines, with ``status``, ``slice``, ``answerable``...);
- a run as a dict ``{query_id: {doc_id: score}}`` (as ranx's ``Run``; an empty dict is a
  query the system abstained on) or a DataFrame of ``query_id, doc_id, score``.

The reports hold what ``goldset eval --json`` and ``goldset compare --json`` print
(:attr:`Evaluation.result`) and turn into DataFrames.

    >>> import goldset
    >>> golden = {"q1": {"d1": 1}, "q2": {"d9": 1}}
    >>> run = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 1.0, "d9": 0.5}}
    >>> report = goldset.evaluate(golden, run, ["mrr@10", "hit@1"], bootstrap=0)
    >>> report.summary()["mean"].to_dict()
    {'mrr@10': 0.75, 'hit@1': 0.5}
    >>> report.per_query()["mrr@10"].to_dict()
    {'q1': 1.0, 'q2': 0.5}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Union

import numpy as np

from goldset.eval import validation
from goldset.eval.errors import InputError
from goldset.eval.metrics import DEFAULT_METRICS
from goldset.eval.readers import (
    Golden,
    Run,
    golden_from_records,
    read_golden,
    read_run,
    run_from_frame,
    run_from_records,
)

if TYPE_CHECKING:
    import pandas as pd

FRAME, DICT = "<DataFrame>", "<dict>"  # where an error of a frame or a dict happened
GoldenInput = Union[str, Path, Golden, "pd.DataFrame", Mapping[str, Mapping[str, int]], Iterable]
RunInput = Union[str, Path, Run, "pd.DataFrame", Mapping[str, Mapping[str, float]]]

__all__ = ["Comparison", "Evaluation", "as_golden", "as_run", "compare", "evaluate"]


def as_golden(golden: GoldenInput) -> Golden:
    """A golden set from a path, a DataFrame, a dict of dicts, records, or a :class:`Golden`."""
    if isinstance(golden, Golden):
        return golden
    if isinstance(golden, str | Path):
        return read_golden(golden)
    if _is_frame(golden):
        _require_columns(golden, ("query_id", "doc_id", "grade"))
        return _non_empty(golden_from_records(_frame_golden_records(golden), FRAME))
    if isinstance(golden, Mapping):
        records = (
            {"query_id": query_id, "judgments": _inner(judged, query_id, "judgments")}
            for query_id, judged in golden.items()
        )
        return _non_empty(golden_from_records(records, source=DICT))
    if isinstance(golden, Iterable):
        # Numbered here: the reader takes a (line, record) pair for a numbered record, and a
        # caller's tuple (a (query, doc, grade) triple) is a record to refuse, not a pair.
        numbered = enumerate(golden, start=1)
        return _non_empty(golden_from_records(numbered, source="<records>"))
    raise TypeError(f"a golden set is a path, a DataFrame or a dict, not {type(golden).__name__}")


def as_run(run: RunInput, name: str | None = None, unnamed: str = "run") -> Run:
    """A run from a path, a DataFrame of query_id, doc_id, score, a dict of dicts, or a
    :class:`Run`. ``name`` names it in reports: by default a file's name, else ``unnamed``."""
    if isinstance(run, Run):
        return run
    if isinstance(run, str | Path):
        return read_run(run, name)
    if isinstance(run, Mapping):
        records = (
            {
                "query_id": query_id,
                "results": [
                    {"doc_id": doc_id, "score": score}
                    for doc_id, score in _inner(scored, query_id, "results").items()
                ],
            }
            for query_id, scored in run.items()
        )
        return run_from_records(records, name or unnamed, source=DICT)
    if _is_frame(run):
        _require_columns(run, ("query_id", "doc_id", "score"))
        return run_from_frame(_checked_run_frame(run), name or unnamed, source=FRAME)
    raise TypeError(f"a run is a path, a DataFrame or a dict, not {type(run).__name__}")


@dataclass(frozen=True)
class Evaluation:
    """One run measured on a golden set. ``result`` is what ``goldset eval --json`` prints,
    with ``per_query`` (a DataFrame) beside it."""

    result: dict = field(repr=False)

    def __repr__(self) -> str:  # the result is pages long: the run, its queries, its first figure
        queries = self.result["queries"]["answerable"]
        return f"Evaluation(run={self.result['run']!r}, queries={queries}, {_first(self.result)})"

    def summary(self) -> pd.DataFrame:
        """One row per metric: ``mean`` and its 95% CI (``ci_low``, ``ci_high``)."""
        return _metric_rows(self.result["metrics"])

    def per_query(self) -> pd.DataFrame:
        """One row per scored query (indexed by query id), one column per metric."""
        return self.result["per_query"]

    def slices(self) -> pd.DataFrame:
        """One row per (slice, metric): the slice's mean and CI (empty without slices)."""
        import pandas as pd

        frames = {
            name: _metric_rows(entry["metrics"]) for name, entry in self.result["slices"].items()
        }
        if not frames:
            return pd.DataFrame(columns=["mean", "ci_low", "ci_high"])
        return pd.concat(frames, names=["slice", "metric"])

    def worst(self) -> pd.DataFrame:
        """The worst queries, worst first, as ``goldset eval`` lists them."""
        import pandas as pd

        return pd.DataFrame(self.result["worst"])

    def to_dataframe(self) -> pd.DataFrame:
        """The per-query values (as ranx's ``Report.to_dataframe``)."""
        return self.per_query()


@dataclass(frozen=True)
class Comparison:
    """A candidate run against a baseline on the same golden set. ``result`` is what
    ``goldset compare --json`` prints, the release gate's verdict included."""

    result: dict = field(repr=False)

    def __repr__(self) -> str:
        runs = f"{self.result['baseline']!r} -> {self.result['candidate']!r}"
        return f"Comparison({runs}, verdict={self.verdict!r}, Δ{_first(self.result, 'delta')})"

    @property
    def verdict(self) -> str:
        """The release gate's verdict: "pass", "fail" or "inconclusive" (docs/gate.md)."""
        return self.result["gate"]["verdict"]

    def summary(self) -> pd.DataFrame:
        """One row per metric: both means, the delta (candidate − baseline), its paired 95%
        CI and p-value, and the randomization p-value."""
        import pandas as pd

        rows = {
            spec: {**{k: v for k, v in entry.items() if k != "ci95"}, **_ci(entry)}
            for spec, entry in self.result["metrics"].items()
        }
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("metric")

    def changed_queries(self) -> pd.DataFrame:
        """The queries whose first relevant rank moved, one row each (``change`` says how)."""
        import pandas as pd

        rows = [
            {"change": change, **entry}
            for change, entries in self.result["changed_queries"].items()
            if isinstance(entries, list)
            for entry in entries
        ]
        return pd.DataFrame(rows)

    def to_dataframe(self) -> pd.DataFrame:
        """The per-metric summary (:meth:`summary`)."""
        return self.summary()


def evaluate(
    golden: GoldenInput,
    run: RunInput,
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    *,
    name: str | None = None,
    **options,
) -> Evaluation:
    """Evaluate ``run`` on ``golden``, as ``goldset eval`` does.

    ``options`` are :func:`goldset.eval.report.build_report`'s: ``bootstrap`` (resamples,
    1000; 0 for none), ``seed``, ``rel_threshold``, ``depth``, ``keep_order``, ``gain``,
    ``abstain_below``, ``worst``.
    """
    from goldset.eval.report import build_report

    _check_ranking_options(options)
    golden, run = as_golden(golden), as_run(run, name)
    return Evaluation(build_report(golden, run, _metric_list(metrics), **options))


def compare(
    golden: GoldenInput,
    baseline: RunInput,
    candidate: RunInput,
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    **options,
) -> Comparison:
    """Compare ``candidate`` with ``baseline`` on ``golden``, as ``goldset compare --gate``
    does: paired deltas per metric and slice, the changed queries and the release gate.

    ``options`` are :func:`goldset.eval.compare.compare_runs`'s (``bootstrap``, ``seed``,
    ``thresholds`` of the gate, and the ranking options of :func:`evaluate`).
    """
    from goldset.eval.compare import compare_runs

    _check_ranking_options(options)
    runs = as_run(baseline, unnamed="baseline"), as_run(candidate, unnamed="candidate")
    return Comparison(compare_runs(as_golden(golden), *runs, _metric_list(metrics), **options))


# --- the shapes a caller may hand in -------------------------------------------------------


def _metric_list(metrics: Sequence[str] | str) -> Sequence[str]:
    """One metric may be given as its name: a string iterated gave "unknown metric 'm'"."""
    return [metrics] if isinstance(metrics, str) else metrics


def _check_ranking_options(options: Mapping[str, object]) -> None:
    """Refuse what ``goldset eval`` refuses of ``--depth`` and ``--abstain-below``: a depth
    below 1 gave every query 0 (or numpy's "repeats may not contain negative values"), a NaN
    floor abstained on nothing."""
    depth, floor = options.get("depth"), options.get("abstain_below")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise ValueError(f"depth keeps each query's top N results: N >= 1, got {depth!r}")
    if floor is not None and not (isinstance(floor, int | float) and np.isfinite(floor)):
        raise ValueError(f"abstain_below must be a finite number, got {floor!r}")


def _is_frame(value: object) -> bool:
    """Whether ``value`` is a pandas DataFrame (without importing pandas to find out)."""
    return type(value).__name__ == "DataFrame" and hasattr(value, "columns")


def _require_columns(frame: pd.DataFrame, columns: tuple[str, ...]) -> None:
    missing = [name for name in columns if name not in frame.columns]
    if missing:
        raise InputError(FRAME, None, missing[0], f"a missing column (needs {', '.join(columns)})")
    repeated = [name for name in columns if list(frame.columns).count(name) > 1]
    if repeated:
        raise InputError(FRAME, None, repeated[0], "a column given twice: which one is meant?")


def _rows(frame: pd.DataFrame, columns: tuple[str, ...]) -> Iterator[tuple[int, tuple]]:
    """The frame's rows as plain Python values (``tolist``: no numpy scalars), numbered from 1
    as a file's lines are, so that an error names the row."""
    values = [frame[name].tolist() for name in columns]
    return enumerate(zip(*values, strict=True), start=1)


def _frame_golden_records(frame: pd.DataFrame) -> list[tuple[int, dict]]:
    """Golden-set records, one per query (at the row of its first judgement), from a frame of
    query_id, doc_id, grade: each then checked as a golden JSONL line is."""
    records: dict[str, tuple[int, dict]] = {}
    for line, (query_id, doc_id, grade) in _rows(frame, ("query_id", "doc_id", "grade")):
        # Keyed by the checked id, as a run frame's rows are: 1 and "1" are one query, and
        # True (equal to 1 as a dict key) is refused at its row, never merged into query 1.
        query = validation.identifier(query_id, "query_id", (FRAME, line))
        judged = records.setdefault(query, (line, {"query_id": query, "judgments": {}}))[1]
        key = validation.identifier(doc_id, "doc_id", (FRAME, line))
        if key in judged["judgments"]:
            raise InputError(FRAME, line, "doc_id", f"doc {key!r} repeated for its query")
        judged["judgments"][key] = grade
    return list(records.values())


def _checked_run_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A run frame's ids and scores checked row by row as a JSONL run's results are (ids
    strings or integers, scores numbers, ±inf allowed, never NaN), as strings and floats."""
    import pandas as pd

    checked = []
    for line, (query_id, doc_id, score) in _rows(frame, ("query_id", "doc_id", "score")):
        where = (FRAME, line)
        checked.append(
            (
                validation.identifier(query_id, "query_id", where),
                validation.identifier(doc_id, "doc_id", where),
                validation.number(score, "score", where, finite=False),
            )
        )
    return pd.DataFrame(checked, columns=["query_id", "doc_id", "score"])


def _inner(value: object, query_id: object, field: str) -> Mapping:
    """A query's ``{doc_id: grade}`` or ``{doc_id: score}`` in a dict of dicts."""
    if not isinstance(value, Mapping):
        raise InputError(DICT, None, str(query_id), f"{field} are a {{doc_id: value}} dict")
    return value


def _non_empty(golden: Golden) -> Golden:
    if len(golden.query_column("query_id")) == 0:
        raise InputError("<input>", None, None, "no queries in the golden set")
    return golden


def _first(result: Mapping, figure: str = "mean") -> str:
    """The first metric of a report and its ``figure``, as ``mrr@10=0.7936``."""
    spec, entry = next(iter(result["metrics"].items()), ("no metric", {}))
    value = entry.get(figure)
    return f"{spec}={'n/a' if value is None else format(value, '.4f')}"


def _metric_rows(metrics: Mapping[str, Mapping]) -> pd.DataFrame:
    """``{spec: {"mean", "ci95"}}`` as a frame of mean, ci_low, ci_high indexed by metric."""
    import pandas as pd

    rows = {spec: {"mean": _number(entry["mean"]), **_ci(entry)} for spec, entry in metrics.items()}
    columns = ["mean", "ci_low", "ci_high"]  # named even when no metric was asked for
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis("metric")


def _ci(entry: Mapping) -> dict[str, float]:
    """An entry's 95% CI as ``ci_low`` and ``ci_high`` (NaN where none was computed)."""
    low, high = entry.get("ci95") or (None, None)
    return {"ci_low": _number(low), "ci_high": _number(high)}


def _number(value: float | None) -> float:
    """A figure as a float, NaN where there is none (no query to average, no CI computed)."""
    return np.nan if value is None else value
