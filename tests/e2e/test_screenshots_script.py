"""docs/screenshots.py refreshes the README's screenshots: a page at a size gives a PNG of that
size (run here for one page, one size; the script takes them all by default)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

from e2e_support import REPO

SCRIPT = REPO / "docs" / "screenshots.py"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])  # the IHDR chunk: width, height


def test_the_script_photographs_a_page_at_the_size_asked(tmp_path):
    result = subprocess.run(
        [sys.executable, SCRIPT, "--page", "dashboard", "--size", "1280x800", "--out", tmp_path],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    shot = tmp_path / "dashboard-1280x800.png"
    assert result.stdout.split() == [str(shot)]
    assert png_size(shot.read_bytes()) == (1280, 800)
    assert [path.name for path in tmp_path.iterdir()] == [shot.name]


def test_every_page_and_size_in_the_readme_has_its_committed_screenshot():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in ("label", "dashboard", "compare", "planner", "review", "admin"):
        for size in ("1280x800", "1920x1080"):
            path = REPO / "docs" / "screenshots" / f"{name}-{size}.png"
            assert f"(docs/screenshots/{path.name})" in readme
            data = path.read_bytes()
            assert png_size(data) == tuple(map(int, size.split("x")))
            assert len(data) < 400_000  # small enough to keep in the repository
