"""What a harness leaves behind, found and stopped: its process group, and every process living in its home.

A harness runs in a process group of its own with ``HOME`` set to a home made for its episode. Some leave a
process behind when they exit (Cline's ``--cline-hub-daemon`` starts a session of its own, outside the group), so
the processes are also found by that ``HOME`` in their environment (``/proc/PID/environ``: Linux). Each gets
SIGTERM, and SIGKILL when it is still there after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import anyio

__all__ = ["living_in", "stop_leftovers"]

_PROC = Path("/proc")


def living_in(home: Path) -> list[int]:
    """The processes whose ``HOME`` is ``home`` (only this user's: others' environments cannot be read)."""
    marker = f"HOME={home}".encode()
    found = []
    for entry in _PROC.iterdir() if _PROC.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or another user's
            continue
        if marker in environ.split(b"\0") and not _zombie(entry):
            found.append(int(entry.name))
    return found


def _zombie(entry: Path) -> bool:
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _signal_all(group: int | None, pids: list[int], sign: signal.Signals) -> None:
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sign)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sign)


async def stop_leftovers(home: Path, *, group: int | None = None, grace: float = 3.0) -> list[int]:
    """Stop the process group ``group`` and every process living in ``home``; what was found left (their ids).

    SIGTERM first, SIGKILL to those still there after ``grace`` seconds; returns once none is left (or after a
    second more, which only a process stuck in the kernel outlasts).
    """
    left = living_in(home)
    _signal_all(group, left, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while living_in(home) and time.monotonic() < deadline:  # the group's members live there too
        await anyio.sleep(0.05)
    stubborn = living_in(home)
    _signal_all(group, stubborn, signal.SIGKILL)
    deadline = time.monotonic() + 1.0
    while living_in(home) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    return left
