"""Size-capped working directories: each episode directory (and each hidden test's) is a tmpfs of its own.

The cap bounds what a run can write in total (``RLIMIT_FSIZE`` bounds one file only). The
pages are memory, charged to the episode's control group where there is one. Only root can
mount; without root a directory is a plain one and the disk is not bounded.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

from openenv_mcp.servers.coding.confinement import unescape
from openenv_mcp.servers.coding.process import alive

__all__ = ["SOURCE", "mount_capped", "remove_capped", "remove_stale"]

SOURCE = f"openenv-coding-{os.getpid()}"
"""The tmpfs source name, as ``mount`` and ``/proc/self/mountinfo`` show it: the server that made it."""

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_mount = _libc.mount
_mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_umount2 = _libc.umount2
_umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def mount_capped(path: Path, size_mb: int, uid: int, gid: int) -> None:
    """Mount an empty tmpfs of ``size_mb`` MiB on ``path`` (mode 0700, owned by ``uid``); OSError on failure."""
    options = f"size={size_mb}m,nr_inodes={max(1024, size_mb * 256)},mode=0700,uid={uid},gid={gid}"
    result = _mount(SOURCE.encode(), os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode())
    if result != 0:
        failure = ctypes.get_errno()
        raise OSError(failure, os.strerror(failure), str(path))


def remove_capped(path: Path) -> None:
    """Unmount (lazily, should anything still use it) and remove a directory made by :func:`mount_capped`."""
    _umount2(os.fsencode(path), _MNT_DETACH)
    with contextlib.suppress(OSError):
        path.rmdir()


def remove_stale() -> list[str]:
    """Unmount the working directories of servers that died without unmounting theirs (killed with SIGKILL)."""
    removed = []
    with open("/proc/self/mountinfo", "rb") as table:
        lines = table.read().splitlines()
    for line in lines:
        fields = line.split(b" - ", 1)
        if len(fields) != 2 or len(fields[1].split()) < 2:
            continue
        kind, source = fields[1].split()[:2]
        if kind != b"tmpfs" or not source.startswith(b"openenv-coding-"):
            continue
        pid = source.rsplit(b"-", 1)[1]
        if not pid.isdigit() or int(pid) == os.getpid() or alive(int(pid)):
            continue
        point = fields[0].split(b" ")[4]
        remove_capped(Path(os.fsdecode(unescape(point))))
        removed.append(os.fsdecode(point))
    return removed
