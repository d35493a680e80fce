"""The trajectory writer: a process of its own that writes the batches a server's recorder sends it.

``python -m openenv_mcp.trajectories.writer URL RETRY_DELAY`` reads batches on stdin and answers each on stdout,
so that the database work (SQLAlchemy, the driver, SQLite's B-trees) runs on another core than the server's
event loop instead of taking the server's interpreter from it.

The wire (:mod:`openenv_mcp.trajectories.pipe`), private to this package (the recorder starts its writer from
the same installation):

- in: frames of ``u32 length`` + a pickled batch, ``{"opened", "stepped", "progress", "marked", "closed"}``
  (steps one tuple of plain values each, their JSON columns already serialised);
- out: per frame, ``u32 written, u32 lost``: steps stored, and steps of a batch the database refused three times.

The writer reads until end of input, which is how it stops: the recorder closes the pipe after its last batch,
and a server that dies (even by SIGKILL) closes it too, so the writer never outlives it. It writes what it has
read, then exits. It ignores SIGINT and SIGTERM, which a terminal or a process manager may send to the server's
whole process group: the server is still flushing then, and stopping is its call.
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import signal
import sys
import time
from typing import Any

from openenv_mcp.errors import BackendUnavailable
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

    store = TrajectoryStore(url)
    source = _Input(sys.stdin.fileno())
    out = sys.stdout.fileno()
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
