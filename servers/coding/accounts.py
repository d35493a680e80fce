"""Accounts: the unprivileged uids sandboxed code runs as, one per episode.

A uid of its own gives an episode three things no shared account can: its files are
unreadable to other episodes (directories 0700), ``RLIMIT_NPROC`` counts its processes
only (the kernel counts per real uid), and every process it left behind can be killed at
once (``kill(-1)`` sent as that uid reaches exactly them).

Uids come from a range (``CODING_UID_BASE``, ``CODING_UID_COUNT``) outside the ranges
Debian and systemd allocate. Several servers on one host share the range safely: a uid
is taken by locking its byte in one lock file (``CODING_UID_LOCK``), and the kernel drops
the lock if the server dies.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from openenv_mcp import BackendUnavailable, ConfigError

__all__ = ["Account", "UidPool"]


@dataclass(frozen=True, slots=True)
class Account:
    """Who sandboxed code runs as; ``pooled`` when it came from (and goes back to) a :class:`UidPool`."""

    uid: int
    gid: int
    pooled: bool = False


class UidPool:
    """Hands out uids from a range, exclusive across the processes of one host."""

    _open: ClassVar[dict[Path, UidPool]] = {}
    _open_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, lock_file: Path, base: int, count: int) -> None:
        self.base = base
        self.count = count
        self._taken: set[int] = set()
        self._lock = threading.Lock()
        try:
            lock_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise ConfigError(
                f"Cannot open the uid lock file {lock_file} ({exc.strerror}); set CODING_UID_LOCK"
            ) from None

    @classmethod
    def shared(cls, lock_file: Path, base: int, count: int) -> UidPool:
        """The process's one pool for ``lock_file``.

        POSIX record locks belong to the process, and closing any descriptor of the file drops
        them all, so the file must be opened once per process.
        """
        with cls._open_lock:
            pool = cls._open.get(lock_file)
            if pool is None:
                pool = cls._open[lock_file] = cls(lock_file, base, count)
            elif (pool.base, pool.count) != (base, count):
                raise ConfigError(
                    f"The uid lock {lock_file} is already used with another range in this process; "
                    "give each range its own CODING_UID_LOCK"
                )
            return pool

    def acquire(self) -> Account:
        """A uid no other episode on this host holds; its gid is the same number."""
        start = random.randrange(self.count)
        with self._lock:
            for step in range(self.count):
                offset = (start + step) % self.count
                uid = self.base + offset
                if uid in self._taken:
                    continue
                try:
                    fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
                except OSError:
                    continue  # held by another server on this host
                self._taken.add(uid)
                return Account(uid=uid, gid=uid, pooled=True)
        raise BackendUnavailable(
            f"All {self.count} sandbox uids from {self.base} are in use; close episodes or raise CODING_UID_COUNT"
        )

    def release(self, account: Account) -> None:
        with self._lock:
            if account.uid not in self._taken:
                return
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, account.uid - self.base, os.SEEK_SET)
            self._taken.discard(account.uid)

    def __len__(self) -> int:
        return len(self._taken)
