"""A generator's output kept in the user's cache directory: made once, read back at later starts.

A task generator that takes too long to run at every start keeps its table (JSON rows) here, under a name that
carries a fingerprint of what made it (the generator's version and its modules' source), so a changed generator
never reads an older table:

    rows = cached_table("email-tasks", source_fingerprint("openenv_mcp.servers.email", ["generator.py"]), build)

The directory is ``$XDG_CACHE_HOME/openenv-mcp`` (``~/.cache/openenv-mcp`` when unset; ``OPENENV_CACHE_HOME``
overrides ``XDG_CACHE_HOME``): :attr:`openenv_mcp.settings.Settings.cache_dir`. A table is written atomically (a
reader never sees half of one), and a cache that cannot be written is skipped: the table is made at each start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from openenv_mcp.settings import Settings, load_settings

__all__ = ["cache_dir", "cached_table", "source_fingerprint"]

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """Where generated tables are kept: ``$XDG_CACHE_HOME/openenv-mcp``."""
    return load_settings(Settings).cache_dir


def source_fingerprint(package: str, modules: Iterable[str], *, extra: str = "") -> str:
    """A short hash of ``extra`` (a version, a size) and the source of ``package``'s ``modules`` (file names
    relative to the package; a folder's ``.py`` files when one names a folder)."""
    root = resources.files(package)
    digest = hashlib.sha256(extra.encode())
    for name in modules:
        found = root.joinpath(name)
        files = sorted(found.iterdir(), key=lambda f: f.name) if found.is_dir() else [found]
        for file in files:
            if file.name.endswith(".py"):
                digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def cached_table(name: str, fingerprint: str, build: Callable[[], list[Any]]) -> list[Any]:
    """The table ``build`` makes, read from ``cache_dir()/NAME-FINGERPRINT.json`` when it is there, else made and
    kept there for the next start."""
    path = cache_dir() / f"{name}-{fingerprint}.json"
    try:
        rows: list[Any] = json.loads(path.read_text(encoding="utf-8"))
        return rows
    except (OSError, ValueError):
        pass
    rows = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as out:
            json.dump(rows, out, ensure_ascii=False, separators=(",", ":"))
        os.replace(out.name, path)
    except OSError as exc:
        log.info("could not keep the table %s at %s (%s); it is made at each start", name, path, exc)
    return rows
