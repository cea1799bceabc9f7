"""How the commands print figures: fixed decimals, and tables laid out as pandas would lay
them out, without loading pandas (a CI gate's eval stays light)."""

from __future__ import annotations


def text_table(rows: dict[str, dict[str, str]], columns: list[str], index_name: str = "") -> str:
    """Cells of text laid out as pandas' ``DataFrame.to_string`` lays out text (labels on the
    left; each column right-aligned, its cells after one space of their own and one between
    columns), without loading pandas for a report."""
    label_width = max(len(index_name), *map(len, rows))
    widths = [max(len(name), 1 + max(len(row[name]) for row in rows.values())) for name in columns]

    def line(label: str, cells: list[str]) -> str:
        aligned = (f" {cell:>{width}}" for cell, width in zip(cells, widths, strict=True))
        return f"{label:<{label_width}}" + "".join(aligned)

    lines = [line("", columns)]
    if index_name:
        lines.append(line(index_name, [""] * len(columns)))
    lines += [line(label, [row[name] for name in columns]) for label, row in rows.items()]
    return "\n".join(lines)


def fixed(value: float | None) -> str:
    """A figure to four decimals (n/a when there is none)."""
    return "n/a" if value is None else f"{value:.4f}"


def signed(value: float | None) -> str:
    """A difference to four decimals, with its sign (n/a when there is none)."""
    return "n/a" if value is None else f"{value:+.4f}"


def percent(value: float | None) -> str:
    """A share as a percentage to one decimal (n/a when there is none)."""
    return "n/a" if value is None else f"{value:.1%}"
