"""Fixtures shared by every test file: where the shared reference data lives.

CI clones the repository anywhere and puts ``shared/`` beside it, so the data is found
relative to the repository root, never through an absolute path.
"""

from pathlib import Path

import pytest

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
