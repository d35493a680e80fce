"""Recording prod MCP sessions: every tool call and its result, as JSON lines, for ``openenv-mcp tasks mine``.

Off unless the operator sets ``OPENENV_RECORD_SESSIONS`` to a file. Each call of a prod server becomes one line::

    {"server": "sql", "session": "3f...", "at": 1764170000.1, "tool": "run_query", "arguments": {...},
     "is_error": false, "text": "...", "structured_content": {...}}

``session`` is the MCP session the call came in on (``null`` for a sessionless request). An environment that
declares an opening call (``Environment.declares.mining.opening``, read-only: memory's ``read_graph``) gets it made
on the prod backend when a session's first call arrives, before that call runs: its line carries ``"opening": true``
and is the state the session started from, which ``tasks mine`` starts the task from. Privacy: nothing is
recorded unless recording is turned on; the redaction hook (``OPENENV_RECORD_REDACT=module:function``) gets each
record before anything is written and returns it redacted, or ``None`` to leave the call out; a hook that fails
drops the call (never the unredacted record). ``OPENENV_RECORD_MAX_BYTES`` caps the file: past it, calls are no
longer recorded (logged once). Lines are written by a thread of the recorder's own, so a call never waits on the
disk.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.errors import ConfigError
from openenv_mcp.models import Observation

if TYPE_CHECKING:
    from openenv_mcp.runtime import Runtime

__all__ = ["Redactor", "SessionRecorder", "load_redactor", "read_sessions", "record_sessions"]

log = logging.getLogger(__name__)

Redactor = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""A redaction hook: a call's record in, the record to store (or ``None``: store nothing) out."""


def load_redactor(spec: str) -> Redactor:
    """The hook ``module:function`` names; :class:`ConfigError` saying what to fix otherwise."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise ConfigError(f"OPENENV_RECORD_REDACT={spec!r}: give module:function, e.g. mycompany.privacy:redact")
    try:
        hook = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"OPENENV_RECORD_REDACT={spec!r} cannot be loaded: {exc}") from None
    if not callable(hook):
        raise ConfigError(f"OPENENV_RECORD_REDACT={spec!r} is not a function")
    return hook  # type: ignore[no-any-return]


class SessionRecorder:
    """Writes each prod call of a runtime to a JSON-lines file (attach it with :func:`record_sessions`)."""

    def __init__(self, path: Path, *, server: str, max_bytes: int, redact: Redactor | None = None) -> None:
        self.path = path
        self.server = server
        self.max_bytes = max_bytes
        self.redact = redact
        self.recorded = 0
        self.left_out = 0  # by the hook, by a failing hook, or past the cap
        self._size = 0
        self._full = False
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._size = self.path.stat().st_size if self.path.exists() else 0
        out = self.path.open("a", encoding="utf-8")
        self._thread = threading.Thread(target=self._write, args=(out,), name="session-recorder", daemon=True)
        self._thread.start()

    def _write(self, out: IO[str]) -> None:
        with out:
            for line in iter(self._lines.get, None):
                out.write(line)
                out.flush()

    async def stop(self) -> None:
        if self._thread is not None:
            self._lines.put(None)
            await asyncio.to_thread(self._thread.join)
            self._thread = None

    def on_call(self, session: str | None, call: BoundCall, observation: Observation, *, opening: bool = False) -> None:
        """Record one prod call (redacted first), or a session's ``opening``; never raises into the call."""
        record: dict[str, Any] | None = {
            **({"opening": True} if opening else {}),
            "server": self.server,
            "session": session,
            "at": round(time.time(), 3),
            "tool": call.tool.name,
            "arguments": dict(call.arguments),
            "is_error": observation.is_error,
            "text": observation.text,
            "structured_content": observation.structured_content,
        }
        if self.redact is not None:
            # the hook gets a copy: the arguments and result are the caller's, and its answer is still to be sent
            copy = json.loads(json.dumps(record, default=str))
            try:
                record = self.redact(copy)
            except Exception:  # an operator's plugin: whatever it raises, the call is left out, never stored unredacted
                log.exception("the session redaction hook failed; the call is not recorded")
                record = None
        if record is None:
            self.left_out += 1
            return
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        size = len(line.encode("utf-8"))
        if self._size + size > self.max_bytes:
            if not self._full:
                log.warning("session recording stopped: %s reached OPENENV_RECORD_MAX_BYTES", self.path)
                self._full = True
            self.left_out += 1
            return
        self._size += size
        self.recorded += 1
        self._lines.put(line)


def record_sessions(runtime: Runtime) -> SessionRecorder | None:
    """Record ``runtime``'s prod calls when its settings turn recording on (``None`` when off, or in sim)."""
    settings = runtime.settings
    if runtime.sim or settings.record_sessions is None:
        return None
    redact = load_redactor(settings.record_redact) if settings.record_redact else None
    recorder = SessionRecorder(
        settings.record_sessions, server=runtime.env.name, max_bytes=settings.record_max_bytes, redact=redact
    )
    runtime.record_calls(recorder)
    return recorder


def read_sessions(path: Path) -> dict[tuple[str, str | None], list[Mapping[str, Any]]]:
    """A recording's calls, by (server, session), in the order they were recorded."""
    sessions: dict[tuple[str, str | None], list[Mapping[str, Any]]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read the recording {path}: {exc.strerror}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            key = (str(record["server"]), record.get("session"))
        except (ValueError, KeyError, TypeError):
            raise ConfigError(f"{path}:{number} is not a recorded call (a JSON object with server and tool)") from None
        sessions.setdefault(key, []).append(record)
    return sessions
