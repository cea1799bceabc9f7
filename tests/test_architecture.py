"""The rooms of the house and their doors, read from the source with ``ast``: SQL lives only in
the store package, ``eval`` is pure computation, callers go through the store's facade, no
module of goldset imports another in a cycle (function-level imports included), the store's
modules stack in the order its docstring lists and none reaches a higher one through ``self``,
and every function keeps within a complexity budget."""

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "labeler" / "store"
STORE_PACKAGE = "goldset.labeler.store"
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
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    return imports_in(path.read_text(encoding="utf-8"), package)


def imports_in(source: str, package: str) -> set[str]:
    """Every module ``source`` imports, wherever the import stands (``ast.walk`` sees those
    inside functions and under ``if TYPE_CHECKING`` too); ``package`` anchors relative ones."""
    found = set()
    for node in ast.walk(ast.parse(source)):
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


def import_graph(imported: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each module of ``imported`` (module -> the names it imports) -> the modules among them it
    imports; ``from a import b`` counts as importing ``a.b`` where that is a module."""
    return {
        name: {other for other in names if other in imported and other != name}
        for name, names in imported.items()
    }


def goldset_graph() -> dict[str, set[str]]:
    """Every module of goldset (eval/, labeler/) -> the goldset modules it imports anywhere."""
    return import_graph(
        {module_name(path): imports(path) for path in sources("eval") + sources("labeler")}
    )


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


def test_no_goldset_module_imports_another_in_a_cycle():
    # Function-level imports count: one that closes a cycle only hides it until the call.
    graph = goldset_graph()
    assert len(graph) > 90 and sum(map(len, graph.values())) > 300, "the graph lost its edges"
    assert cycle(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []


def test_the_cycle_finder_sees_a_cycle_closed_by_a_function_level_import():
    sources_by_name = {
        "goldset.eval.low": "def later():\n    from goldset.eval.high import helper\n",
        "goldset.eval.high": "from goldset.eval import low\n",
        "goldset.eval.apart": "if True:\n    import goldset.eval.high\n",
    }
    graph = import_graph(
        {name: imports_in(source, "goldset.eval") for name, source in sources_by_name.items()}
    )
    assert graph["goldset.eval.apart"] == {"goldset.eval.high"}
    assert cycle(graph) == ["goldset.eval.high", "goldset.eval.low", "goldset.eval.high"]


# --- the store's layers ---------------------------------------------------------------------


def store_order() -> list[str]:
    """The store's modules bottom up, as the ``- ``name``: ...`` lines of the package's
    docstring (labeler/store/__init__.py) list them."""
    docstring = ast.get_docstring(ast.parse((STORE / "__init__.py").read_text(encoding="utf-8")))
    return re.findall(r"^- ``(\w+)``:", docstring or "", flags=re.MULTILINE)


def store_graph() -> dict[str, set[str]]:
    """A store module (its short name) -> the store modules it imports (the facade apart)."""
    modules = {path.stem for path in sources("labeler/store") if path.name != "__init__.py"}
    return {
        name: {
            imported.rpartition(".")[2]
            for imported in imports(STORE / f"{name}.py")
            if imported.rpartition(".")[0] == STORE_PACKAGE
            and imported.rpartition(".")[2] in modules - {name}
        }
        for name in modules
    }


def test_the_store_docstring_lists_every_store_module_once():
    order = store_order()
    assert len(order) == len(set(order)), order
    assert set(order) == {path.stem for path in sources("labeler/store")} - {"__init__"}


def test_a_store_module_imports_only_modules_listed_before_it():
    order, graph = store_order(), store_graph()
    assert sum(map(len, graph.values())) > 20, "the store package has no layers to check"
    upward = {
        name: sorted(graph[name] - set(order[:position]))
        for position, name in enumerate(order)
        if graph[name] - set(order[:position])
    }
    assert upward == {}


def defined_names(tree: ast.Module) -> set[str]:
    """What a module's classes define for ``self``: methods, class attributes, and the
    attributes their code assigns through ``self``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.Assign | ast.AnnAssign):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    names.update(target.id for target in targets if isinstance(target, ast.Name))
        elif _through_self(node) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


