"""docs/architecture.md's "Where each rule lives": every module and function the table names
exists, and each function is the only one of its name in eval/ and labeler/ (one home per
rule, one meaning per name)."""

from __future__ import annotations

import ast
import importlib
from collections import Counter
from functools import cache, cached_property
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SECTION = "## Where each rule lives"
# The rules the table must hold, as words its rule column contains.
REQUIRED = (
    "golden-set merge",
    "which run is the project's",
    "run hashing",
    "tag parsing",
    "queue rule",
    "first relevant rank",
    "first relevant position",
    "run order and ties",
    "query-id order",
    "a query's state",
    "the gate's verdict",
    "metric formulas",
    "csv inertness",
    "id validation",
    "host allow-list",
    "side effects",
)


def rules_table(text: str) -> list[tuple[str, str, str]]:
    """(rule, module path, function) for each row of the section's table."""
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("rule", "---") or set(cells[0]) <= {"-"}:
            continue
        rows.append((cells[0], cells[1].strip("`"), cells[2].strip("`")))
    return rows


def module_name(path: str) -> str:
    """The installed name of a repository file: ``eval/x.py`` is ``goldset.eval.x``."""
    return "goldset." + path.removesuffix(".py").replace("/", ".")


def defined_functions(root: Path) -> Counter:
    """How many times each function (or method) name is defined in ``root``'s eval/ and
    labeler/."""
    names: Counter = Counter()
    for folder in ("eval", "labeler"):
        for path in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    names[node.name] += 1
    return names


ROWS = rules_table(ARCHITECTURE.read_text(encoding="utf-8"))


@cache
def code_base() -> Counter:
    """:func:`defined_functions` of this repository, read once for every row."""
    return defined_functions(ROOT)


def test_the_table_holds_every_rule_it_must():
    rules = " | ".join(rule.lower() for rule, _, _ in ROWS)
    assert [word for word in REQUIRED if word not in rules] == []


@pytest.mark.parametrize(("rule", "path", "function"), ROWS, ids=[row[2] for row in ROWS])
def test_each_rule_names_a_module_and_a_function_that_exist(rule, path, function):
    assert (ROOT / path).is_file(), f"{rule}: no file {path}"
    found = importlib.import_module(module_name(path))
    for part in function.split("."):
        found = getattr(found, part)  # an AttributeError names what the table got wrong
    assert callable(found) or isinstance(found, property | cached_property)


@pytest.mark.parametrize(("rule", "path", "function"), ROWS, ids=[row[2] for row in ROWS])
def test_each_rule_function_is_the_only_one_of_its_name(rule, path, function):
    name = function.rsplit(".", 1)[-1]
    assert code_base()[name] == 1, f"{rule}: {name} is defined more than once"


def test_the_table_reader_reads_rows_and_skips_the_header():
    text = (
        f"{SECTION}\n\nintro\n\n| rule | module | function |\n|---|---|---|\n"
        "| a rule | `eval/ids.py` | `query_id_order` |\n\n## Next\n| x | y | z |\n"
    )
    assert rules_table(text) == [("a rule", "eval/ids.py", "query_id_order")]


def test_the_counter_sees_a_second_definition_a_method_included(tmp_path):
    sources = {"eval": "def twice(): ...\n", "labeler": "class A:\n    def twice(self): ...\n"}
    for folder, source in sources.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(source, encoding="utf-8")
    assert defined_functions(tmp_path)["twice"] == 2


def test_a_file_is_named_as_goldset_installs_it():
    assert module_name("eval/ids.py") == "goldset.eval.ids"
    assert module_name("labeler/store/labelling.py") == "goldset.labeler.store.labelling"
