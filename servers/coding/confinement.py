"""Confinement: what a sandboxed run does between fork and exec, and the command it execs.

With namespaces (the server runs as root on a Linux that allows them), the child of the
server, still root:

1. joins its episode's control group and marks every descriptor but 0, 1 and 2 close-on-exec
   (whatever the event loop passed down: uvloop does not honour ``close_fds``);
2. enters new mount, network and IPC namespaces (no network: the only interface is a
   loopback that is down);
3. makes every mount private to the run and read-only, reading its own (now private, so
   stable) mount table; a mount that is gone by then is skipped, once the path is checked
   to be read-only or absent;
4. in a seeded run, binds the run's entropy file (a stream drawn from its seed, read-only) over
   ``/dev/urandom`` and ``/dev/random``; binds the workspace on ``/tmp`` (read-write, nosuid,
   nodev) and makes it the working directory;
5. covers the hidden paths (the source checkout with the task data, the acceptance tests),
   then every place a host socket can live (``/run``, ``/var/lib``, home directories, each
   directory the host's ``/proc/net/unix`` names) with an empty read-only tmpfs, and a socket
   in a directory that cannot be covered with ``/dev/null``;
6. mounts a private ``/dev/shm``;
7. sets niceness, no-new-privileges, SIGKILL if the server dies, the resource limits, and last
   the system-call filter (:mod:`openenv_mcp.servers.coding.syscalls`);

then execs :func:`command`: ``unshare`` makes a PID namespace with its own ``/proc``,
``setpriv`` drops to the episode's uid and gid with no supplementary groups, and a
``/bin/sh`` becomes the namespace's init, running ``python``. In a seeded run, ``nsenter`` first
enters the episode's user namespace (made by the server: root stays root, the episode's uid and
gid appear as a constant, :data:`SEEDED_ID`; every other id as nobody), and ``setpriv`` drops to
that constant: the program sees the same uid in every episode, while the kernel sees the episode's
own uid (limits, signals, files and the sweep all use it). The namespace's descriptor reaches
``nsenter`` as fd 3, which the init shell closes before it runs ``python``. When the run ends or is
killed, the server kills that init, and the kernel kills every process left in the namespace.

Without namespaces, steps 2-6 are a plain ``chdir`` and the child drops to the episode's
uid itself (when root) before exec'ing ``python`` directly.

A failing step writes why into a report pipe and exits with status 125, so nothing ever
runs half-confined. Everything the child calls is resolved before the fork: it only makes
system calls.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass

from openenv_mcp.servers.coding.accounts import Account

__all__ = [
    "ENTROPY_DEVICES",
    "SEEDED_ID",
    "SETUP_FAILED",
    "VISIBLE_WORKDIR",
    "Plan",
    "command",
    "preexec",
    "remount_read_only",
    "sweeper",
    "unescape",
]

SETUP_FAILED = 125
"""Exit status of a child whose confinement failed (its reason is in the report pipe)."""

VISIBLE_WORKDIR = "/tmp"
"""Where the workspace appears inside the namespaces (the same path in every episode)."""

SEEDED_ID = 1_000_000
"""The uid and gid a seeded run sees itself as (its episode's own uid, mapped in a user namespace)."""

ENTROPY_DEVICES = (b"/dev/urandom", b"/dev/random")
"""What a seeded run's entropy file is bound over."""

_USERNS_FD = 3  # where the user namespace's descriptor is passed to nsenter (a fixed number: argv shows it)

_CLONE_NEWNS = 0x0002_0000
_CLONE_NEWIPC = 0x0800_0000
_CLONE_NEWNET = 0x4000_0000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_NOATIME, _MS_NODIRATIME, _MS_BIND = 32, 1024, 2048, 4096
_MS_REC, _MS_PRIVATE, _MS_RELATIME = 16384, 1 << 18, 1 << 21
_PR_SET_PDEATHSIG, _PR_SET_SECCOMP, _PR_SET_NO_NEW_PRIVS = 1, 22, 38
_SECCOMP_MODE_FILTER = 2
_CLOSE_RANGE_CLOEXEC = 4
_COVER = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
_KEPT_FLAGS = {
    b"nosuid": _MS_NOSUID,
    b"nodev": _MS_NODEV,
    b"noexec": _MS_NOEXEC,
    b"noatime": _MS_NOATIME,
    b"nodiratime": _MS_NODIRATIME,
    b"relatime": _MS_RELATIME,
}
# pid 1 of a PID namespace ignores signals it has no handler for, so python must not be it:
# the shell is, and reports a signal death the way shells do (status 128 + N).
_INIT = '"$@"; exit $?'
_INIT_SEEDED = f'exec {_USERNS_FD}<&-; "$@"; exit $?'

_libc = ctypes.CDLL(None, use_errno=True)
_unshare = _libc.unshare
_unshare.argtypes = [ctypes.c_int]
_mount = _libc.mount
_mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_close_range = getattr(_libc, "close_range", None)  # glibc 2.34+; Linux 5.11+ for the CLOEXEC flag
if _close_range is not None:
    _close_range.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_int]


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything one child needs, computed in the parent."""

    workspace: bytes
    namespaces: bool
    account: Account | None
    rlimits: tuple[tuple[int, int, int], ...]
    niceness: int
    hidden_dirs: tuple[bytes, ...] = ()
    hidden_files: tuple[bytes, ...] = ()
    covered_dirs: tuple[bytes, ...] = ()
    covered_files: tuple[bytes, ...] = ()
    cgroup_fds: tuple[int, ...] = ()
    seccomp: int = 0  # address of the filter's struct sock_fprog (0: none)
    report_fd: int = -1
    parent_pid: int = 0
    entropy: bytes = b""  # a seeded run's entropy file, bound over /dev/urandom and /dev/random (b"": none)
    userns_fd: int = -1  # a seeded run's user namespace, entered by nsenter (-1: none)


@dataclass(frozen=True, slots=True)
class Tools:
    """The util-linux programs and the shell the namespace path execs."""

    unshare: str
    setpriv: str
    sh: str
    nsenter: str | None = None  # seeded runs' constant uid needs it


def command(plan: Plan, tools: Tools | None, python: str, script: str) -> list[str]:
    """The argv the confined child execs."""
    run = [python, "-s", "-B", script]
    if not plan.namespaces:
        return run
    assert tools is not None and plan.account is not None, "the namespace path needs util-linux and an account"
    uid, gid = plan.account.uid, plan.account.gid
    enter: list[str] = []
    init = _INIT
    if plan.userns_fd >= 0:
        assert tools.nsenter is not None, "a user namespace needs util-linux nsenter"
        enter = [tools.nsenter, f"--user=/proc/self/fd/{_USERNS_FD}", "--"]
        uid = gid = SEEDED_ID
        init = _INIT_SEEDED
    return [
        *(tools.unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "--"),
        *enter,
        *(tools.setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--pdeathsig=SIGKILL", "--"),
        *(tools.sh, "-c", init, "sh", *run),
    ]


class _SetupError(Exception):
    def __init__(self, step: str, errno: int) -> None:
        super().__init__(step)
        self.step = step
        self.errno = errno


def _check(result: int, step: str) -> None:
    if result != 0:
        raise _SetupError(step, ctypes.get_errno())


def remount_read_only(table: bytes) -> None:
    """Remount every mount point of ``table`` (a mountinfo) read-only, keeping its other flags.

    A mount that has gone since the table was read (ENOENT, EINVAL: not a mount point any more)
    is skipped, but only once every remount is done and its path turns out absent or read-only.
    """
    skipped = []
    for line in table.splitlines():
        fields = line.split(b" ")
        if len(fields) < 6:
            continue
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY
        for option in fields[5].split(b","):
            flags |= _KEPT_FLAGS.get(option, 0)
        point = unescape(fields[4])
        if _mount(None, point, None, flags, None) != 0:
            failure = ctypes.get_errno()
            if failure not in (errno.ENOENT, errno.EINVAL):
                raise _SetupError("read-only remount of " + point.decode(errors="replace"), failure)
            skipped.append((point, failure))
    for point, failure in skipped:
        try:
            if os.statvfs(point).f_flag & os.ST_RDONLY:
                continue
        except FileNotFoundError:
            continue
        raise _SetupError("read-only remount of " + point.decode(errors="replace"), failure)


def unescape(path: bytes) -> bytes:
    """A path as ``/proc/self/mountinfo`` writes it (space, tab, newline and backslash escaped), unescaped."""
    for code in (b"\\040", b"\\011", b"\\012", b"\\134"):
        path = path.replace(code, bytes([int(code[1:], 8)]))
    return path


def preexec(plan: Plan) -> Callable[[], None]:
    """The function the child runs before exec; it never returns half-confined."""

    def confine() -> None:
        report_fd = plan.report_fd
        try:
            for fd in plan.cgroup_fds:  # first, so that everything the run holds is counted
                os.write(fd, b"0")
            _close_on_exec_from(3)
            if plan.userns_fd >= 0:  # the one descriptor the run inherits, for nsenter (the init shell closes it)
                if report_fd == _USERNS_FD:
                    report_fd = os.dup(report_fd)
                os.dup2(plan.userns_fd, _USERNS_FD)
                os.set_inheritable(_USERNS_FD, True)
            if plan.namespaces:
                _enter_namespaces(plan)
            else:
                os.chdir(plan.workspace)
            os.setpriority(os.PRIO_PROCESS, 0, plan.niceness)
            _check(_prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
            if plan.account is not None and not plan.namespaces:  # (with namespaces, setpriv drops)
                os.setgroups([])
                os.setresgid(plan.account.gid, plan.account.gid, plan.account.gid)
                os.setresuid(plan.account.uid, plan.account.uid, plan.account.uid)
            # after any uid change, which clears it; and the parent may be gone already
            _check(_prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent death signal")
            if plan.parent_pid and os.getppid() != plan.parent_pid:
                os._exit(SETUP_FAILED)
            # last: once the address space is capped, even a small allocation here could fail
            for limit, soft, hard in plan.rlimits:
                resource.setrlimit(limit, (soft, hard))
            if plan.seccomp:
                _check(_prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, plan.seccomp, 0, 0), "system-call filter")
        except _SetupError as exc:
            _fail(report_fd, f"{exc.step}: {os.strerror(exc.errno)}")
        except OSError as exc:
            _fail(report_fd, f"{exc.strerror or exc}")
        except BaseException as exc:  # never unwind into the forked copy of the server
            _fail(report_fd, repr(exc))

    return confine


def _close_on_exec_from(lowest: int) -> None:
    """Mark every descriptor from ``lowest`` up close-on-exec (they still work until exec: the report pipe)."""
    if _close_range is not None and _close_range(lowest, 0xFFFF_FFFF, _CLOSE_RANGE_CLOEXEC) == 0:
        return
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd >= lowest:
            with contextlib.suppress(OSError):  # the listing's own descriptor is gone already
                os.set_inheritable(fd, False)


def _read(path: bytes) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65_536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _enter_namespaces(plan: Plan) -> None:
    _check(_unshare(_CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWIPC), "unshare(mount, network, IPC)")
    _check(_mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make mounts private")
    remount_read_only(_read(b"/proc/self/mountinfo"))  # private now: no mount comes or goes any more
    if plan.entropy:  # before the workspace hides the scratch directory it is in (on /tmp)
        for device in ENTROPY_DEVICES:
            if os.path.exists(device):
                _check(_mount(plan.entropy, device, None, _MS_BIND, None), "bind the entropy over " + device.decode())
                _check(_mount(None, device, None, _MS_REMOUNT | _MS_BIND | _COVER, None), "entropy read-only")
    workdir = VISIBLE_WORKDIR.encode()
    _check(_mount(plan.workspace, workdir, None, _MS_BIND, None), "bind the workspace")
    _check(_mount(None, workdir, None, _MS_REMOUNT | _MS_BIND | _MS_NOSUID | _MS_NODEV, None), "workspace rw")
    for path in plan.hidden_dirs:
        _check(_mount(b"none", path, b"tmpfs", _COVER, b"size=4k,mode=0555"), "hide " + path.decode(errors="replace"))
    for path in plan.hidden_files:
        _check(_mount(b"/dev/null", path, None, _MS_BIND, None), "hide " + path.decode(errors="replace"))
    for path in plan.covered_dirs:
        _cover(_mount(b"none", path, b"tmpfs", _COVER, b"size=4k,mode=0755"), path)
    for path in plan.covered_files:
        _cover(_mount(b"/dev/null", path, None, _MS_BIND, None), path)
    if os.path.isdir(b"/dev/shm"):
        _check(_mount(b"none", b"/dev/shm", b"tmpfs", _MS_NOSUID | _MS_NODEV, b"size=16m,mode=1777"), "/dev/shm")
    os.chdir(workdir)


def _cover(result: int, path: bytes) -> None:
    """A cover that failed because its path has gone (a socket or directory removed meanwhile) hides nothing."""
    if result != 0 and ctypes.get_errno() not in (errno.ENOENT, errno.ENOTDIR):
        raise _SetupError("cover " + path.decode(errors="replace"), ctypes.get_errno())


def _fail(report_fd: int, reason: str) -> None:
    try:
        os.write(report_fd, reason.encode(errors="replace")[:1000])
    finally:
        os._exit(SETUP_FAILED)


def sweeper(account: Account) -> Callable[[], None]:
    """A child that becomes ``account`` and kills every process of it (``kill(-1)``) before exec'ing ``true``.

    Needed only without namespaces: there, a process that left the run's process group
    (``setsid``) would otherwise outlive the call.
    """

    def sweep() -> None:
        try:
            os.setgroups([])
            os.setresgid(account.gid, account.gid, account.gid)
            os.setresuid(account.uid, account.uid, account.uid)
            with contextlib.suppress(ProcessLookupError):  # nothing left to kill
                os.kill(-1, signal.SIGKILL)  # every process this uid may signal, except the caller
        except BaseException:  # never unwind into the forked copy of the server
            os._exit(SETUP_FAILED)

    return sweep
