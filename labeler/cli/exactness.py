"""What ``goldset eval`` prints of a report's exactness and of a run's two orders: exact@10
per slice on first-hit labels, and both figures where tied scores let a ranking be read
two ways."""

from __future__ import annotations

from collections.abc import Mapping

from goldset.labeler.cli.text import fixed, percent, text_table


def exactness_text(exactness: Mapping | None) -> list[str]:
    """The report's exact@k (see :mod:`goldset.eval.exactness`) as lines: per slice, the exact
    queries, the MRR@k over them and over all (a lower bound where some are not exact).
    Nothing when the labels are not first-hit."""
    if not exactness:
        return []
    k = exactness["k"]
    groups = {"all": exactness["all"], **exactness["slices"]}
    rows = {}
    for name, summary in groups.items():
        mrr = summary["figures"].get(f"mrr@{k}", {})
        rows[name] = {
            f"exact@{k}": percent(summary["share"]),
            "queries": f"{summary['exact']} of {summary['queries']}",
            f"mrr@{k} exact": fixed(mrr.get("exact")),
            f"mrr@{k} all": ("≥ " if summary["share"] != 1.0 else "")
            + fixed(mrr.get("lower_bound")),
        }
    return [
        "",
        f"exact@{k}: queries whose MRR@{k} and hit@{k} are exact (every doc above the first "
        "hit judged); elsewhere the figure is a lower bound: label the run's holes",
        text_table(rows, list(next(iter(rows.values()))), index_name="slice"),
    ]


def orders_text(orders: Mapping | None) -> list[str]:
    """Both orders' figures of a run whose tied scores make them differ (see
    :mod:`goldset.eval.orders`), as one line each; nothing when there is no such tie."""
    if not orders:
        return []
    figures = [
        ("by score, ties by doc id (trec_eval)", orders["score_order"]),
        ("in the file's own order (--keep-order)", orders["own_order"]),
    ]
    return [
        "",
        f"ties: {orders['tied_queries']} queries hold tied scores, and the order of the ties "
        "changes the figures:",
        *(
            "  " + ", ".join(f"{spec} {fixed(value)}" for spec, value in means.items()) + f" {how}"
            for how, means in figures
        ),
    ]
