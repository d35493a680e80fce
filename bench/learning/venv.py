"""The learning venv ``scripts/learning-deps`` makes: keyed by ``bench/learning/requirements.txt``."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

__all__ = ["REQUIREMENTS", "ensure", "learning_python"]

REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"
_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "learning-deps"


def learning_python() -> Path | None:
    """The venv's python where it is installed (the same path the script computes), else None."""
    given = os.environ.get("OPENENV_MCP_CACHE")
    cache = Path(given) if given else Path.home() / ".cache" / "openenv-mcp"
    venv = cache / f"learning-{hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]}"
    return venv / "bin" / "python" if (venv / ".installed").exists() else None


def ensure(model: str) -> Path:
    """Install whatever is missing (the venv, the llama-server build, ``model``'s file: the script) and return the
    venv's python."""
    command = ["bash", str(_SCRIPT), "--model", model]
    printed = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    return Path(printed.strip().splitlines()[-1])
