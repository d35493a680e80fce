"""``openenv-mcp new NAME``: a complete, installable environment package from the shipped template.

The template (``openenv_mcp/authoring/template``, package data) is a small notebook environment:
four tools, a sim backend (a seeded in-memory notebook per episode), a prod backend on a real
SQLite file, seeded tasks in train/test splits, a grade, settings, a README and tests. Files end
in ``.tmpl``; ``{{name}}``, ``{{module}}``, ``{{dist}}``, ``{{Class}}``, ``{{Title}}`` and
``{{PREFIX}}`` are replaced, and the ``module`` folder is renamed to the package's import name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

from openenv_mcp.errors import ConfigError

__all__ = ["Scaffold", "names_for", "scaffold"]

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,40}$")
_SUFFIX = ".tmpl"


@dataclass(frozen=True, slots=True)
class Scaffold:
    """What :func:`scaffold` wrote."""

    root: Path
    module: str
    files: tuple[Path, ...]


def names_for(name: str) -> dict[str, str]:
    """The template's placeholders for a server called ``name``."""
    if not _NAME.match(name):
        raise ConfigError(
            f"Server name {name!r}: use lowercase letters, digits, '-' or '_', starting with a letter (e.g. 'notes')"
        )
    words = re.split(r"[-_]", name)
    return {
        "name": name,
        "module": f"{'_'.join(words)}_env",
        "dist": f"{'-'.join(words)}-env",
        "Class": "".join(word.capitalize() for word in words),
        "Title": " ".join(words).capitalize(),
        "PREFIX": "_".join(words).upper(),
    }


def scaffold(name: str, directory: Path | str = ".") -> Scaffold:
    """Write the environment package ``DIRECTORY/NAME``; refuse to overwrite an existing folder.

    Raises:
        ConfigError: The name is not usable, or the folder exists and is not empty.
    """
    values = names_for(name)
    root = Path(directory) / name
    if root.exists() and any(root.iterdir()):
        raise ConfigError(f"{root} exists and is not empty; choose another --dir or name")
    written = []
    with as_file(files("openenv_mcp.authoring").joinpath("template")) as template:
        for source in sorted(Path(template).rglob(f"*{_SUFFIX}")):
            relative = source.relative_to(template).as_posix()[: -len(_SUFFIX)]
            parts = [values["module"] if part == "module" else part for part in relative.split("/")]
            if parts[-1].startswith("test_module"):
                parts[-1] = parts[-1].replace("module", values["module"], 1)
            target = root.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = source.read_text(encoding="utf-8")
            for key, value in values.items():
                text = text.replace("{{" + key + "}}", value)
            target.write_text(text, encoding="utf-8")
            written.append(target)
    return Scaffold(root=root, module=values["module"], files=tuple(written))
