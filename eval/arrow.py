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

import numpy as np


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


def suit_memory_to_large_files() -> None:
    """Set the process's allocators for files of millions of lines (from now on).

    Most of a large evaluation's time went to the kernel handing out fresh pages. Two
    defaults made that worse on this project's machines (2 shared cores, transparent huge
    pages with ``defrag=madvise``), as measured on the bench's 10M-line `long` run and its
    4M-line qrels:

    - Arrow's default pool, mimalloc, kept asking for fresh (huge) pages as it parsed:
      reading both files took 3.3-4.3 s of system time with it, 1.1-1.7 s with jemalloc
      (peak 1.7 GB instead of 1.4 GB); over the whole ``goldset eval``, 2.8-3.0 s against
      1.9-2.0 s. Arrow then allocates through jemalloc, where pyarrow has it.
    - numpy asks for huge pages for every array from 4 MiB on, which the kernel compacts
      memory to find: ``goldset eval`` took 0.7-1.1 s of system time on the `short` run
      with them and 0.54-0.58 s without (`long`: 3.2-3.4 s and 2.4 s), the same user time.
    """
    if "jemalloc" in pa.supported_memory_backends():  # else pyarrow keeps its default
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    # numpy's own switch, which NUMPY_MADVISE_HUGEPAGE=0 flips at its import.
    multiarray = getattr(getattr(np, "_core", None), "multiarray", None)
    if hasattr(multiarray, "_set_madvise_hugepage"):
        multiarray._set_madvise_hugepage(False)


def arrow_loaded() -> bool:
    """Whether pyarrow is imported already (then it costs nothing more to use)."""
    return "pyarrow" in sys.modules
