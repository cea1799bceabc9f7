"""``goldset sample``: sampled labelling, the queries the humans label first drawn at random
or where a machine judge is unsure, each with its inclusion probability."""

from __future__ import annotations

import json

import click

from goldset.labeler.cli.common import (
    changing_project,
    db_option,
    fail_on_bad_input,
    json_option,
    machine_labels,
    seed_option,
)


@click.command()
@click.option("--random", "mode", flag_value="random", help="A random order, stratified by slice.")
@click.option("--active", "mode", flag_value="active", help="Drawn where --judge is unsure.")
@click.option("--off", "mode", flag_value="off", help="No sample: the ordinary queue.")
@click.option("--judge", "judge_name", help="With --active: the machine judge NAME.")
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    help="Queries to draw (--active: about this many) [default with --random: all].",
)
@seed_option("The seed of the draw: the same seed draws the same sample.")
@json_option
@db_option
@fail_on_bad_input
def sample(mode, judge_name, budget, seed, as_json, db):
    """Label a sample the statistics can trust: the queue follows a drawn order.

    \b
    Example:
        goldset sample --db project.db --random --seed 7
        goldset sample --db project.db --active --judge gemma-3-270m --budget 200
        goldset sample --db project.db --off

    --random orders every query at random, stratified by slice (each slice in its share of
    any first n); --active draws about --budget queries, each with a probability that rises
    with the judge's uncertainty on it (floored so that no weight is extreme). The queue
    offers the drawn queries first, in drawn order; a skipped one comes back before the rest.
    With no mode, prints the sampling settings and the sample's progress.
    """
    with changing_project(db) as store:
        if mode == "active":
            judge, _ = machine_labels(store, judge_name)
        elif judge_name is not None:
            raise click.UsageError("--judge goes with --active")
        else:
            judge = None
        if mode is None:
            settings = store.sampling()
        else:
            settings = store.draw_sample(mode, seed=seed, budget=budget, judge=judge)
    if as_json:
        click.echo(json.dumps(settings, indent=2))
        return
    click.echo(progress_line(settings))


def progress_line(settings: dict) -> str:
    """The sampling settings and the sample's progress, on one line."""
    if settings["mode"] == "off":
        return "sampling: off (the ordinary queue)"
    judge = f" judge={settings['judge']}" if settings["judge"] else ""
    return (
        f"sampling: {settings['mode']} seed={settings['seed']}{judge}: "
        f"{settings['labelled']} of {settings['drawn']} drawn queries labelled, "
        f"{settings['missing']} missing, {settings['waiting']} waiting behind a missing one"
    )
