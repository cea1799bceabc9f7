"""The ``goldset`` command line: a thin layer over the ``eval`` and ``labeler`` Python APIs.

One module per group of commands (``evaluation``: eval, compare; ``project``: import, pool,
configure, export, status, cost, app; ``team``: user, assign, agreement, adjudicate;
``judges``: judge, judge-key-env, calibrate; ``sampling``: sample), their shared options in
``common`` and their text layout in ``text``. Every other import is made by the command that
needs it: `goldset --help` loads click only, and `goldset eval` never loads Streamlit or
sqlite-utils (tests/test_import_set.py).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

# How numpy, OpenBLAS and Arrow use the machine, unless the user chose otherwise (set before
# numpy or pyarrow is imported; `goldset app` passes them on to the server). Each was measured
# on the bench's files (bench/README.md, "Figures behind design choices"):
# - one OpenBLAS thread: goldset never hands OpenBLAS a product big enough to share
#   (eval/stats.py keeps them small: threads that spin slow them down on a busy machine),
#   yet numpy starts its thread pool at import, a large share of a small eval's CPU;
# - no transparent huge pages for numpy's arrays, which the kernel compacts memory to find,
#   at a cost in system time to a large eval;
# - on Linux (where pyarrow's wheels have it, and where it was measured), Arrow allocating
#   through jemalloc, not mimalloc, which kept asking for fresh pages while parsing.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
if sys.platform.startswith("linux"):
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

# Each command by name, as "module:attribute" of labeler.cli: a command's module is imported
# when that command runs (or --help lists them all), so `goldset eval` loads only its own.
COMMANDS = {
    "eval": "evaluation:eval_command",
    "compare": "evaluation:compare",
    "cost": "project:cost_command",
    "import": "project:import_command",
    "configure": "project:configure",
    "pool": "project:pool",
    "export": "project:export",
    "status": "project:status",
    "app": "project:app",
    "user": "team:user",
    "assign": "team:assign",
    "agreement": "team:agreement_command",
    "adjudicate": "team:adjudicate",
    "judge": "judges:judge",
    "judge-key-env": "judges:judge_key_env",
    "calibrate": "judges:calibrate",
    "sample": "sampling:sample",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (click's documented lazy-loading
    pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        return getattr(importlib.import_module(f"goldset.labeler.cli.{module}"), attribute)


# The commands that end in seconds and build large arrays: they run with Python's cycle
# collector paused (see main; what they build holds no reference cycles) and with malloc
# keeping the memory they free for their next arrays (see _reuse_freed_memory).
BATCH_COMMANDS = ("eval", "compare")


def main() -> None:
    """The ``goldset`` console script: :func:`cli`, with the cycle collector paused.

    A command's start-up (numpy, the command's modules, then its reading) makes some 100,000
    objects, none of them garbage, and the collector's passes over them are time that a small
    golden set's eval, a CI gate's every run, spends for nothing (measured: bench/README.md,
    "Figures behind design choices").
    :func:`cli` turns the collector back on for every command but ``BATCH_COMMANDS``.
    """
    gc.disable()
    cli(obj=OWN_PROCESS)


# main's mark on the context: the process is goldset's own, so the process-wide settings
# (the cycle collector, malloc) are its to choose. Called in-process (a test's CliRunner, a
# caller's script), cli leaves them as the caller has them.
OWN_PROCESS = "the goldset console script"


@click.group(cls=LazyGroup)
@click.version_option(package_name="goldset")
def cli() -> None:
    """goldset: build golden sets for search and RAG evaluation, and evaluate systems on them."""
    context = click.get_current_context()
    if context.obj != OWN_PROCESS:
        return
    if context.invoked_subcommand in BATCH_COMMANDS:
        _reuse_freed_memory()
    else:
        gc.enable()


# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8


def _reuse_freed_memory() -> None:
    """Make glibc's malloc keep the memory a batch command frees, for its next arrays.

    By default an array above malloc's threshold (128 KiB, rising to 32 MiB) is mapped
    afresh and handed back when freed, and each thread takes its own arena: a large eval's
    temporaries then make the kernel zero fresh pages again and again. With one arena, and
    large blocks carved from it and kept once freed, a large eval takes far fewer page faults
    and less time, at the same peak memory (measured: bench/README.md, "Figures behind design
    choices"). Only for commands that end in seconds: a server would never give the memory
    back. Elsewhere than glibc, nothing is changed.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # numpy imports it anyway

    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(M_ARENA_MAX, 1)
        mallopt(M_MMAP_THRESHOLD, 1 << 30)
        mallopt(M_TRIM_THRESHOLD, (1 << 31) - 1)
