"""Several app processes behind Caddy, with the Caddyfile that docs/scaling.md documents.

The Caddyfile is read from the document itself, so that the configuration users copy is the
one the tests and the team benchmark run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from e2e_support import REPO, free_port, serving

SCALING_DOC = REPO / "docs" / "scaling.md"
CADDY = shutil.which("caddy") or "/usr/bin/caddy"
STICKY_COOKIE = "goldset_process"


def documented_caddyfile(doc: Path = SCALING_DOC) -> str:
    """The one ``caddyfile`` block of docs/scaling.md."""
    blocks = re.findall(r"^```caddyfile\n(.*?)^```", doc.read_text(encoding="utf-8"), re.M | re.S)
    if len(blocks) != 1:
        raise ValueError(f"{doc} should hold one caddyfile block, not {len(blocks)}")
    return blocks[0]


@contextmanager
def caddy_proxy(upstreams: Sequence[str]) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run Caddy on a free 127.0.0.1 port in front of ``upstreams`` (``host:port`` each),
    with the documented Caddyfile; yield its base URL and its process."""
    port = free_port()
    with tempfile.TemporaryDirectory() as home:
        caddyfile = Path(home) / "Caddyfile"
        caddyfile.write_text(documented_caddyfile(), encoding="utf-8")
        environment = {
            "HOME": home,  # Caddy keeps its state under XDG_DATA_HOME or HOME
            "XDG_DATA_HOME": home,
            "XDG_CONFIG_HOME": home,
            "GOLDSET_PROXY": f"127.0.0.1:{port}",
            "GOLDSET_PROCESSES": " ".join(upstreams),
        }
        command = [CADDY, "run", "--config", str(caddyfile), "--adapter", "caddyfile"]
        with serving(command, port, environment) as served:
            yield served
