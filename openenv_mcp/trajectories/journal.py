"""The journal between a server's trajectory recorder and its writer process: batches on disk, not in memory.

The recorder appends each batch as a frame (``u32 length`` + the batch, :mod:`openenv_mcp.trajectories.pipe`) to
the current **segment**, a file of the journal's directory (``segment-000000``, ``segment-000001``...), with one
``write`` to the page cache, and wakes the writer with a byte on its pipe. The writer reads the frames as they
come, whatever its pace: a writer that falls behind (it runs at a lower priority than the server, and the database
may be slow) leaves the backlog on disk, and the server goes on without waiting until the backlog reaches its
bound (``OPENENV_TRAJECTORIES_QUEUE``). When a segment passes :data:`SEGMENT_BYTES` the recorder starts the next
one; the writer deletes a segment once it has read all of it, which it knows when the next one exists (the
recorder creates it only after its last write to the one before).

A frame is written whole or the server died during its write: the writer reads complete frames only, so a
``kill -9`` of the server loses the batch it was filling (at most ``flush_interval`` seconds or ``batch_size``
steps) and nothing the journal holds: the writer reads to the end of the journal before it exits.

**Nothing journaled is lost to a crash of both.** The journal's folder holds a ``lock`` file, locked
(``flock``) by the recorder from the start and held by every writer it starts (they inherit it): the kernel lets
it go only when the server and its writers are all gone. It also holds ``store``, a digest of the store's URL.
The store keeps, in the transaction of each batch it writes, where in the journal that batch ends
(``trajectory_journals``: segment and offset), so a writer reading a journal again skips exactly what is stored:
a writer that died and was started again, or the writer of the next server on the same store, which takes up the
journals in its folder whose lock nobody holds (:func:`orphans`): their server and writer died together.

A module of its own, imported by the writer without the package's heavier modules.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from openenv_mcp.trajectories.pipe import FRAME

SEGMENT_BYTES = 64 << 20
PREFIX = "trajectory-journal-"  # a recorder's journal folder: PREFIX + a random part (tempfile.mkdtemp)
LOCK, STORE = "lock", "store"

Position = tuple[int, int]
"""Where a frame ends in a journal: its segment's number and the offset of the byte after it there."""

log = logging.getLogger("openenv_mcp.trajectories.journal")


def segment(directory: Path, number: int) -> Path:
    return directory / f"segment-{number:06d}"


def store_key(url: str) -> str:
    """What a journal's ``store`` file holds: a digest of the store's URL (which may hold a password)."""
    return hashlib.blake2b(url.encode(), digest_size=16).hexdigest()


