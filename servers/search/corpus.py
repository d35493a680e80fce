"""The shipped corpus: a generated fictional encyclopedia and news archive (``data/corpus.jsonl.gz``).

The same records feed the sim index (built once per process) and the prod loader
(``python -m openenv_mcp.servers.search.load``). ``data/generate.py`` regenerates them deterministically.
"""

from __future__ import annotations

import functools
import gzip
import json
from dataclasses import dataclass
from importlib import resources

__all__ = ["Record", "corpus"]


@dataclass(frozen=True, slots=True)
class Record:
    """One document of the corpus; ``date`` is an ISO day."""

    doc_id: str
    title: str
    category: str
    date: str
    text: str


@functools.cache
def corpus() -> tuple[Record, ...]:
    """Every document, in doc_id order (read and parsed once per process)."""
    raw = resources.files("openenv_mcp.servers.search").joinpath("data/corpus.jsonl.gz").read_bytes()
    return tuple(Record(**json.loads(line)) for line in gzip.decompress(raw).splitlines() if line)
