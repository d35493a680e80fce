"""Trajectories: every sim step recorded into SQLite or PostgreSQL, exported as chat-format records.

- :class:`TrajectoryRecorder` is an episode observer (attach it with :func:`record_trajectories`);
  it queues events on the hot path and writes them in batches from a thread.
- :func:`export_jsonl` / :func:`iter_records` read the store back as chat-format records
  (``openenv-mcp trajectories export``).
- :class:`TurnRecorder` stores the token ids and log-probabilities a capturing policy kept per model
  call (:class:`Turn`); exported records carry them (``turns``, ``tokens``).

Importing this package does not import SQLAlchemy; the store is loaded when first used.
"""

from openenv_mcp.trajectories.chat import openai_tools
from openenv_mcp.trajectories.export import EpisodeFilter, chat_record, export_jsonl, iter_records
from openenv_mcp.trajectories.recorder import TrajectoryRecorder, record_trajectories
from openenv_mcp.trajectories.turns import Turn, TurnRecorder, TurnSink, token_fields

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
