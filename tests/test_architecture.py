"""The rooms of the house and their doors, read from the source with ``ast``: SQL lives only in
the store package, ``eval`` is pure computation, callers go through the store's facade, and
the store's modules stack without a cycle."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "labeler" / "store"
SQL_MODULES = {"sqlite3", "sqlite_utils"}
# A string that starts like an SQL statement (upper-case keyword, as the store writes them).
SQL_TEXT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|BEGIN|WITH)\s")


def module_name(path: Path) -> str:
    """The installed name of a source file: eval/x.py is goldset.eval.x, labeler/api/ goldset."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    if parts[:2] == ("labeler", "api"):
        return ".".join(("goldset", *parts[2:]))
    return ".".join(("goldset", *parts))


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def sql_strings(path: Path) -> list[int]:
    """The lines of the string literals (f-strings too) in ``path`` that read as SQL."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr) and node.values:
            node = node.values[0]
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and SQL_TEXT.match(node.value):
            lines.append(node.lineno)
    return lines


def roots(names: set[str]) -> set[str]:
    """The top-level packages of ``names``; goldset's own count by room (``labeler``, ``eval``)."""
    return {name.removeprefix("goldset.").split(".")[0] for name in names}


def test_sql_lives_only_in_the_store_package():
    outside = [path for path in sources("labeler") + sources("eval") if STORE not in path.parents]
    assert outside, "the test found no modules outside the store"
    importing = [str(p.relative_to(ROOT)) for p in outside if roots(imports(p)) & SQL_MODULES]
    writing = {str(p.relative_to(ROOT)): sql_strings(p) for p in outside if sql_strings(p)}
    assert importing == []
    assert writing == {}


def test_the_store_package_does_hold_the_sql_the_test_looks_for():
    # The two checks above could pass by looking for the wrong thing: the store must match them.
    assert any(roots(imports(path)) & SQL_MODULES for path in sources("labeler/store"))
    assert sum(len(sql_strings(path)) for path in sources("labeler/store")) > 50


@pytest.mark.parametrize("path", sources("eval"), ids=lambda p: p.name)
def test_eval_imports_neither_the_app_nor_streamlit_nor_sqlite(path):
    assert roots(imports(path)) & {"labeler", "streamlit", *SQL_MODULES} == set()


def test_the_eval_package_never_imports_the_app_or_the_database_even_indirectly():
    names = [module_name(path) for path in sources("eval") if path.name != "__init__.py"]
    code = (
        f"import sys\nfor name in {names!r}: __import__(name)\n"
        "print(sorted({m.removeprefix('goldset.').split('.')[0] for m in sys.modules} "
        "& {'labeler', 'streamlit', 'sqlite3', 'sqlite_utils'}))"
    )
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "[]"


def test_the_app_imports_only_the_store_facade():
    # Tests may reach a module's tuning knobs (the import's pacing); the app may not.
    internals = {
        str(path.relative_to(ROOT)): sorted(
            name
            for name in imports(path)
            if name.startswith("goldset.labeler.store.")
            and (STORE / (name.split(".")[3] + ".py")).exists()
        )
        for path in sources("labeler")
        if STORE not in path.parents
    }
    assert {path: names for path, names in internals.items() if names} == {}


def store_graph() -> dict[str, set[str]]:
    """A store module -> the store modules it imports (the facade apart)."""
    modules = {module_name(path): path for path in sources("labeler/store")}
    facade = "goldset.labeler.store"
    return {
        name: {m for m in imports(path) if m in modules and m not in (facade, name)}
        for name, path in modules.items()
        if name != facade
    }


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle in ``graph`` (empty when there is none), by depth-first search."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return []
        for target in sorted(graph[node]):
            if found := visit(target, [*path, node]):
                return found
        done.add(node)
        return []

    return next((found for node in sorted(graph) if (found := visit(node, []))), [])


def test_the_store_modules_import_one_another_without_a_cycle():
    graph = store_graph()
    assert len(graph) > 5 and any(graph.values()), "the store package has no layers to check"
    assert cycle(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []


def test_no_store_module_reaches_back_into_the_facade():
    graph = {
        module_name(p): imports(p) for p in sources("labeler/store") if p.name != "__init__.py"
    }
    assert {name for name, found in graph.items() if "goldset.labeler.store" in found} == set()


def test_no_test_imports_the_tests_folder_as_a_package():
    # tests/ is a plain folder (pytest puts it on sys.path: `from helpers.x import`). A test
    # dependency (ppi-python) installs a package named `tests` into site-packages, and a
    # regular package beats a folder without __init__.py: `from tests.x import` would load it.
    importing = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.match(r"\s*(from|import) tests\b", line)
    ]
    assert not importing, importing
