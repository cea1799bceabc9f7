"""The ``goldset`` command line: a thin layer over the ``eval`` and ``labeler`` Python APIs.

One module per group of commands (``evaluation``: eval, compare; ``project``: import, pool,
configure, export, status, cost, app; ``team``: user, assign, agreement, adjudicate;
``judges``: judge, calibrate), their shared options in ``common`` and their text layout in
``text``. Every other import is made by the command that needs it: `goldset --help` loads
click only, and `goldset eval` never loads Streamlit or sqlite-utils (tests/test_import_set.py).
"""

from __future__ import annotations

import click

from labeler.cli import evaluation, judges, project, team


@click.group()
@click.version_option(package_name="goldset")
def cli() -> None:
    """goldset: build golden sets for search and RAG evaluation, and evaluate systems on them."""


for command in (
    evaluation.eval_command,
    evaluation.compare,
    project.cost_command,
    project.import_command,
    project.configure,
    project.pool,
    project.export,
    project.status,
    project.app,
    team.user,
    team.assign,
    team.agreement_command,
    team.adjudicate,
    judges.judge,
    judges.calibrate,
):
    cli.add_command(command)
