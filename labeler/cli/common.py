"""What the ``goldset`` commands share: opening the project, the common options, and the
refusal of bad input as one line (exit 2) instead of a traceback.

Light on purpose: every command module imports it, and `goldset eval` must load no more than
click here (the store, pandas and eval are imported by the functions that use them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    import pandas as pd

    from goldset.labeler.store import Store


def fail_on_bad_input(function: Callable) -> Callable:
    """Print a refusal as a one-line message, not a traceback, and exit with status 2: an
    input error (file, line, field), any other ValueError (an unknown user, a protocol that
    contradicts itself), and a file the system refuses to open (an output in a folder that
    does not exist, a file without permission). Status 1 is kept for a command that ran and
    failed (`compare --gate`'s failed gate, a judge run that stopped), so that a CI script
    tells "the input was refused" from "the check failed"."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except OSError as error:
            if error.filename is None:  # no file named: not the input, a failure of its own
                raise
            failure = click.ClickException(f"{error.filename}: {error.strerror}")
            failure.exit_code = 2
            raise failure from None
        except ValueError as error:
            failure = click.ClickException(str(error))
            failure.exit_code = 2
            raise failure from None

    return wrapper


LABELS = ("human", "machine", "both", "ppi")
EXPORTED_LABELS = LABELS[:3]  # ppi gives figures, not labels to write out


def labels_options(
    command: Callable | None = None, *, choices: tuple[str, ...] = LABELS
) -> Callable:
    """``--labels human|machine|both|ppi`` and ``--judge NAME``: whose labels count;
    ``labels_options(choices=EXPORTED_LABELS)`` offers only those ``choices``."""
    if command is None:
        return functools.partial(labels_options, choices=choices)
    command = click.option(
        "--judge", "judge_name", help="Machine judge NAME for --labels [default: the only one]."
    )(command)
    ppi = (
        ", or ppi (the judge's on every query corrected by the humans' on the random sample)"
        if "ppi" in choices
        else ""
    )
    return click.option(
        "--labels",
        type=click.Choice(choices),
        default="human",
        show_default=True,
        help=f"Whose labels: the humans', a machine judge's, both (humans first){ppi}.",
    )(command)


class FiniteFloat(click.FloatRange):
    """A number that is finite (click's ``float`` takes ``nan`` and ``inf``, which no
    threshold, price or count means), within ``min``/``max`` when given."""

    name = "finite number"

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


# More bootstrap resamples than this add nothing to a CI but memory (a huge count ran out of it).
MAX_RESAMPLES = 1_000_000


def count_option(
    flag: str, minimum: int, default: int, text: str | None = None, maximum: int | None = None
) -> Callable:
    """An integer option of at least ``minimum`` (and at most ``maximum``, when given), its
    default shown in ``--help``."""
    kind = click.IntRange(min=minimum, max=maximum)
    return click.option(flag, type=kind, default=default, show_default=True, help=text)


def db_option(command: Callable) -> Callable:
    """``--db PATH``, defaulting to the default project (``goldset.labeler.store.DEFAULT_DB``)."""
    return click.option(
        "--db",
        type=click.Path(dir_okay=False),
        help="Project database [default: the default project, created from the demo set; "
        "see goldset app --help].",
    )(command)


def open_store(db: str | None, *, write: bool = False, create: bool = False) -> Store:
    """The one way every command opens its project (``--db``, or the default demo project).

    A read command gets a read-only connection; only the commands that create a project
    (``create=True``: import, pool) create one at ``--db``, while the default demo project is
    created by whichever command uses it first; a path that is not an intact goldset project
    is refused with one line, exit 2 (an input error), before anything is written.
    """
    from goldset.labeler.store import DEFAULT_DB, ProjectError, Store

    try:
        if db is None or Path(db).resolve() == DEFAULT_DB:
            # The default project is the demo set, made on first use by whichever command
            # comes first (`goldset status` on a fresh install included).
            if create or not DEFAULT_DB.exists():
                Store.open_default().close()
            return Store.open_project(DEFAULT_DB, write=write)
        return Store.open_project(db, write=write, create=create)
    except ProjectError as error:
        failure = click.ClickException(str(error))
        failure.exit_code = 2
        raise failure from None


@contextmanager
def changing_project(db: str | None, *, create: bool = False) -> Iterator[Store]:
    """:func:`open_store` for a command that writes, as a context: a project file that the
    command created (``create``: import, pool, configure at a new path) is deleted again if
    the command is refused, so that a refusal leaves no file behind, as it leaves an existing
    project unchanged."""
    path = None if db is None else Path(db)
    # An empty file is a project to create too (see Store.open_project): it is emptied again.
    was_empty = path is not None and path.is_file() and path.stat().st_size == 0
    created = create and path is not None and (was_empty or not path.exists())
    with open_store(db, write=True, create=create) as store:
        try:
            yield store
        except BaseException:
            if created:
                store.close()  # its last connection: nothing is written after this
                _undo_creation(path, emptied=was_empty)
            raise


def _undo_creation(path: Path, *, emptied: bool) -> None:
    """Remove the project a refused command created at ``path`` (and SQLite's files beside
    it), or empty it again when it was an empty file."""
    for part in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        part.unlink(missing_ok=True)
    if emptied:
        path.write_bytes(b"")
    else:
        path.unlink(missing_ok=True)


def machine_labels(store: Store, judge_name: str | None) -> tuple[str, pd.DataFrame]:
    """The judge's identity and labels; with no name, the project's only machine judge."""
    from goldset.labeler.judges import judge_identity

    if judge_name is None:
        known = [row["judge"] for row in store.machine_judges()]
        if len(known) != 1:
            raise click.UsageError(
                f"name the judge with --judge (the project has {', '.join(known) or 'none'})"
            )
        identity = known[0]
    else:
        identity = judge_identity(judge_name)
    labels = store.machine_judgments_frame(identity)
    if labels.empty:
        raise click.UsageError(f"{identity} has labelled nothing in this project")
    return identity, labels


def dollars_option(flag: str, text: str) -> Callable:
    """A price or rate in dollars, at least 0 and by default 0 (free: a local server)."""
    return click.option(flag, type=FiniteFloat(min=0), default=0.0, show_default=True, help=text)


def json_option(command: Callable) -> Callable:
    """``--json``: the command prints one JSON object instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")(command)


def seed_option(text: str | None = None) -> Callable:
    """``--seed``: the seed of a command's random draws (0 by default: the same figures again)."""
    return click.option("--seed", type=int, default=0, show_default=True, help=text)
