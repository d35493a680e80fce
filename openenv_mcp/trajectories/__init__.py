"""Trajectories: every sim step recorded into SQLite or PostgreSQL, exported as chat-format records.

- :class:`TrajectoryRecorder` is an episode observer (attach it with :func:`record_trajectories`);
  it queues events on the hot path and writes them in batches from a thread.
- :func:`export_jsonl` / :func:`iter_records` read the store back as chat-format records
  (``openenv-mcp trajectories export``).
- :class:`TurnRecorder` stores the token ids and log-probabilities a capturing policy kept per model
  call (:class:`Turn`); exported records carry them (``turns``, ``tokens``).

Importing this package does not import SQLAlchemy; the store is loaded when first used.
"""

from typing import TYPE_CHECKING, Any

from openenv_mcp.trajectories.chat import openai_tools
from openenv_mcp.trajectories.export import chat_record, export_jsonl, iter_records
from openenv_mcp.trajectories.recorder import TrajectoryRecorder, record_trajectories
from openenv_mcp.trajectories.turns import Turn, TurnRecorder, TurnSink, token_fields

if TYPE_CHECKING:
    from openenv_mcp.trajectories.store import EpisodeFilter


def __getattr__(name: str) -> Any:
    # EpisodeFilter lives with the store it selects from; the store (and SQLAlchemy) loads on first use.
    if name == "EpisodeFilter":
        from openenv_mcp.trajectories.store import EpisodeFilter

        return EpisodeFilter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EpisodeFilter",
    "TrajectoryRecorder",
    "Turn",
    "TurnRecorder",
    "TurnSink",
    "chat_record",
    "export_jsonl",
    "iter_records",
    "openai_tools",
    "record_trajectories",
    "token_fields",
]
