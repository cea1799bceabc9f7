"""goldset: build golden sets for search and RAG evaluation, and evaluate retrieval systems
against them.

The public Python API is here; the command line (``goldset``) mirrors it::

    import goldset

    report = goldset.evaluate("golden.jsonl", "bm25.trec")
    report.summary()          # one row per metric: mean and 95% CI (a DataFrame)
    report.per_query()        # one row per query (a DataFrame)

    comparison = goldset.compare("golden.jsonl", "bm25.trec", "dense.trec")
    comparison.verdict        # "pass", "fail" or "inconclusive", as ``goldset gate``

    project = goldset.Project("project.db")
    project.progress()        # how far labelling has come, per slice
    project.evaluate("dense.trec").summary()

Golden sets and runs may be paths, pandas DataFrames or plain dicts (``{query: {doc:
grade}}`` and ``{query: {doc: score}}``, as ranx's ``Qrels`` and ``Run``).

In the repository this package is the folder ``labeler/api/``; ``eval/`` is
:mod:`goldset.eval` (pure computation over arrays) and ``labeler/`` :mod:`goldset.labeler`
(the project database, the app and the command line). The names below are imported on first
use, so that ``import goldset`` (and so every ``goldset`` command) stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from goldset.eval.api import Comparison, Evaluation, compare, evaluate  # noqa: F401
    from goldset.labeler.project import Project  # noqa: F401

__version__ = "0.1.0"

_PUBLIC = {
    "evaluate": "goldset.eval.api",
    "compare": "goldset.eval.api",
    "Evaluation": "goldset.eval.api",
    "Comparison": "goldset.eval.api",
    "Project": "goldset.labeler.project",
}
__all__ = [*_PUBLIC, "__version__"]


def __getattr__(name: str) -> object:
    """The public names, imported when first asked for (PEP 562)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'goldset' has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
