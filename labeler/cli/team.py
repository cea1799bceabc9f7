"""The team's commands: ``user`` (add, list, remove, passwd), ``assign``, ``agreement`` and
``adjudicate``."""

from __future__ import annotations

import json
from collections.abc import Callable

import click

# Constants of a module of the standard library only: cheap to import for every command.
from goldset.labeler.auth import MIN_PASSWORD_LENGTH, ROLES
from goldset.labeler.cli.common import (
    MAX_RESAMPLES,
    count_option,
    db_option,
    fail_on_bad_input,
    json_option,
    open_store,
    seed_option,
)


@click.group()
def user():
    """Manage the people who log in to the app."""


ROLE_CHOICE = click.Choice(ROLES)


def _password_option(command):
    """``--password``, asked for (twice, hidden) when not given."""
    return click.option(
        "--password",
        help=f"At least {MIN_PASSWORD_LENGTH} characters; asked for (twice, hidden) if not given.",
    )(command)


def _password_hash(password: str | None) -> str:
    """The hash of ``password``, or of one asked for (twice, hidden) when not given. A
    password too short is bad input: one line, exit 2."""
    from goldset.labeler.auth import hash_password, validate_password

    if password is None:
        password = click.prompt(
            f"Password (at least {MIN_PASSWORD_LENGTH} characters)",
            hide_input=True,
            confirmation_prompt=True,
        )
    return hash_password(_as_valid(validate_password, password))


def _as_valid(check: Callable[[str], str], value: str) -> str:
    """``value`` if ``check`` accepts it; what ``check`` refuses is bad input (a name or
    password the rules refuse): one line, exit 2."""
    try:
        return check(value)
    except ValueError as error:
        failure = click.ClickException(str(error))
        failure.exit_code = 2
        raise failure from None


@user.command("add")
@click.argument("name")
@click.option(
    "--role",
    type=ROLE_CHOICE,
    default="annotator",
    show_default=True,
    help="Annotators label; reviewers also adjudicate; admins also manage the project.",
)
@db_option
@_password_option
@click.option(
    "--no-password",
    is_flag=True,
    help="Signs in through the identity provider only (st.login, see the README).",
)
@fail_on_bad_input
def user_add(name, role, db, password, no_password):
    """Add a user who logs in with a password (stored as a salted scrypt hash).

    \b
    Example:
        goldset user add ana --db project.db
        goldset user add rita --role reviewer --db project.db
        goldset user add ana@example.com --no-password --db project.db

    Once a project has a user, the app asks everyone to log in.
    """
    from goldset.labeler.auth import validate_user_name

    _as_valid(validate_user_name, name)
    password_hash = None if no_password else _password_hash(password)
    with open_store(db, write=True) as store:
        store.add_annotator(name, role=role, password_hash=password_hash)
        _warn_without_admin(store)
    click.echo(f"added {role} {name}: the app now asks for a login")


@user.command("list")
@db_option
@json_option
def user_list(db, as_json):
    """List the users: role, sign-in, lock, and their assigned and open queries.

    \b
    Example:
        goldset user list --db project.db
    """
    import pandas as pd

    from goldset.labeler.accounts import user_rows

    with open_store(db) as store:
        rows = user_rows(store)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif rows:
        click.echo(pd.DataFrame(rows).set_index("name").to_string())
    else:
        click.echo("no users: the app runs as one local annotator")


@user.command("remove")
@click.argument("name")
@db_option
@fail_on_bad_input
def user_remove(name, db):
    """Remove a user's account; their labels stay in the project.

    \b
    Example:
        goldset user remove ana --db project.db
    """
    with open_store(db, write=True) as store:
        store.remove_annotator(name)
        _warn_without_admin(store)
    click.echo(f"removed {name} (their labels are kept; their browser sessions ended)")


@user.command("passwd")
@click.argument("name")
@db_option
@_password_option
@click.option("--role", type=ROLE_CHOICE, help="Also change the user's role.")
@fail_on_bad_input
def user_passwd(name, db, password, role):
    """Set a user's password (this also lifts a lock after failed sign-ins), and role if given.

    \b
    Example:
        goldset user passwd ana --db project.db
        goldset user passwd rita --role admin --db project.db
    """
    password_hash = _password_hash(password)
    with open_store(db, write=True) as store:
        store.update_annotator(name, role=role, password_hash=password_hash)
        _warn_without_admin(store)
    click.echo(
        f"new password set for {name}"
        + (f", now {role}" if role else "")
        + " (their browser sessions ended)"
    )


def _warn_without_admin(store) -> None:
    from goldset.labeler.accounts import admin_warning

    warning = admin_warning(store)
    if warning:
        click.echo(warning, err=True)


# --- team labelling: assignment, agreement, adjudication ----------------------------------------