def lock(directory: Path, *, wait: bool) -> int | None:
    """Lock ``directory``'s journal; the open lock file's descriptor, or None when another process holds it (or
    it has no lock file: not a journal, or one still being made)."""
    try:
        fd = os.open(directory / LOCK, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        os.close(fd)
        return None
    return fd


def orphans(root: Path, url: str) -> Iterator[tuple[Path, int]]:
    """The journals in ``root`` for the store at ``url`` that no live server or writer holds, each locked (its
    lock's descriptor) while the caller writes it."""
    key = store_key(url)
    with contextlib.suppress(OSError):
        for directory in sorted(root.glob(PREFIX + "*")):
            try:
                if (directory / STORE).read_text() != key:
                    continue  # another store's journal: its own next server takes it up
            except OSError:
                continue
            fd = lock(directory, wait=False)
            if fd is not None:
                yield directory, fd


def remove(directory: Path) -> None:
    """Delete a journal's folder and what it still holds."""
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            path.unlink(missing_ok=True)
        directory.rmdir()


class JournalAppender:
    """The recorder's end: appends frames to the current segment, starting the next one past ``SEGMENT_BYTES``."""

    def __init__(self, directory: Path, url: str) -> None:
        self.directory = directory
        self.number = 0
        self.size = 0
        (directory / LOCK).touch(0o600)
        lock_fd = lock(directory, wait=True)
        if lock_fd is None:
            raise OSError(f"cannot lock the trajectory journal {directory}")
        self.lock_fd = lock_fd  # held for the server's life; its writers inherit it
        # written once locked: a journal with a store file is locked by its owner or left (orphans looks there first)
        (directory / STORE).write_text(store_key(url))
        self._fd = self._open()

    def _open(self, number: int = 0) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        return os.open(segment(self.directory, number), flags, 0o600)

    def append(self, payload: bytes) -> Position:
        """Write one frame; where it ends. Raises OSError (a full or failing disk): the frame does not count, and
        a part of it already written ends its segment (the reader leaves that part out; the next frame starts a
        new one)."""
        data = FRAME.pack(len(payload)) + payload
        if self.size and self.size + len(data) > SEGMENT_BYTES:
            self._next()
        view, written = memoryview(data), 0
        try:
            while written < len(data):
                written += os.write(self._fd, view[written:])
        except OSError:
            if written:
                self._next()
            raise
        self.size += len(data)
        return self.number, self.size

    def _next(self) -> None:
        fd = self._open(self.number + 1)
        os.close(self._fd)
        self._fd, self.number, self.size = fd, self.number + 1, 0

    def close(self) -> None:
        os.close(self._fd)
        os.close(self.lock_fd)


class JournalReader:
    """The writer's end: the complete frames appended so far, segment after segment, each deleted once read.

    It starts at the first segment the journal holds (a journal read before, by a writer that died, has lost the
    segments that writer finished)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        numbers = [int(path.name.removeprefix("segment-")) for path in directory.glob("segment-[0-9]*")]
        self.number = min(numbers, default=0)
        self._file: BinaryIO | None = None
        self._buffer = bytearray()
        self._consumed = 0  # bytes of this segment in the frames returned
        self._sealed = False  # the next segment exists: this one will not grow

    def frames(self, limit: int, budget: int) -> list[tuple[Position, bytes]]:
        """Up to ``limit`` frames, in order, each with where it ends, and no more once they hold ``budget`` bytes
        (the first is always returned); fewer (or none) when that is all the journal holds now."""
        out: list[tuple[Position, bytes]] = []
        size = 0
        while len(out) < limit and size < budget:
            frame = self._frame()
            if frame is not None:
                self._consumed += FRAME.size + len(frame)
                size += len(frame)
                out.append(((self.number, self._consumed), frame))
            elif self._fill():
                continue
            elif not self._sealed and segment(self.directory, self.number + 1).exists():
                self._sealed = True  # read this one to its end once more: its last frames may have come since
            elif self._sealed:
                self._next()
            else:
                break
        return out

    def close(self) -> None:
        """At the end: the segment read last goes too (with a partial frame the server died writing, if any)."""
        if self._buffer:
            log.warning("The trajectory journal ends in a partial batch (%d bytes): left out", len(self._buffer))
        self._drop()

    def _frame(self) -> bytes | None:
        buffer = self._buffer
        if len(buffer) < FRAME.size:
            return None
        (length,) = FRAME.unpack_from(buffer)
        end = FRAME.size + length
        if len(buffer) < end:
            return None
        frame = bytes(buffer[FRAME.size : end])
        del buffer[:end]
        return frame

    def _fill(self) -> bool:
        if self._file is None:
            try:
                self._file = segment(self.directory, self.number).open("rb")
            except FileNotFoundError:
                return False
        chunk = self._file.read(1 << 20)
        self._buffer += chunk
        return bool(chunk)

    def _next(self) -> None:
        if self._buffer:
            log.error("Trajectory journal segment %d ends in a partial batch: left out", self.number)
            self._buffer.clear()
        self._drop()
        self.number += 1
        self._consumed = 0
        self._sealed = False

    def _drop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        segment(self.directory, self.number).unlink(missing_ok=True)
