"""What search declares for the toolkit: what parity forgives between its sim index and each prod engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openenv_mcp.environment.declarations import COMMON, Declarations, Mining, Normaliser, Parity

__all__ = ["declarations", "normalise"]


def normalise(tool: str, arguments: Mapping[str, Any], value: Any) -> Any:
    """A hit's score and snippet: the ranked documents still count."""
    if tool == "search" and isinstance(value, dict) and isinstance(value.get("hits"), list):
        hits = [{k: v for k, v in hit.items() if k not in ("score", "snippet")} for hit in value["hits"]]
        value = {**value, "hits": hits}
    return value


declarations = Declarations(
    parity=Parity(
        normaliser=Normaliser(
            forgives=(
                *COMMON,
                "a hit's score and snippet: BM25 (SQLite FTS5) and ts_rank_cd (PostgreSQL) or Sphinx's ranker score "
                "on scales of their own, and each engine cuts its own excerpt; which documents come back, in what "
                "order, still counts",
            ),
            rule=normalise,
        )
    ),
    mining=Mining(
        why_not="a search task is graded by its gold answer, which a recording does not hold: it holds the answer "
        "the agent submitted, and prod grades nothing, so nothing says whether that answer was right"
    ),
)
"""search's declarations (``Environment.declares``)."""