@click.command()
@click.option(
    "--to",
    "annotators",
    multiple=True,
    help="A user to deal queries to (repeatable) [default: every user with the annotator role].",
)
@click.option(
    "--slice", "slices", multiple=True, help="Deal only this slice's queries (repeatable)."
)
@click.option(
    "--overlap",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Share of the queries judged by several annotators, blind to each other.",
)
@count_option("--judges", 2, 2, "Annotators per overlapping query.")
@seed_option("Seed of the overlap sample.")
@db_option
@fail_on_bad_input
def assign(annotators, slices, overlap, judges, seed, db):
    """Deal the queries nobody has yet to annotators, with a blind overlap.

    \b
    Example:
        goldset assign --to ana --to bob --to cy --overlap 0.1 --db project.db
        goldset assign --to dan --slice tail --overlap 0 --db project.db

    Queries not done and not yet assigned are dealt evenly; a share --overlap of them
    (spread over the slices) goes to --judges annotators each, for agreement figures.
    Nobody gets the same query twice, and each annotator sees only their own labels.
    """
    from goldset.labeler.team import deal

    with open_store(db, write=True) as store:
        names = list(annotators) or [
            row["name"] for row in store.annotators() if row["role"] == "annotator"
        ]
        result = deal(
            store,
            names,
            overlap=overlap,
            judges=judges,
            slices=list(slices) or None,
            seed=seed,
        )
    shares = ", ".join(f"{name} {len(ids)}" for name, ids in result.plan.items())
    click.echo(
        f"dealt {result.queries} queries ({len(result.overlapping)} to several annotators, "
        f"blind): {shares}"
    )


@click.command("agreement")
@db_option
@json_option
@count_option(
    "--bootstrap",
    0,
    1000,
    "Bootstrap resamples (of queries) for the 95% CIs.",
    maximum=MAX_RESAMPLES,
)
@seed_option("Resampling seed.")
def agreement_command(db, as_json, bootstrap, seed):
    """Agreement between annotators on the doubly judged queries.

    \b
    Example:
        goldset agreement --db project.db
        goldset agreement --db project.db --json

    Cohen's kappa (relevant or not), Krippendorff's alpha (ordinal, grades), and the
    share of agreement on the first relevant rank and on unanswerable vs miss: overall,
    per annotator pair and per slice, each with its number of items and queries and a
    bootstrap 95% CI over queries. n/a: undefined (no items, or one category only).
    """
    from goldset.labeler.team import agreement_report

    with open_store(db) as store:
        report = agreement_report(store, n_resamples=bootstrap, seed=seed)
    click.echo(json.dumps(report, indent=2) if as_json else _agreement_text(report))


def _agreement_text(report: dict) -> str:
    import pandas as pd

    from goldset.labeler.team import figure_table

    if not report["queries"]:
        return "no doubly judged queries yet: deal some with goldset assign --overlap"
    table = pd.DataFrame(figure_table(report)).set_index("group")
    return f"{report['queries']} doubly judged queries\n" + table.to_string()


@click.command()
@click.argument("query_id", required=False)
@click.option("--accept", "annotator", help="Decide for this annotator's label as it stands.")
@click.option("--reviewer", help="Who decides (a reviewer or admin).")
@click.option("--note", default="", help="Why, for the record.")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the queue as JSON.")
@fail_on_bad_input
def adjudicate(query_id, annotator, reviewer, note, db, as_json):
    """Show the adjudication queue, or decide a disagreement.

    \b
    Example:
        goldset adjudicate --db project.db
        goldset adjudicate q17 --accept ana --reviewer rita --db project.db

    Without QUERY_ID: the doubly judged queries whose annotators disagree, most
    consequential first (by the effect on MRR@10). With it: the reviewer's decision, one
    annotator's label, becomes the golden label; the export keeps every label beside it.
    """
    from goldset.labeler.team import adjudication_queue, adopt

    with open_store(db, write=query_id is not None) as store:
        if query_id is None:
            queue = adjudication_queue(store)
            click.echo(json.dumps(queue, indent=2) if as_json else _queue_text(queue))
            return
        if not annotator or not reviewer:
            raise click.UsageError("deciding a query needs --accept ANNOTATOR and --reviewer NAME")
        adopt(store, query_id, reviewer, annotator, note)
    click.echo(f"{query_id}: {reviewer} decided for {annotator}'s label")


def _queue_text(queue: list[dict]) -> str:
    if not queue:
        return "no disagreements waiting"
    lines = [f"{len(queue)} disagreements, most consequential first:"]
    for item in queue:
        ranks = ", ".join(
            f"{name} {label['first_relevant_rank'] or ('none' if label['answerable'] else 'U')}"
            for name, label in item["labels"].items()
        )
        lines.append(
            f"  {item['query_id']}  RR@10 gap {item['rr_gap']:.3f}  {', '.join(item['kinds'])}"
            f"  ({ranks})"
        )
    return "\n".join(lines)
