"""The framing between a server's trajectory recorder and its writer process (both ways little-endian).

- recorder to writer: frames of ``u32 length`` + one pickled batch: ``{"opened", "stepped", "progress", "marked",
  "closed"}``, each a list, in the shape :meth:`TrajectoryStore.write_values` takes except for the steps. A step
  is one tuple ``(trajectory_id, step, tool, json, is_error, reward, done, tool_seconds, at)`` where ``json`` is
  one JSON array (bytes) of its ``[arguments, content, structured_content, scores]``: one serialiser call on the
  server's side, split into the store's four JSON columns on the writer's (:func:`step_values`);
- writer to recorder: per write, ``u32 written, u32 lost`` (steps stored, steps of a batch the database refused).

A module of its own so that the writer (run as ``python -m openenv_mcp.trajectories.writer``) is never imported
by the package it runs from.
"""

from __future__ import annotations

import struct
from typing import Any

from pydantic_core import from_json, to_json

FRAME = struct.Struct("<I")
ACK = struct.Struct("<II")


def step_values(step: tuple[Any, ...]) -> tuple[Any, ...]:
    """A step as sent, as :meth:`TrajectoryStore.write_values` stores it (``STEP_COLUMNS`` order, JSON as text)."""
    trajectory_id, number, tool, json, is_error, reward, done, tool_seconds, at = step
    arguments, content, structured_content, scores = from_json(json)
    return (
        trajectory_id,
        number,
        tool,
        to_json(arguments).decode(),
        to_json(content).decode(),
        to_json(structured_content).decode(),
        is_error,
        reward,
        done,
        tool_seconds,
        at,
        to_json(scores).decode(),
    )
