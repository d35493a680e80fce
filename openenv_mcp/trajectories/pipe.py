"""The wire between a server's trajectory recorder and its writer process (lengths little-endian).

- recorder to writer, on the writer's stdin: first a frame of ``u32 length`` + JSON, the server's tool list
  (``{"server", "description", "tools"}``); then a byte per batch appended to the journal
  (:mod:`openenv_mcp.trajectories.journal`), which only wakes the writer. Its end (a clean stop, or the server's
  death) tells the writer to write what the journal holds and exit.
- a batch, in the journal: a frame holding ``(opened, stepped, progress, marked, closed)`` in ``marshal``'s
  format (the writer runs the server's own interpreter), each a list in the shape
  :meth:`TrajectoryStore.write_values` takes except a step, which is the server's values as they were: ``(uid,
  step, tool, arguments, content, structured_content, is_error, reward, done, seconds, at, scores, reasons)``, its
  content the text when it is one text block (else its JSON), its JSON columns the values themselves (or their
  JSON, when marshal refused a value), except a structured content that the one text block already is (a tool's
  result as :meth:`~openenv_mcp.environment.tools.Tool.render` makes it: the text is its JSON), sent as ``True``
  and stored as that text. The recorder only gathers references, so a step costs the server no
  serialising of its own; :func:`step_values` makes the store's row in the writer.
- writer to recorder, on its stdout: first a hello, ``u32 length`` + JSON (``{"toolset": ID}``, or ``{"error":
  MESSAGE}`` when the store cannot be opened), then per write ``u32 lost, u32 segment, u64 offset``: the
  journal's batches up to that position are done, and of their steps ``lost`` were refused by the database. A
  writer started again after one that died answers for what it finds already stored too; the recorder counts each
  batch once, by its position.

A module of its own so that the writer (run as ``python -m openenv_mcp.trajectories.writer``) is never imported
by the package it runs from.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import struct
from typing import Any

from pydantic_core import to_json

FRAME = struct.Struct("<I")
ACK = struct.Struct("<IIQ")
_PIPE_SIZE = 1 << 20


def step_values(step: tuple[Any, ...]) -> tuple[Any, ...]:
    """A step as sent, as :meth:`TrajectoryStore.write_values` stores it (``STEP_COLUMNS`` order, JSON as text:
    the text pydantic-core makes of each value, as the server's own serialising did)."""
    uid, number, tool, arguments, content, structured_content, is_error, reward, done, seconds, at, scores, why = step
    return (
        uid,
        number,
        tool,
        _text(arguments),
        '[{"type":"text","text":' + to_json(content).decode() + "}]" if type(content) is str else content.decode(),
        content if structured_content is True else _text(structured_content),
        is_error,
        reward,
        done,
        seconds,
        at,
        _text(scores),
        _text(why),
    )


def _text(value: Any) -> str:
    return value.decode() if type(value) is bytes else to_json(value, fallback=repr).decode()


async def read_hello(answers: asyncio.StreamReader) -> dict[str, str]:
    """The writer's first answer (see :mod:`openenv_mcp.trajectories.writer`); empty if it exited without one."""
    try:
        (length,) = FRAME.unpack(await answers.readexactly(FRAME.size))
        return dict(json.loads(await answers.readexactly(length)))
    except asyncio.IncompleteReadError:
        return {}


def step_as_json(step: tuple[Any, ...]) -> tuple[Any, ...]:
    """A step whose values marshal refused, with its JSON columns serialised here (pipe.py takes either)."""
    uid, number, tool, arguments, content, structured, is_error, reward, done, seconds, at, scores, reasons = step
    encoded = [to_json(value, fallback=repr) for value in (arguments, scores, reasons)]
    structured = structured if structured is True else to_json(structured, fallback=repr)
    return (uid, number, tool, encoded[0], content, structured, is_error, reward, done, seconds, at, *encoded[1:])


def widen(pipe: asyncio.StreamWriter) -> None:
    """Make the pipe hold 1 MB (Linux: 64 KB by default): the tool list, written before the writer reads, and the
    wake-up bytes of a writer far behind never fill it."""
    end = pipe.transport.get_extra_info("pipe")
    if end is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):  # capped by /proc/sys/fs/pipe-max-size (1 MB by default)
            fcntl.fcntl(end.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
