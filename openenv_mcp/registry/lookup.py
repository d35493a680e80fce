"""The registry as a whole: every entry in a directory, and look-up of a tool's bindings."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_mcp.errors import RegistryError
from openenv_mcp.registry.entry import RegistryEntry, ToolEntry, load_entry

__all__ = ["SUFFIX", "Registry", "ToolBinding", "default_directory"]

SUFFIX = ".server.json"
"""Entries are files named ``<server>.server.json``."""


def default_directory() -> Path:
    """Where the entries are: ``registry/`` of the source checkout this package runs from, else ``./registry``."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "registry").is_dir():
        return root / "registry"
    return Path("registry")


@dataclass(frozen=True)
class ToolBinding:
    """One tool of one server, with its sim backend and prod services."""

    entry: RegistryEntry
    tool: ToolEntry

    @property
    def qualified(self) -> str:
        """``server/tool``."""
        return f"{self.entry.server}/{self.tool.name}"

    def variables(self) -> list[dict[str, Any]]:
        """The variables to set for prod: each with name, description, default, secrecy and its services."""
        declared = self.entry.variables
        found: dict[str, dict[str, Any]] = {}
        for service in self.tool.prod:
            for ref in service.settings:
                known = declared.get(ref.name, {})
                variable = found.setdefault(
                    ref.name,
                    {
                        "name": ref.name,
                        "description": known.get("description", ""),
                        "default": known.get("default"),
                        "isSecret": ref.is_secret,
                        "isRequired": ref.is_required,
                        "services": [],
                    },
                )
                variable["services"].append(service.name)
        return list(found.values())

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view: the tool, its bindings in both modes and the variables to set."""
        return {
            "tool": self.qualified,
            "registryName": self.entry.name,
            "version": self.entry.version,
            "schemaHash": self.tool.schema_hash,
            "modeVariable": self.entry.meta.modes.variable,
            "sim": self.tool.sim.model_dump(by_alias=True),
            "prod": [service.model_dump(by_alias=True, exclude_none=True) for service in self.tool.prod],
            "variables": self.variables(),
        }


class Registry:
    """The registry entries, one per server, and look-ups across them."""

    def __init__(self, entries: Iterable[RegistryEntry]) -> None:
        self.entries = tuple(sorted(entries, key=lambda entry: entry.server))

    @classmethod
    def load(cls, directory: Path | str | None = None) -> Registry:
        """Load and validate every ``*.server.json`` in ``directory`` (default: :func:`default_directory`)."""
        where = Path(directory) if directory is not None else default_directory()
        if not where.is_dir():
            raise RegistryError(f"No registry directory at {where}; pass --dir or run 'openenv-mcp registry generate'")
        entries = []
        for path in sorted(where.glob(f"*{SUFFIX}")):
            entry = load_entry(path)
            expected = path.name.removesuffix(SUFFIX)
            if entry.server != expected:
                raise RegistryError(f"{path} describes server {entry.server!r}; name it {entry.server}{SUFFIX}")
            entries.append(entry)
        return cls(entries)

    def __iter__(self) -> Iterator[RegistryEntry]:
        return iter(self.entries)

    def entry(self, server: str) -> RegistryEntry:
        """The entry of ``server``; a miss names the closest servers."""
        for entry in self.entries:
            if entry.server == server:
                return entry
        raise RegistryError(f"No server {server!r} in the registry{_closest(server, [e.server for e in self.entries])}")

    def bindings(self) -> list[ToolBinding]:
        """Every tool of every server."""
        return [ToolBinding(entry, tool) for entry in self.entries for tool in entry.meta.tools]

    def lookup(self, query: str) -> ToolBinding:
        """The tool named ``query``: ``server/tool``, or a bare tool name that one server has.

        Raises:
            RegistryError: no such tool (naming the closest matches), or a bare name on several
                servers (naming each as ``server/tool``).
        """
        every = self.bindings()
        if "/" in query:
            found = [binding for binding in every if binding.qualified == query]
        else:
            found = [binding for binding in every if binding.tool.name == query]
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(binding.qualified for binding in found)
            raise RegistryError(f"Tool {query!r} is on several servers: {names}; name one as SERVER/TOOL")
        candidates = sorted({b.qualified for b in every} | {b.tool.name for b in every})
        raise RegistryError(f"No tool {query!r} in the registry{_closest(query, candidates)}")

    def servers_for(self, tools: Iterable[str]) -> list[str]:
        """The servers that provide ``tools`` (each looked up as in :meth:`lookup`), each once, in order."""
        return list(dict.fromkeys(self.lookup(tool).entry.server for tool in tools))


def _closest(query: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(query, candidates, n=5, cutoff=0.5)
    if close:
        return "; did you mean " + ", ".join(close) + "?"
    shown = ", ".join(candidates[:12]) + (", ..." if len(candidates) > 12 else "")
    return f"; known: {shown or '(none)'}"
