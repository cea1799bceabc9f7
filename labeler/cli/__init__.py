"""The ``goldset`` command line: a thin layer over the ``eval`` and ``labeler`` Python APIs.

One module per group of commands (``evaluation``: eval, compare; ``project``: import, pool,
configure, export, status, cost, app; ``team``: user, assign, agreement, adjudicate;
``judges``: judge, calibrate), their shared options in ``common`` and their text layout in
``text``. Every other import is made by the command that needs it: `goldset --help` loads
click only, and `goldset eval` never loads Streamlit or sqlite-utils (tests/test_import_set.py).
"""

from __future__ import annotations

import importlib
import os

import click

# One OpenBLAS thread, unless the user chose otherwise. goldset never hands OpenBLAS a product
# big enough to share (eval/stats.py keeps them small: threads that spin made them 70× slower
# on a busy machine), yet numpy starts OpenBLAS's thread pool when imported: 40-60 ms of CPU,
# a third of a small golden set's eval. Set before numpy is imported; `goldset app` passes it
# on to the server.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

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
    "calibrate": "judges:calibrate",
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
        return getattr(importlib.import_module(f"labeler.cli.{module}"), attribute)


@click.group(cls=LazyGroup)
@click.version_option(package_name="goldset")
def cli() -> None:
    """goldset: build golden sets for search and RAG evaluation, and evaluate systems on them."""
