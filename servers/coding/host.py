"""The host: what this machine lets the sandbox do, and where things are, found once at start-up."""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from openenv_mcp import ConfigError
from openenv_mcp.servers.coding.confinement import VISIBLE_WORKDIR, Tools
from openenv_mcp.servers.coding.settings import CodingSettings

__all__ = ["Capabilities", "Covers", "find_tools", "hidden_paths", "make_scratch", "require", "resolve_python"]

PROJECT = Path(__file__).resolve().parents[2]
"""The source checkout (or site-packages) holding this package: the task data, and in a checkout the
reference solutions and the git history. Always hidden from sandboxed code."""

_STANDARD_PYTHONS = ("/usr/local/bin/python3", "/usr/bin/python3", "/bin/python3")
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# where services keep sockets (and data): covered in every run, with every home directory outside /usr
# (few and wide: each cover is a mount, made and torn down with every run)
_SOCKET_PLACES = ("/run", "/var", "/home", "/root", "/srv", "/mnt", "/media")
# what a run needs: never covered, nor any directory holding one of them
_NEEDED = ("/etc", "/dev/null", "/dev/urandom", "/proc/self", "/usr/lib", "/lib", "/lib64", "/usr/share/zoneinfo")


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What this host lets the sandbox do (probed by running the interpreter) and why not, when not."""

    users: bool
    namespaces: bool
    python_version: str = "?"
    problems: tuple[str, ...] = ()
    seccomp: bool = True


def find_tools() -> Tools | None:
    """util-linux ``unshare`` and ``setpriv`` and a POSIX shell, or None when one is missing; and ``nsenter``
    (util-linux too) when it is there, which seeded runs need to show a constant uid."""
    found = [shutil.which(name, path=_SYSTEM_PATH) for name in ("unshare", "setpriv", "sh", "nsenter")]
    unshare, setpriv, sh, nsenter = found
    if unshare is None or setpriv is None or sh is None:
        return None
    return Tools(unshare=unshare, setpriv=setpriv, sh=sh, nsenter=nsenter)


def require(capabilities: Capabilities, settings: CodingSettings) -> None:
    """Fail closed: a ConfigError naming the setting when required isolation is missing."""
    why = "; ".join(capabilities.problems)
    if settings.require_user_isolation and not capabilities.users:
        raise ConfigError(
            f"The coding sandbox needs root to run code as per-episode users ({why}). Run the server as root "
            "(it never runs code as root), or set CODING_REQUIRE_USER_ISOLATION=false to run code as the "
            "server's own user, with no separation between episodes"
        )
    if settings.require_network_isolation and capabilities.namespaces and not capabilities.seccomp:
        raise ConfigError(
            f"The coding sandbox has no system-call filter for this architecture ({why}): host UNIX sockets and "
            "ptrace would not be refused. Run it on x86-64 or AArch64, or set CODING_REQUIRE_NETWORK_ISOLATION=false"
        )
    if settings.require_network_isolation and not capabilities.namespaces:
        raise ConfigError(
            f"The coding sandbox cannot give runs their own namespaces here ({why}). Run the server as root on a "
            "Linux that allows namespaces, with util-linux installed, or set CODING_REQUIRE_NETWORK_ISOLATION=false "
            "to let code reach the network and read every world-readable file (hidden tests included)"
        )


def resolve_python(configured: Path | None) -> str:
    """The interpreter code runs with: configured, else ours if any user may run it, else a standard one."""
    if configured is not None:
        return str(configured)
    for candidate in (sys.executable, *_STANDARD_PYTHONS):
        if os.geteuid() != 0 or _reachable_by_others(candidate):
            return os.path.realpath(candidate)
    raise ConfigError("No Python that an unprivileged user may run was found; set CODING_PYTHON")


def _reachable_by_others(path: str) -> bool:
    """Whether any user may execute ``path`` (and search every directory on the way)."""
    try:
        real = Path(os.path.realpath(path))
        if not real.is_file() or not real.stat().st_mode & stat.S_IXOTH:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in real.parents)
    except OSError:
        return False


def make_scratch(configured: Path | None) -> Path:
    """The directory episode and test directories are made in: others may pass through, never list it."""
    if configured is None:
        path = Path(tempfile.mkdtemp(prefix="openenv-coding-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    else:
        path = configured.resolve()
        path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o711)
    return path


def hidden_paths(settings: CodingSettings) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """Directories and files to cover in every run (those under /tmp vanish behind the workspace anyway)."""
    paths = [PROJECT, *settings.hidden_paths]
    if settings.tests_file is not None:
        paths.append(settings.tests_file)
    dirs: list[Path] = []
    files: list[Path] = []
    for path in paths:
        resolved = path.resolve()
        if resolved.is_relative_to(VISIBLE_WORKDIR) or resolved == Path("/"):
            continue
        (dirs if resolved.is_dir() else files).append(resolved)
    return tuple(dirs), tuple(files)


class Covers:
    """Every place a host socket can live, to cover in a run: fixed places, home directories, ``/proc/net/unix``.

    A directory that holds something a run needs (the interpreter, its library, ``/etc``...) is
    not covered; a socket in such a directory is covered on its own (with ``/dev/null``).
    Places under ``/tmp`` need nothing: the workspace is bound over ``/tmp``.
    """

    def __init__(self, needed: list[Path]) -> None:
        self.needed = [*(Path(path) for path in _NEEDED), *needed]
        homes = [Path(str(entry.pw_dir)) for entry in pwd.getpwall()]
        homes = [home for home in homes if not home.is_relative_to("/usr")]  # system accounts' read-only homes
        self.fixed = self._directories([Path(place) for place in _SOCKET_PLACES] + homes)
        self._seen: list[str] | None = None
        self._answer: tuple[tuple[bytes, ...], tuple[bytes, ...]] = ((), ())

    def _coverable(self, directory: Path) -> bool:
        if directory == Path("/") or directory.is_relative_to(VISIBLE_WORKDIR):
            return False
        return not any(need == directory or need.is_relative_to(directory) for need in self.needed)

    def _directories(self, candidates: list[Path]) -> list[Path]:
        found: dict[Path, None] = {}
        for candidate in candidates:
            real = Path(os.path.realpath(candidate))
            if real.is_dir() and self._coverable(real):
                found[real] = None
        # an outer cover hides what is under it: keep the outermost only
        return sorted(path for path in found if not any(path != o and path.is_relative_to(o) for o in found))

    def now(self) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
        """Directories and single sockets to cover, with the sockets bound on the host at this moment."""
        sockets = _socket_paths()
        if sockets != self._seen:  # most runs: the same sockets as the last one, and the same answer
            self._seen, self._answer = sockets, self._for(sockets)
        return self._answer

    def _for(self, sockets: list[str]) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
        paths = [Path(path) for path in sockets]
        directories = self._directories([*self.fixed, *(path.parent for path in paths)])
        files = [
            path
            for path in paths
            if not path.is_relative_to(VISIBLE_WORKDIR) and not any(path.is_relative_to(d) for d in directories)
        ]
        return tuple(os.fsencode(p) for p in directories), tuple(os.fsencode(p) for p in dict.fromkeys(files))


def _socket_paths() -> list[str]:
    """Paths of the UNIX sockets bound in this network namespace (abstract ones start with '@' and are skipped)."""
    try:
        with open("/proc/net/unix", "rb") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        return []
    paths = []
    for line in lines:
        fields = line.split(maxsplit=7)
        if len(fields) == 8 and fields[7].startswith(b"/"):
            paths.append(os.fsdecode(fields[7]))
    return paths
