"""The corpus's world as facts: each entity's attributes and the doc_id of the article that states them.

``data/facts.json.gz`` is written by ``data/generate.py`` with the corpus, from the same world, so every fact here
is stated in its entity's article. :mod:`~openenv_mcp.servers.search.generator` asks questions about them.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["Entity", "Facts", "facts", "number", "river", "year"]

Entity = Mapping[str, Any]


@dataclass(frozen=True)
class Facts:
    """Entities by kind (``people``, ``cities``, ``companies``...), each a list and a map by name."""

    kinds: dict[str, list[Entity]]
    by_name: dict[str, dict[str, Entity]]

    def __getitem__(self, kind: str) -> list[Entity]:
        return self.kinds[kind]

    def get(self, kind: str, name: str | None) -> Entity | None:
        """The entity of ``kind`` called ``name`` (``None`` for none)."""
        return self.by_name[kind].get(name) if name is not None else None


@functools.cache
def facts() -> Facts:
    """The shipped facts, read once per process."""
    raw = resources.files("openenv_mcp.servers.search").joinpath("data/facts.json.gz").read_bytes()
    kinds: dict[str, list[Entity]] = json.loads(gzip.decompress(raw))
    by_name = {kind: {str(e["name"]): e for e in entities if "name" in e} for kind, entities in kinds.items()}
    return Facts(kinds, by_name)


def year(value: int) -> list[str]:
    """A year's accepted answers."""
    return [str(value), f"in {value}"]


def number(value: int, unit: str) -> list[str]:
    """A count's accepted answers, with and without thousands separators and unit."""
    return [f"{value:,}", str(value), f"{value:,} {unit}", f"{value} {unit}"]


def river(name: str) -> list[str]:
    """A river's accepted answers: ``Ostoe River`` and ``Ostoe``."""
    return [name, name.removesuffix(" River")]
