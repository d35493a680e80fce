"""The framing between a server's trajectory recorder and its writer process (both ways little-endian).

- recorder to writer: frames of ``u32 length`` + a pickle: first the server's tool list (``{"server",
  "description", "tools"}``), then one batch a frame: ``{"opened", "stepped", "progress", "marked", "closed"}``,
  each a list, in the shape :meth:`TrajectoryStore.write_values` takes except that a step's five JSON columns
  (arguments, content, structured_content, scores, reasons) are the UTF-8 bytes pydantic-core made
  (:func:`step_values` turns them into text);
- writer to recorder: first a hello, ``u32 length`` + JSON (``{"toolset": ID}``, or ``{"error": MESSAGE}`` when the
  store cannot be opened), then per write ``u32 written, u32 lost`` (steps stored, steps of a batch the database
  refused).

A module of its own so that the writer (run as ``python -m openenv_mcp.trajectories.writer``) is never imported
by the package it runs from.
"""

from __future__ import annotations

import struct
from typing import Any

FRAME = struct.Struct("<I")
ACK = struct.Struct("<II")


def step_values(step: tuple[Any, ...]) -> tuple[Any, ...]:
    """A step as sent, as :meth:`TrajectoryStore.write_values` stores it (``STEP_COLUMNS`` order, JSON as text)."""
    uid, number, tool, arguments, content, structured_content, is_error, reward, done, seconds, at, scores, why = step
    return (
        uid,
        number,
        tool,
        arguments.decode(),
        content.decode(),
        structured_content.decode(),
        is_error,
        reward,
        done,
        seconds,
        at,
        scores.decode(),
        why.decode(),
    )
