"""The learning venv ``scripts/learning-deps`` makes: keyed by ``bench/learning/requirements.txt``.

The pipeline never installs anything itself (``scripts/learn`` runs ``scripts/learning-deps`` first): a test
that finds no build skips instead of starting an hour of compiling.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["REQUIREMENTS", "learning_python", "require"]

REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"


def learning_python() -> Path | None:
    """The venv's python where it is installed (the same path the script computes), else None."""
    given = os.environ.get("OPENENV_MCP_CACHE")
    cache = Path(given) if given else Path.home() / ".cache" / "openenv-mcp"
    venv = cache / f"learning-{hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]}"
    return venv / "bin" / "python" if (venv / ".installed").exists() else None


def require() -> Path:
    """The venv's python and a llama-server build, or an error saying how to get them."""
    from bench.learning.llama import binary

    python = learning_python()
    if python is None or binary() is None:
        missing = "learning venv" if python is None else "llama-server build"
        raise SystemExit(f"No {missing} here: run scripts/learning-deps (scripts/learn runs it first)")
    return python
