"""The trajectory writer: a process of its own that writes the batches a server's recorder journals.

``python -m openenv_mcp.trajectories.writer URL RETRY_DELAY JOURNAL`` reads the batches the server appends to the
journal folder JOURNAL (:mod:`openenv_mcp.trajectories.journal`), writes them to the store and answers each write
on stdout, so that the database work (SQLAlchemy, the driver, SQLite's B-trees) and the turning of the server's
values into rows run beside the server's event loop instead of in its interpreter. It runs at the lowest priority
(``SCHED_IDLE``; niceness +10 where that is refused): when both want the CPU, the server's steps go first and the
backlog waits in the journal, on disk, not in anyone's memory.

The wire (:mod:`openenv_mcp.trajectories.pipe`), private to this package (the recorder starts its writer from
the same installation):

- stdin: first the server's tool list (a frame of ``u32 length`` + JSON ``{"server", "description", "tools"}``),
  then a byte per batch journaled, which only wakes the writer;
- stdout: first the hello, a frame of ``u32 length`` + JSON: ``{"toolset": ID}`` once the store's tables exist and
  the tool list is saved, or ``{"error": MESSAGE}`` when the store cannot be opened (then the writer exits);
  then per write ``u32 lost, u32 segment, u64 offset``: the journal is done up to there, and ``lost`` steps of it
  the database refused three times.

The writer opens the store itself, so that the server never imports SQLAlchemy to record: its start-up waits for
the hello while it loads the MCP SDK, and the store's creation runs on the other core.

The writer reads until its stdin ends, which is how it stops: the recorder closes the pipe after its last batch,
and a server that dies (even by SIGKILL) closes it too, so the writer never outlives it. It writes every batch
the journal holds, deletes the journal, then exits. It ignores SIGINT and SIGTERM, which a terminal or a process
manager may send to the server's whole process group: the server is still flushing then, and stopping is its call.

Each transaction also stores where in the journal its last batch ends, so a writer reading a journal again skips
what is stored (:mod:`~openenv_mcp.trajectories.journal`): the recorder starts another writer on its journal when
one dies, and a writer first takes up the journals beside its own that were left for its store by a server and
writer that died together.
"""

from __future__ import annotations

import contextlib
import json
import logging
import marshal
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openenv_mcp.errors import BackendUnavailable, ConfigError
from openenv_mcp.trajectories.journal import JournalReader, Position, orphans, remove
from openenv_mcp.trajectories.pipe import ACK, FRAME, step_values

ATTEMPTS = 3
NICE = 10  # the writer's niceness where SCHED_IDLE is not to be had
MERGE = 10  # frames waiting at once are written in one transaction (a commit costs about a thousand rows) ...
MERGE_BYTES = 4 << 20  # ... and up to about this many bytes of them: the rows of large results stay in bounds

log = logging.getLogger("openenv_mcp.trajectories.writer")


def _yield_the_cpu() -> None:
    """Run only when the server and its clients leave a core idle (Linux's SCHED_IDLE: any other task that wakes
    takes the core at once), else at niceness +10; a writer behind leaves its backlog in the journal."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(NICE)


def _read(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``; None if its input ends first."""
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


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
    url, retry_delay, directory = args[0], float(args[1]), Path(args[2])
    _yield_the_cpu()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    from openenv_mcp.trajectories.store import TrajectoryStore  # after the signals: importing takes a while

    source, out = sys.stdin.fileno(), sys.stdout.fileno()
    header = _read(source, FRAME.size)
    toolset = None if header is None else _read(source, FRAME.unpack(header)[0])
    if toolset is None:
        return 0  # the server went before sending anything
    try:
        store = TrajectoryStore(url)  # a malformed URL, a store that cannot be reached: ConfigError, said in the hello
        store.create()
        hello = {"toolset": store.save_toolset(**json.loads(toolset))}
    except ConfigError as exc:
        _say(out, {"error": exc.message})
        return 2
    _say(out, hello)
    for orphan, lock in orphans(directory.parent, url):
        try:
            if orphan != directory:
                _take_up(store, orphan, retry_delay)
        finally:
            os.close(lock)
    journal = JournalReader(directory)
    finished = False
    try:
        stored = store.journal_position(directory.name)  # a writer before this one (which died) wrote up to here
        awake = True
        while awake:
            awake = bool(os.read(source, 1 << 16))  # a byte a batch; nothing: the server is gone or done
            for end, _written, lost in _drain(store, journal, stored, retry_delay):
                with contextlib.suppress(BrokenPipeError):  # the server is gone: the journal is written all the same
                    os.write(out, ACK.pack(lost, *end))
        finished = True
    finally:
        journal.close()
        if finished:  # written to its end: the journal and its position go
            remove(directory)
            with contextlib.suppress(BackendUnavailable):
                store.forget_journal(directory.name)
        store.close()
    return 0


