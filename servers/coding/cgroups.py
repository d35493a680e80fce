"""Control groups: one per episode (or prod workspace), bounding the memory and processes of all its runs together.

``RLIMIT_AS`` bounds each process; a control group bounds the sum over every process of the
episode and the files it keeps in its (tmpfs) working directory, which the kernel charges to
the group that wrote them. Runs of one episode never overlap (the sandbox gives an episode one
run slot at a time), so the episode's group is also each run's.

The server makes ``openenv-coding-<pid>`` under its own control group and one group per
episode under it; a sandboxed child joins its episode's group before it confines itself (it
writes ``0`` into ``cgroup.procs``, opened by the server). Two layouts are supported:

- **cgroup v2** (unified): ``memory.max``, ``memory.swap.max`` = 0, ``pids.max``, read back as
  ``memory.peak``. The controllers must be enabled in the server's group; if the server's group
  also holds processes, the server first moves itself into a leaf (``server``) next to its runs,
  as a container's init would be moved. Where this is refused (no delegation), nothing is bounded
  and :attr:`Cgroups.problem` says why.
- **cgroup v1** (separate ``memory`` and ``pids`` hierarchies): ``memory.limit_in_bytes`` (and
  ``memory.memsw.limit_in_bytes`` when swap is accounted), ``pids.max``, read back as
  ``memory.max_usage_in_bytes``.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from openenv_mcp.servers.coding.process import alive

__all__ = ["Cgroups", "Group"]

_ROOT = Path("/sys/fs/cgroup")


@dataclass(slots=True)
class Group:
    """One episode's control group: a directory per hierarchy (one on v2, memory and pids on v1)."""

    dirs: tuple[Path, ...]
    version: int

    def join_fds(self) -> list[int]:
        """Descriptors of each ``cgroup.procs`` (close-on-exec) for a child to write ``0`` into."""
        fds: list[int] = []
        try:
            for directory in self.dirs:
                fds.append(os.open(directory / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def memory_peak(self) -> int:
        """The most memory the group's processes and files held at once (bytes)."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        return int((self.dirs[0] / name).read_text())

    def processes(self) -> list[int]:
        found: set[int] = set()
        for directory in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(pid) for pid in (directory / "cgroup.procs").read_text().split())
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process still in the group."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
                return
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        self.kill()
        for directory in self.dirs:
            with contextlib.suppress(OSError):
                directory.rmdir()


@dataclass(slots=True)
class Cgroups:
    """Where this server makes its groups, or why it cannot (``problem``)."""

    parents: tuple[Path, ...] = ()
    version: int = 0
    problem: str | None = None
    _count: int = field(default=0)

    @property
    def available(self) -> bool:
        return bool(self.parents)

    @classmethod
    def detect(cls) -> Cgroups:
        """Find and prepare this server's groups; never raises (``problem`` says what is missing)."""
        if os.geteuid() != 0:
            return cls(problem="the server is not root")
        try:
            own = _own_groups()
        except OSError as exc:
            return cls(problem=f"cannot read /proc/self/cgroup ({exc.strerror})")
        name = f"openenv-coding-{os.getpid()}"
        try:
            if "" in own and (_ROOT / "cgroup.controllers").exists():
                found = cls(parents=(_v2_parent(_ROOT / own[""].lstrip("/"), name),), version=2)
            elif "memory" in own and "pids" in own:
                parents = []
                for controller in ("memory", "pids"):
                    parent = _ROOT / controller / own[controller].lstrip("/") / name
                    parent.mkdir(exist_ok=True)
                    parents.append(parent)
                found = cls(parents=tuple(parents), version=1)
            else:
                return cls(problem="no cgroup v2 hierarchy and no cgroup v1 memory and pids hierarchies")
            found.remove_stale()
            return found
        except OSError as exc:
            return cls(problem=f"cannot make a control group ({exc.strerror}: {exc.filename})")

    def remove_stale(self) -> None:
        """Remove the groups of servers that died without removing theirs (killed with SIGKILL)."""
        for parent in self.parents:
            for sibling in parent.parent.glob("openenv-coding-*"):
                pid = sibling.name.rsplit("-", 1)[1]
                if pid.isdigit() and not alive(int(pid)):
                    Cgroups(parents=(sibling,), version=self.version).close()

    def create(self, name: str, memory_bytes: int, processes: int) -> Group | None:
        """A new group ``<name>-<n>`` with its limits, or None when control groups are unavailable."""
        if not self.available:
            return None
        self._count += 1
        leaf = f"{name}-{self._count}"
        dirs = tuple(parent / leaf for parent in self.parents)
        for directory in dirs:
            directory.mkdir()
        group = Group(dirs=dirs, version=self.version)
        try:
            if self.version == 2:
                _write(dirs[0] / "memory.max", memory_bytes)
                with contextlib.suppress(FileNotFoundError):  # no swap accounting: nothing to bound
                    _write(dirs[0] / "memory.swap.max", 0)
                _write(dirs[0] / "pids.max", processes)
            else:
                _write(dirs[0] / "memory.limit_in_bytes", memory_bytes)
                with contextlib.suppress(FileNotFoundError):
                    _write(dirs[0] / "memory.memsw.limit_in_bytes", memory_bytes)
                _write(dirs[1] / "pids.max", processes)
        except OSError:
            group.remove()
            raise
        return group

    def close(self) -> None:
        """Remove this server's parent groups (their episode groups are gone by now)."""
        for parent in self.parents:
            for child in parent.iterdir() if parent.is_dir() else ():
                if child.is_dir():
                    Group(dirs=(child,), version=self.version).remove()
            with contextlib.suppress(OSError):
                parent.rmdir()

    def describe(self, memory_bytes: int, processes: int) -> str:
        if not self.available:
            return f"NOT bounded per episode: memory and processes across processes (no control group: {self.problem})"
        return (
            f"per episode (cgroup v{self.version}): {memory_bytes // 2**20} MiB of memory for all its processes and "
            f"its working directory's files together, {processes} processes"
        )


def _own_groups() -> dict[str, str]:
    """This process's group per controller (v2: under the key "")."""
    groups: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            groups[controller] = path
    return groups


def _v2_parent(own: Path, name: str) -> Path:
    wanted = {"memory", "pids"}
    available = set((own / "cgroup.controllers").read_text().split())
    if not wanted <= available:
        raise OSError(0, f"the controllers {sorted(wanted - available)} are not delegated", str(own))
    enabled = set((own / "cgroup.subtree_control").read_text().split())
    if not wanted <= enabled:
        try:
            _write(own / "cgroup.subtree_control", "+memory +pids")
        except OSError:
            # our group holds processes (ours at least): move them into a leaf, then enable the controllers
            leaf = own / "server"
            leaf.mkdir(exist_ok=True)
            for pid in (own / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    _write(leaf / "cgroup.procs", pid)
            _write(own / "cgroup.subtree_control", "+memory +pids")
    parent = own / name
    parent.mkdir(exist_ok=True)
    _write(parent / "cgroup.subtree_control", "+memory +pids")
    return parent


def _write(path: Path, value: object) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)
