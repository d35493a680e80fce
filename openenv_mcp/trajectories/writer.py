"""The trajectory writer: a process of its own that writes the batches a server's recorder sends it.

``python -m openenv_mcp.trajectories.writer URL RETRY_DELAY`` reads batches on stdin and answers each on stdout,
so that the database work (SQLAlchemy, the driver, SQLite's B-trees) runs on another core than the server's
event loop instead of taking the server's interpreter from it.

The wire (:mod:`openenv_mcp.trajectories.pipe`), private to this package (the recorder starts its writer from
the same installation):

- in: first the server's tool list (a frame of ``u32 length`` + a pickled ``{"server", "description", "tools"}``),
  then frames of a pickled batch, ``{"opened", "stepped", "progress", "marked", "closed"}`` (steps one tuple of
  plain values each, their JSON columns already serialised);
- out: first the hello, a frame of ``u32 length`` + JSON: ``{"toolset": ID}`` once the store's tables exist and
  the tool list is saved, or ``{"error": MESSAGE}`` when the store cannot be opened (then the writer exits);
  then per batch frame, ``u32 written, u32 lost``: steps stored, and steps of a batch the database refused three
  times.

The writer opens the store itself, so that the server never imports SQLAlchemy to record: its start-up waits for
the hello while it loads the MCP SDK, and the store's creation runs on the other core.

The writer reads until end of input, which is how it stops: the recorder closes the pipe after its last batch,
and a server that dies (even by SIGKILL) closes it too, so the writer never outlives it. It writes what it has
read, then exits. It ignores SIGINT and SIGTERM, which a terminal or a process manager may send to the server's
whole process group: the server is still flushing then, and stopping is its call.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import select
import signal
import sys
import time
from typing import Any

from openenv_mcp.errors import BackendUnavailable, ConfigError
from openenv_mcp.trajectories.pipe import ACK, FRAME, step_values

ATTEMPTS = 3
MERGE = 10  # frames waiting at once are written in one transaction (a commit costs about a thousand rows)

log = logging.getLogger("openenv_mcp.trajectories.writer")


class _Input:
    """Frames from a file descriptor, read with ``os.read`` so that ``select`` sees exactly what is buffered."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()

    def _fill(self) -> bool:
        chunk = os.read(self.fd, 1 << 20)
        self.buffer += chunk
        return bool(chunk)

    def _frame(self) -> bytes | None:
        if len(self.buffer) < FRAME.size:
            return None
        (length,) = FRAME.unpack_from(self.buffer)
        if len(self.buffer) < FRAME.size + length:
            return None
        frame = bytes(self.buffer[FRAME.size : FRAME.size + length])
        del self.buffer[: FRAME.size + length]
        return frame

    def next(self) -> bytes | None:
        """The next frame (waiting for it); None at end of input."""
        while (frame := self._frame()) is None:
            if not self._fill():
                return None
        return frame

    def ready(self) -> bytes | None:
        """A frame already here, or readable without waiting; None otherwise."""
        frame = self._frame()
        while frame is None and select.select([self.fd], [], [], 0)[0]:
            if not self._fill():
                return None
            frame = self._frame()
        return frame


def merge(batches: list[dict[str, list[Any]]]) -> dict[str, list[Any]]:
    """Several batches as one, in order (a later progress row for an episode supersedes an earlier one)."""
    if len(batches) == 1:
        return batches[0]
    out: dict[str, list[Any]] = {"opened": [], "stepped": [], "progress": [], "marked": [], "closed": []}
    for batch in batches:
        for key, rows in batch.items():
            out[key] += rows
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    url, retry_delay = args[0], float(args[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    from openenv_mcp.trajectories.store import TrajectoryStore  # after the signals: importing takes a while

    source = _Input(sys.stdin.fileno())
    out = sys.stdout.fileno()
    toolset = source.next()
    if toolset is None:
        return 0  # the server went before sending anything
    try:
        store = TrajectoryStore(url)  # a malformed URL, a store that cannot be reached: ConfigError, said in the hello
        store.create()
        hello = {"toolset": store.save_toolset(**pickle.loads(toolset))}
    except ConfigError as exc:
        _say(out, {"error": exc.message})
        return 2
    _say(out, hello)
    try:
        while (frame := source.next()) is not None:
            frames = [frame]
            while len(frames) < MERGE and (more := source.ready()) is not None:
                frames.append(more)
            batches = [pickle.loads(f) for f in frames]
            for batch in batches:
                batch["stepped"] = [step_values(step) for step in batch["stepped"]]
            written, lost = _write(store, merge(batches), retry_delay)
            os.write(out, ACK.pack(written, lost))
    finally:
        store.close()
    return 0


def _say(out: int, hello: dict[str, str]) -> None:
    data = json.dumps(hello).encode()
    os.write(out, FRAME.pack(len(data)) + data)


def _write(store: Any, batch: dict[str, list[Any]], retry_delay: float) -> tuple[int, int]:
    steps = len(batch["stepped"])
    for attempt in range(1, ATTEMPTS + 1):
        try:
            store.write_values(**batch)
            return steps, 0
        except BackendUnavailable as exc:
            if attempt == ATTEMPTS:
                log.error("%s (tried %d times); %d steps lost", exc.message, attempt, steps)
                return 0, steps
            time.sleep(retry_delay * 2 ** (attempt - 1))
    return 0, steps  # not reached


if __name__ == "__main__":
    sys.exit(main())