def _take_up(store: Any, directory: Path, retry_delay: float) -> None:
    """Write what a journal whose server and writer both died holds beyond what its writer stored, then delete
    it. A journal that cannot be read (another Python's format) or a store that cannot be read leaves it be."""
    name, steps, lost = directory.name, 0, 0
    try:
        journal = JournalReader(directory)
        for _end, written, refused in _drain(store, journal, store.journal_position(name), retry_delay):
            steps, lost = steps + written, lost + refused
        journal.close()
        remove(directory)
        store.forget_journal(name)
    except (BackendUnavailable, ValueError, EOFError, TypeError, OSError) as exc:
        log.warning("Left the trajectory journal %s as it is: %s", directory, exc)
        return
    log.warning(
        "Took up the trajectory journal %s, left by a server and writer that died: %d steps written, %d lost",
        directory,
        steps,
        lost,
    )


def _drain(
    store: Any, journal: JournalReader, stored: Position | None, retry_delay: float
) -> Iterator[tuple[Position, int, int]]:
    """Write every batch ``journal`` holds now, several per transaction, leaving out those that end at or before
    ``stored`` (written by a writer before): per transaction, where it ends, steps written and steps lost."""
    while frames := journal.frames(MERGE, MERGE_BYTES):
        end = frames[-1][0]
        fresh = [frame for position, frame in frames if stored is None or position > stored]
        written, lost = _write(store, fresh, retry_delay, (journal.directory.name, *end)) if fresh else (0, 0)
        yield end, written, lost


def _batch(frame: tuple[list[Any], ...]) -> dict[str, list[Any]]:
    """A batch as sent (pipe.py), in the shape :meth:`TrajectoryStore.write_values` takes."""
    opened, stepped, progress, marked, closed = frame
    return {
        "opened": opened,
        "stepped": [step_values(step) for step in stepped],
        "progress": progress,
        "marked": marked,
        "closed": closed,
    }


def _say(out: int, hello: dict[str, str]) -> None:
    data = json.dumps(hello).encode()
    os.write(out, FRAME.pack(len(data)) + data)


def _write(store: Any, frames: list[bytes], retry_delay: float, position: tuple[str, int, int]) -> tuple[int, int]:
    """Write ``frames`` in one transaction, with where they end in their journal: steps stored, steps lost (the
    database refused them three times)."""
    batch = merge([_batch(marshal.loads(frame)) for frame in frames])
    steps = len(batch["stepped"])
    for attempt in range(1, ATTEMPTS + 1):
        try:
            store.write_values(**batch, position=position)
            return steps, 0
        except BackendUnavailable as exc:
            if attempt == ATTEMPTS:
                log.error("%s (tried %d times); %d steps lost", exc.message, attempt, steps)
                return 0, steps
            time.sleep(retry_delay * 2 ** (attempt - 1))
    return 0, steps  # not reached


if __name__ == "__main__":
    sys.exit(main())
