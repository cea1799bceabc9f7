"""The README documents every CLI command and every option (as sqlite-utils' test_docs does):
the command tree is walked from click, so a new command or option without its line fails."""

import re
from pathlib import Path

import click
import pytest

from goldset.labeler.cli import cli

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def commands(group: click.Group = cli, path: tuple[str, ...] = ("goldset",)):
    """(path, command) of every command below ``group``, e.g. (("goldset", "user", "add"), ...)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # commands are loaded lazily: ask the group
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


def command_line_section() -> str:
    """The README's "The command line" section, up to the next top-level heading."""
    start = README.index("## The command line")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def documentation(path: tuple[str, ...]) -> str:
    """What the README says of one command: its rows of the command table (a row whose first
    cell starts with the command) and its own subsection (``### `goldset eval` ...``), if any."""
    section = command_line_section()
    name = " ".join(path)
    rows = [line for line in section.splitlines() if line.startswith(f"| `{name} ")]
    rows += [line for line in section.splitlines() if line.startswith(f"| `{name}`")]
    heading = re.search(rf"^### `{re.escape(name)}`.*?(?=^### |\Z)", section, re.M | re.S)
    return "\n".join(rows + ([heading.group(0)] if heading else []))


def long_flags(command: click.Command) -> list[str]:
    """Each option's long flags (``--open`` and ``--no-open`` of a switch)."""
    return [
        flag
        for param in command.params
        if isinstance(param, click.Option)
        for flag in (*param.opts, *param.secondary_opts)
        if flag.startswith("--")
    ]


COMMANDS = list(commands())
IDS = [" ".join(path[1:]) for path, _ in COMMANDS]


def test_the_command_tree_is_walked_in_full():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"goldset eval", "goldset user add", "goldset user passwd"} <= names


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_every_command_has_a_row_in_the_readme_command_table(path, command):
    assert command.name == path[-1]
    assert documentation(path), f"README's command table has no row for `{' '.join(path)}`"


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_every_option_of_a_command_is_in_its_readme_documentation(path, command):
    documented = documentation(path)
    missing = [
        flag for flag in long_flags(command) if not re.search(rf"{flag}(?![\w-])", documented)
    ]
    assert missing == [], f"`{' '.join(path)}` options missing from the README: {missing}"


def test_an_undocumented_option_would_be_found():
    documented = documentation(("goldset", "status"))
    assert "--json" in documented and "--no-such-option" not in documented
