"""``--labels ppi`` of ``goldset eval`` and ``goldset compare``: the PPI figures read from a
project (:mod:`goldset.labeler.live.ppi`) and laid out as text."""

from __future__ import annotations

from collections.abc import Callable

import click

from goldset.labeler.cli.common import machine_labels, open_store
from goldset.labeler.cli.text import fixed, signed, text_table


def ppi_figures(db: str | None, judge_name: str | None, compute: Callable) -> dict:
    """``compute(store, judge_labels)``'s figures with the judge and the sample they rest on.

    Refused (exit 2) without ``--db`` or without a labelled random sample."""
    if not db:
        raise click.UsageError(
            "--labels ppi reads a judge's labels and the project's random sample: give --db"
        )
    # One snapshot: the sample the figures rest on is the one the header counts.
    with open_store(db) as store, store.snapshot():
        judge, labels = machine_labels(store, judge_name)
        figures = compute(store, labels)
        sampling = store.sampling()
    return {
        "judge": judge,
        "sample": {"mode": sampling["mode"], "labelled": sampling["labelled"]},
        "figures": figures,
    }


def ppi_text(ppi: dict, paired: bool = False) -> list[str]:
    """The figures as a table: per slice and metric, PPI's estimate and CI, λ and the
    effective human queries, beside the humans' own estimate on the same sample."""
    number = signed if paired else fixed
    rows = {}
    for name, metrics in ppi["figures"].items():
        for metric, figure in metrics.items():
            rows[f"{name} {('Δ' if paired else '') + metric}"] = {
                "PPI": number(figure["mean"]),
                "95% CI": _interval(figure["low"], figure["high"], number),
                "λ": f"{figure['weight']:.2f}",
                "as humans": "n/a"
                if figure["effective_n"] is None
                else f"{figure['effective_n']:.0f}",
                "humans": number(figure["human_mean"]),
                "humans' 95% CI": _interval(figure["human_low"], figure["human_high"], number),
                "sampled": f"{figure['n_human']} of {figure['n_all']}",
            }
    title = (
        f"PPI with judge {ppi['judge']} on the {ppi['sample']['mode']} sample "
        f"({ppi['sample']['labelled']} queries labelled); 'as humans': how many human-labelled "
        "queries alone would give the same CI width"
    )
    return ["", title, text_table(rows, list(next(iter(rows.values()))))] if rows else []


def _interval(low: float | None, high: float | None, number: Callable) -> str:
    return "n/a" if low is None else f"[{number(low)}, {number(high)}]"
