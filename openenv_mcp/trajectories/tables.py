"""The trajectory store's five tables (see :mod:`~openenv_mcp.trajectories.store` for what each holds), and the
shapes of their rows: a step as the driver takes it, its JSON columns as text, a tool list's id.

Columns are only ever added, and only nullable ones, so a database an older version made keeps working.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import from_json, to_json
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "STEP_COLUMNS",
    "episodes",
    "journals",
    "json_text",
    "metadata",
    "step_row",
    "step_values",
    "steps",
    "toolset_id",
    "toolsets",
    "turns",
]

metadata = MetaData()

toolsets = Table(
    "trajectory_toolsets",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("server", String(128), nullable=False),
    Column("description", Text, nullable=False),
    Column("tools", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
)

episodes = Table(
    "trajectory_episodes",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("episode_id", String(128), nullable=False, index=True),
    Column("server", String(128), nullable=False, index=True),
    Column("toolset_id", String(32), nullable=False),
    Column("task_id", String(256), nullable=False, index=True),
    Column("split", String(64), nullable=False, index=True),
    Column("seed", BigInteger, nullable=False),
    Column("prompt", Text, nullable=False),
    Column("max_steps", Integer, nullable=False),
    Column("created_at", Float, nullable=False, index=True),
    Column("closed_at", Float),
    Column("step_count", Integer, nullable=False, default=0),
    Column("total_reward", Float, nullable=False, default=0.0),
    Column("done", Boolean, nullable=False, default=False),
    Column("dropped_steps", Integer, nullable=False, default=0),
)

steps = Table(
    "trajectory_steps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trajectory_id", String(32), nullable=False),  # indexed by the unique (trajectory_id, step) below
    Column("step", Integer, nullable=False),
    Column("tool", String(128), nullable=False),
    Column("arguments", JSON, nullable=False),
    Column("content", JSON, nullable=False),
    Column("structured_content", JSON),
    Column("is_error", Boolean, nullable=False),
    Column("reward", Float, nullable=False),
    Column("done", Boolean, nullable=False),
    Column("tool_seconds", Float, nullable=False),
    Column("at", Float, nullable=False),
    Column("scores", JSON),  # the grade's named parts (a rubric's components); NULL without them
    Column("reasons", JSON),  # why, for the parts that say (an LLM judge's reason); NULL without them
    UniqueConstraint("trajectory_id", "step"),
)

turns = Table(
    "trajectory_turns",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("server", String(128), nullable=False),
    Column("episode_id", String(128), nullable=False, index=True),
    Column("turn", Integer, nullable=False),
    Column("model", String(256), nullable=False),
    Column("finish_reason", String(64)),
    Column("prompt_ids", JSON, nullable=False),
    Column("completion_ids", JSON, nullable=False),
    Column("logprobs", JSON, nullable=False),
    Column("at", Float, nullable=False),
    # added with model turns (issue 25); NULL in rows written before, which were all captured turns
    Column("captured", Boolean),  # false: the token columns are empty lists, not the turn's tokens
    Column("text", Text),
    Column("content", Text),
    Column("calls", JSON),
    Column("parse", JSON),
    Column("reminder", Text),
    Column("error", Text),
    Column("end_reason", String(32)),
    Column("seconds", Float),
    # added with the capture proxy (issue 32); NULL in rows a chat policy writes
    Column("wire", String(32)),  # the wire format the harness spoke (chat, responses, messages, gemini)
    Column("side", Boolean),  # true: a request without tools (a title, a memory), not a turn of the policy
    Column("segment", Integer),  # the episode's segment: a run of turns each continuing the last prompt+completion
    Column("segment_reason", Text),  # on a segment's first turn after the first: why the prompt did not continue
)

journals = Table(
    "trajectory_journals",
    metadata,
    Column("journal", String(128), primary_key=True),  # a recorder's journal folder (its name)
    Column("segment", Integer, nullable=False),  # the end of the last batch written from it: its segment...
    Column("offset", BigInteger, nullable=False),  # ... and the byte after it there
    Column("at", Float, nullable=False),
)

STEP_COLUMNS = tuple(column.name for column in steps.columns if column.name != "id")


def toolset_id(server: str, description: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """A stable id for a server's tool list (a server that changes its tools gets a new one)."""
    canonical = json.dumps({"server": server, "description": description, "tools": tools}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def step_values(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A step row as :meth:`TrajectoryStore.write_values` takes it: ``STEP_COLUMNS``' order, JSON columns as text."""
    return (
        row["trajectory_id"],
        row["step"],
        row["tool"],
        json_text(row["arguments"]),
        json_text(row["content"]),
        json_text(row["structured_content"]),
        row["is_error"],
        row["reward"],
        row["done"],
        row["tool_seconds"],
        row["at"],
        json_text(row["scores"]),
        json_text(row.get("reasons")),
    )


_JSON_COLUMNS = frozenset(column.name for column in steps.columns if isinstance(column.type, JSON))


def step_row(values: Sequence[Any]) -> dict[str, Any]:
    """A step tuple back as a mapping of decoded values (for the JSON type of databases other than SQLite)."""
    return {
        name: from_json(value) if name in _JSON_COLUMNS else value
        for name, value in zip(STEP_COLUMNS, values, strict=True)
    }


def json_text(value: Any) -> str:
    """``value`` as the JSON text a JSON column holds (``None`` is JSON null, as the JSON type stores it)."""
    # pydantic-core: several times faster than json.dumps, and it takes models, dates and decimals as they are
    return to_json(value, fallback=repr).decode()