def _through_self(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def upward_uses(order: list[str], trees: dict[str, ast.Module]) -> list[str]:
    """``module:line self.name`` wherever a module reads through ``self`` a name that neither
    it nor a module listed before it defines, but one listed after it does: a lower layer
    calling a higher one through the composed ``Store``. A hook a lower module defines and a
    higher one overrides (``_after_migrating``) is defined below, so it passes."""
    defined = {name: defined_names(tree) for name, tree in trees.items()}
    found = []
    for position, name in enumerate(order):
        below = set().union(*(defined[other] for other in order[: position + 1]))
        above = set().union(*(defined[other] for other in order[position + 1 :]))
        found += sorted(
            f"{name}:{node.lineno} self.{node.attr}"
            for node in ast.walk(trees[name])
            if _through_self(node) and node.attr in above - below
        )
    return found


def test_no_store_module_reaches_a_higher_one_through_self():
    order = store_order()
    trees = {name: ast.parse((STORE / f"{name}.py").read_text(encoding="utf-8")) for name in order}
    assert sum(len(defined_names(tree)) for tree in trees.values()) > 200
    assert upward_uses(order, trees) == []


def test_the_upward_check_flags_a_name_defined_only_higher():
    trees = {
        "low": ast.parse(
            "class Low:\n"
            "    def hook(self): pass\n"
            "    def work(self):\n"
            "        self.hook()\n"
            "        self.helper()\n"
            "        return self.conn\n"
        ),
        "high": ast.parse(
            "class High(Low):\n"
            "    def __init__(self): self.conn = None\n"
            "    def hook(self): self.helper()\n"
            "    def helper(self): pass\n"
        ),
    }
    assert upward_uses(["low", "high"], trees) == ["low:5 self.helper", "low:6 self.conn"]
    assert upward_uses(["high", "low"], trees) == []


# --- the complexity budget ------------------------------------------------------------------

# McCabe's cyclomatic complexity (see complexity) allowed for a function, new ones above all.
BUDGET = 12
# The functions over BUDGET when the budget came in, at their complexity then
# ("path::Class.method"). An entry may only go down: lower it when its function gets simpler,
# remove it when the function is within BUDGET (or gone). Never add one.
OVER_BUDGET = {
    "eval/calibration.py::verdict": 14,
    "eval/columns.py::arrow_array": 13,
    "eval/columns.py::as_numpy": 14,
    "eval/gate.py::_with_reason": 15,
    "eval/gate.py::gate_on_means": 13,
    "eval/ppi.py::_checked": 14,
    "eval/validation.py::golden_record": 19,
    "labeler/cli/evaluation.py::eval_command": 13,
    "labeler/cli/judges.py::_calibration_text": 14,
    "labeler/cli/judges.py::calibrate": 14,
    "labeler/golden.py::derive_state": 30,
    "labeler/golden.py::events_for_record": 15,
    "labeler/golden.py::export_record": 22,
    "labeler/golden.py::merge": 15,
    "labeler/importing.py::_csv_records": 18,
    "labeler/live/formats.py::figure_text": 13,
    "labeler/live/kept.py::_encoded": 14,
    "labeler/store/imports.py::Imports._import": 26,
    "labeler/store/imports.py::Imports._new_documents": 18,
    "labeler/store/log.py::query_context": 13,
    "labeler/store/pool.py::Pool._stage_known_pools": 27,
    "labeler/store/pool.py::Pool.pool_preview": 17,
    "labeler/store/replay.py::golden_plan": 17,
    "labeler/store/replay.py::replayed": 17,
    "labeler/team.py::deal": 16,
    "labeler/views/planner.py::pool_section": 13,
    "labeler/views/review.py::_decision_form": 14,
}
_BRANCHES = (
    *(ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.comprehension),
    *(ast.ExceptHandler, ast.match_case),
)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """McCabe's cyclomatic complexity of ``function``: 1, plus 1 per decision in its body:
    each ``if``, ``elif`` and conditional expression, ``for`` and ``while`` loop, comprehension
    ``for`` and ``if``, ``except`` clause and ``match`` case, and each ``and``/``or`` operand
    after the first (as radon counts; ruff's C901 leaves out the last three kinds). Nested
    functions, lambdas and classes are measured on their own."""
    count, todo = 1, list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        count += isinstance(node, _BRANCHES)
        count += len(node.ifs) if isinstance(node, ast.comprehension) else 0
        count += len(node.values) - 1 if isinstance(node, ast.BoolOp) else 0
        todo.extend(ast.iter_child_nodes(node))
    return count


def functions(
    node: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under ``node`` with its qualified name (``Class.method``, ``outer.inner``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}{child.name}", child
            yield from functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from functions(child, f"{prefix}{child.name}.")
        else:
            yield from functions(child, prefix)


@cache
def complexities() -> dict[str, int]:
    """``path::qualified.name`` -> complexity, for every function of eval/ and labeler/ (the
    highest of namesakes, as a property's getter and setter)."""
    found: dict[str, int] = {}
    for path in sources("eval") + sources("labeler"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, function in functions(tree):
            key = f"{path.relative_to(ROOT)}::{name}"
            found[key] = max(found.get(key, 0), complexity(function))
    return found


def test_every_function_keeps_within_its_complexity_budget():
    found = complexities()
    assert len(found) > 1000, "the scan lost the functions"
    over = {name: value for name, value in found.items() if value > OVER_BUDGET.get(name, BUDGET)}
    assert over == {}, f"over the budget of {BUDGET} (or of their entry in OVER_BUDGET): split them"


def test_the_over_budget_list_holds_only_todays_offenders_at_their_figures():
    found = complexities()
    stale = {
        name: found.get(name)
        for name, allowed in OVER_BUDGET.items()
        if found.get(name, 0) <= BUDGET or found[name] < allowed
    }
    assert stale == {}, "lower these entries to their figure, or remove those within budget"


def test_complexity_counts_each_decision_once():
    source = (
        "def f(a, b):\n"
        "    if a and b or not a:\n"  # if, and, or: 3
        "        return [x for x in a if x]\n"  # comprehension and its if: 2
        "    for x in b:\n"  # 1
        "        try:\n"
        "            pass\n"
        "        except ValueError:\n"  # 1
        "            pass\n"
        "    def inner(c):\n"  # measured on its own: 2
        "        return 1 if c else 2\n"
        "    return inner\n"
    )
    measured = {name: complexity(node) for name, node in functions(ast.parse(source))}
    assert measured == {"f": 8, "f.inner": 2}


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


def test_nothing_imports_eval_or_labeler_by_its_folder_name():
    # Installed, the folders are goldset.eval and goldset.labeler: `import eval` works only in
    # the repository (pytest puts its root on sys.path) and would load a second copy there.
    folders = ("eval", "labeler", "tests", "bench", "docs")
    importing = [
        f"{path.relative_to(ROOT)}: {name}"
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name in imports(path)
        if name.split(".")[0] in ("eval", "labeler")
    ]
    assert not importing, importing
    assert any("goldset.eval" in imports(path) for path in sources("labeler"))  # the check reads
