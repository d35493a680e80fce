"""One sandboxed process seen from the server: its output captured with a cap, its stdin fed,
its process group or PID namespace killed, its children listed, and the report of a failed confinement."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass, field

__all__ = ["Capture", "alive", "children", "feed", "kill_group", "kill_namespace", "read_report"]


@dataclass(slots=True)
class Capture:
    """Output read as it comes; past ``cap`` bytes the rest is dropped and ``overflow`` is set."""

    cap: int
    overflow: asyncio.Event
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    async def pump(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65_536):
            room = self.cap - len(self.data)
            if len(chunk) > room:
                self.data += chunk[: max(room, 0)]
                self.truncated = True
                self.overflow.set()
            else:
                self.data += chunk

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    """Write ``data`` to the program's stdin and close it."""
    if stream is None:
        return
    try:
        if data:
            stream.write(data)
            await stream.drain()
        stream.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the program exited (or closed stdin) without reading all of it


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(pid: int) -> None:
    """SIGKILL every process of the group ``pid`` leads."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pid, signal.SIGKILL)


def kill_namespace(pid: int) -> None:
    """SIGKILL the child of ``pid`` (``unshare``): the init of the run's PID namespace, and so all in it.

    The child is held by a pidfd and checked to be ``pid``'s child still before the signal, so a
    recycled process id is never signalled.
    """
    for child in children(pid):
        try:
            handle = os.pidfd_open(child)
        except OSError:  # gone already
            continue
        try:
            if child in children(pid):
                signal.pidfd_send_signal(handle, signal.SIGKILL)
        except OSError:
            pass  # it died meanwhile
        finally:
            os.close(handle)


def children(pid: int) -> list[int]:
    """The children of ``pid`` (empty when it is gone or the kernel does not list them)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]
    except (OSError, ValueError):
        return []


def read_report(fd: int) -> str | None:
    """What a child whose confinement failed wrote (None when it reached exec)."""
    chunks = []
    try:
        os.set_blocking(fd, False)  # the child has exec'd or exited by now; never wait here
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    return b"".join(chunks).decode(errors="replace") or None
