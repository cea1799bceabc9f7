"""pyarrow, imported on first use.

Importing pyarrow and its compute functions is a large share of a small evaluation's start-up
(bench/README.md, "Figures behind design choices"). A small file is read by the plain parser into
numpy arrays and scored with numpy alone, so eval's modules name pyarrow through these stand-ins,
which import it only when an attribute is first looked up (a large file, or a caller passing Arrow
data).
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

# The first import of pyarrow is made by one thread at a time: eval reads a large run and its
# qrels on two threads, and two threads importing pyarrow (or pyarrow.csv and
# pyarrow.compute) at once can meet it half-initialised ("cannot import name 'BuildInfo' from
# partially initialized module 'pyarrow.lib'"), one in some tens of evals.
_IMPORTING = threading.Lock()


class LazyModule:
    """One of :data:`ARROW_MODULES`, imported (with the others: :func:`load_arrow`) the first
    time one of its attributes is looked up."""

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> object:
        if self._module is None:
            load_arrow()
            self._module = sys.modules[self._name]
        return getattr(self._module, attribute)


pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")
pcsv = LazyModule("pyarrow.csv")
ARROW_MODULES = ("pyarrow", "pyarrow.compute", "pyarrow.csv")


def load_arrow() -> None:
    """Import pyarrow, its compute functions and its CSV reader (one thread at a time).

    All three at once: pyarrow's own functions import pyarrow.compute when first called (a
    cast, a filter), which would otherwise be a first import outside this lock.
    """
    with _IMPORTING:
        for name in ARROW_MODULES:
            importlib.import_module(name)


def arrow_loaded() -> bool:
    """Whether pyarrow is imported already (then it costs nothing more to use)."""
    return "pyarrow" in sys.modules
