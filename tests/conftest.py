"""Fixtures shared by every test file: where the shared reference data lives, and small
projects built in a line (see tests/helpers/projects.py).

A test that needs a project says which one by the fixture it takes: ``store`` (empty, open),
``demo_store`` / ``demo_db`` (the demo set, open / closed), ``labelled_demo_db`` /
``labelled_demo_app`` (the demo with the worked example labelled), or builds its own with
``make_project`` / ``make_store``. A file that needs another project names its fixture for
what that project holds.

CI clones the repository anywhere and puts ``shared/`` beside it, so the data is found
relative to the repository root, never through an absolute path.
"""

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from helpers.projects import build_project, demo_project, labelled_demo, opened_by_the_app
from helpers.team import plant, team_project

from goldset.labeler.store import DEMO_TASKS, Store

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ``shared/`` folder beside the repository (reference data, datasets)."""
    if not SHARED_DIR.is_dir():
        raise FileNotFoundError(f"no shared data at {SHARED_DIR}: put shared/ beside the repo")
    return SHARED_DIR


@pytest.fixture(scope="session")
def trec_eval_dir(shared_dir: Path) -> Path:
    """trec_eval's own test inputs and expected outputs (``out.test*``)."""
    return shared_dir / "reference" / "trec_eval"


@pytest.fixture(scope="session")
def cranfield_dir(shared_dir: Path) -> Path:
    """The Cranfield collection in BEIR layout, with two TREC runs under ``runs/``."""
    return shared_dir / "datasets" / "cranfield"


# --- projects -------------------------------------------------------------------------------------


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Path]:
    """``make_project(tasks, users=, passwords=, protocol=, name="project.db")``: a project
    built in the test's folder by :func:`helpers.projects.build_project`, closed; its path."""

    def make(tasks=None, *, name: str = "project.db", **settings) -> Path:
        return build_project(tmp_path / name, tasks, **settings)

    return make


@pytest.fixture
def make_store(make_project: Callable[..., Path]) -> Iterator[Callable[..., Store]]:
    """``make_store(...)``: the project ``make_project(...)`` builds, open; closed when the
    test ends."""
    with ExitStack() as stores:

        def make(*args, **kwargs) -> Store:
            return stores.enter_context(Store(make_project(*args, **kwargs)))

        yield make


@pytest.fixture
def store(make_store: Callable[..., Store]) -> Store:
    """A fresh, empty project, open."""
    return make_store()


@pytest.fixture
def demo_store(make_store: Callable[..., Store]) -> Store:
    """A project holding the demo set (50 queries, slices head and tail), open."""
    return make_store(DEMO_TASKS)


@pytest.fixture
def demo_db(make_project: Callable[..., Path]) -> Path:
    """A project holding the demo set, closed: its path."""
    return make_project(DEMO_TASKS, name="demo.db")


@pytest.fixture(scope="module")
def module_demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project holding the demo set built once for the test file: for tests that leave it
    as it was (refusals), each checking so."""
    return demo_project(tmp_path_factory.mktemp("demo") / "project.db")


@pytest.fixture
def labelled_demo_db(tmp_path: Path) -> Path:
    """The demo project with the worked example labelled (:func:`helpers.projects.labelled_demo`),
    closed: its path."""
    labelled_demo(tmp_path / "demo.db").close()
    return tmp_path / "demo.db"


@pytest.fixture
def planted_db(tmp_path: Path) -> Path:
    """The team project with its disagreements planted (tests/helpers/team.py), no
    passwords; closed."""
    path = team_project(tmp_path / "team.db", with_passwords=False)
    with Store(path) as store:
        plant(store)
    return path


@pytest.fixture
def planted_store(planted_db: Path) -> Iterator[Store]:
    """The planted team project, open."""
    with Store(planted_db) as store:
        yield store


# --- the app --------------------------------------------------------------------------------------


@pytest.fixture
def open_in_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], Path]]:
    """``open_in_app(path)``: make the project at ``path`` the one the app opens, with
    Streamlit's caches cleared before and after the test; returns ``path``."""
    with ExitStack() as opened:
        yield lambda path: opened.enter_context(opened_by_the_app(path, monkeypatch))


@pytest.fixture
def labelled_demo_app(labelled_demo_db: Path, open_in_app: Callable[[Path], Path]) -> Path:
    """The labelled demo project, opened by the app: its path."""
    return open_in_app(labelled_demo_db)
