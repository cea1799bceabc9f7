"""pyarrow, imported on first use.

Importing pyarrow and its compute functions costs about 0.1 s, a third of a small
evaluation's start-up. A small file is read by the plain parser into numpy arrays and scored
with numpy alone, so eval's modules name pyarrow through these stand-ins, which import it
only when an attribute is first looked up (a large file, or a caller passing Arrow data).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


class LazyModule:
    """A module imported the first time one of its attributes is looked up."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str) -> object:
        module: ModuleType = importlib.import_module(self._name)
        return getattr(module, attribute)


pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")
pcsv = LazyModule("pyarrow.csv")


def arrow_loaded() -> bool:
    """Whether pyarrow is imported already (then it costs nothing more to use)."""
    return "pyarrow" in sys.modules
