"""The sandbox: runs untrusted Python in a confined subprocess, without a container.

    sandbox = await Sandbox.for_settings(settings)
    workspace = await sandbox.open_workspace()
    outcome = await sandbox.run(workspace, "print(1)", stdin="", timeout_s=5)
    await sandbox.close_workspace(workspace)

One :class:`Sandbox` per process and settings holds what the host allows (probed once, see
:mod:`openenv_mcp.servers.coding.host`), the scratch directory, the uid pool, the control groups and the
run slots (a cap per server, and one run at a time per episode). A :class:`Workspace` is a
size-capped directory, the account code runs as there, and its control group. Each run is
one process tree (``python -s -B main.py``) in its own session, confined as
:mod:`openenv_mcp.servers.coding.confinement` describes, with a minimal environment; its output is read
as it comes and capped; a wall-clock timeout kills it; nothing it starts outlives the call:
its PID namespace is killed, then every process of its uid, then anything left in its group.

A seeded run (sim: ``entropy`` given) is a function of its episode's seed, its program and its
files: besides ``PYTHONHASHSEED``, its ``/dev/urandom`` is a stream drawn from the key (so ``random``,
``os.urandom``, ``secrets``, ``uuid4`` and temporary names repeat; ``getrandom`` answers ENOSYS so
everything reads that stream), and it sees its uid and gid as a constant through a user namespace
of its account (:mod:`openenv_mcp.servers.coding.confinement`). What stays outside the seed: the clock, and the
addresses ASLR gives objects (``id()``, default ``repr``); turning ASLR off would weaken the sandbox.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import logging
import math
import os
import random
import resource
import secrets
import shutil
import signal
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import anyio

from openenv_mcp import BackendUnavailable, ConfigError, ToolFailed
from openenv_mcp.servers.coding.accounts import Account, UidPool
from openenv_mcp.servers.coding.cgroups import Cgroups, Group
from openenv_mcp.servers.coding.confinement import SEEDED_ID, VISIBLE_WORKDIR, Plan, Tools, command, preexec, sweeper
from openenv_mcp.servers.coding.host import (
    Capabilities,
    Covers,
    find_tools,
    hidden_paths,
    make_scratch,
    require,
    resolve_python,
)
from openenv_mcp.servers.coding.process import Capture, children, feed, kill_group, kill_namespace, read_report
from openenv_mcp.servers.coding.quota import mount_capped, remove_capped, remove_stale
from openenv_mcp.servers.coding.settings import CodingSettings
from openenv_mcp.servers.coding.syscalls import Filter, build

__all__ = ["RunOutcome", "Sandbox", "Workspace"]

_DRAIN_S = 2.0  # bound on reading what is left in the pipes once the run's processes are dead
_GRACE_S = 1.0  # bound on the init shell exiting once its program is killed, before the namespace is
_TEARDOWN_S = 5.0  # bound on a killed run's namespace dying before its whole group is killed
_TRUE = shutil.which("true") or "/bin/true"
_CPU_LIMIT_STATUS = 128 + signal.SIGXCPU
ENTROPY_BYTES = 256 * 1024
"""How much of its stream a seeded run can read from /dev/urandom (more: Python's os.urandom raises)."""
_CLONE_NEWUSER = 0x1000_0000

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Workspace:
    """A directory code runs in, the account it runs as and its control group; ``owned`` ones are removed on close."""

    path: Path
    account: Account
    owned: bool = True
    group: Group | None = None


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """One run: its output, its exit status as a shell reports it (128 + N for signal N), and why it ended."""

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    truncated: bool
    duration_s: float


class Sandbox:
    """Runs code for one server process: capabilities, scratch directory, uid pool, run slots."""

    _cache: ClassVar[dict[str, Sandbox]] = {}

    def __init__(
        self,
        settings: CodingSettings,
        *,
        python: str,
        scratch: Path,
        pool: UidPool | None,
        tools: Tools | None,
        capabilities: Capabilities,
        syscall_filter: Filter | None = None,
        seeded_filter: Filter | None = None,
        cgroups: Cgroups | None = None,
    ) -> None:
        self.settings = settings
        self.python = python
        self.scratch = scratch
        self.pool = pool
        self.tools = tools
        self.capabilities = capabilities
        self.hidden_dirs, self.hidden_files = hidden_paths(settings)
        self.filter = syscall_filter
        self.seeded_filter = seeded_filter
        self._user_namespaces: dict[int, int] = {}  # uid -> a descriptor of the user namespace mapping it
        self.cgroups = cgroups or Cgroups(problem="the server is not root")
        self.covers = Covers([Path(python), Path(python).parent.parent / "lib", *_tool_paths(tools)])
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Slots] = weakref.WeakKeyDictionary()

    # assembly ------------------------------------------------------------------------------

    @classmethod
    async def for_settings(cls, settings: CodingSettings) -> Sandbox:
        """This process's sandbox for ``settings``, probed on first use; ConfigError if isolation falls short."""
        key = settings.model_dump_json()
        sandbox = cls._cache.get(key)
        if sandbox is None:
            sandbox = cls._cache[key] = await cls._create(settings)
        return sandbox

    @classmethod
    async def _create(cls, settings: CodingSettings) -> Sandbox:
        python = resolve_python(settings.python)
        users = os.geteuid() == 0
        problems = [] if users else [f"the server runs as uid {os.geteuid()}, not root"]
        tools = find_tools() if users else None
        if users and tools is None:
            problems.append("util-linux 'unshare' and 'setpriv' or '/bin/sh' not found")
        pool = UidPool.shared(settings.uid_lock, settings.uid_base, settings.uid_count) if users else None
        syscall_filter = build()
        if syscall_filter is None:
            problems.append(f"no system-call filter for the architecture {os.uname().machine}")
        cgroups = Cgroups.detect()  # also removes the groups of dead servers
        if users:
            remove_stale()  # and their working directories' mounts
        if cgroups.available:
            atexit.register(cgroups.close)
        sandbox = cls(
            settings,
            python=python,
            scratch=make_scratch(settings.scratch),
            pool=pool,
            tools=tools,
            capabilities=Capabilities(
                users=users, namespaces=tools is not None, problems=tuple(problems), seccomp=syscall_filter is not None
            ),
            syscall_filter=syscall_filter,
            seeded_filter=build(seeded=True),
            cgroups=cgroups,
        )
        for path in (*sandbox.hidden_dirs, *sandbox.hidden_files):
            if Path(python).is_relative_to(path):
                raise ConfigError(f"The sandbox's Python {python} is inside the hidden path {path}; set CODING_PYTHON")
        require(sandbox.capabilities, settings)  # what is known missing already fails before any probe
        await sandbox._probe()
        require(sandbox.capabilities, settings)
        for gap in (measure for measure in sandbox.isolation() if measure.startswith("NOT bounded")):
            log.warning("coding sandbox: %s", gap)
        return sandbox

    async def _probe(self) -> None:
        """Run the interpreter once, confined, to learn its version and whether namespaces work here."""
        caps = self.capabilities
        program = "import sys; print(sys.version.split()[0])"
        workspace = await self.open_workspace()
        try:
            try:
                outcome = await self.run(workspace, program, stdin="", timeout_s=10)
            except BackendUnavailable as exc:
                if not caps.namespaces:
                    raise ConfigError(f"The coding sandbox cannot start a process here: {exc.message}") from None
                caps = self.capabilities = Capabilities(
                    users=caps.users,
                    namespaces=False,
                    problems=(*caps.problems, f"namespaces: {exc.message}"),
                    seccomp=caps.seccomp,
                )
                try:
                    outcome = await self.run(workspace, program, stdin="", timeout_s=10)
                except BackendUnavailable as again:
                    raise ConfigError(f"The coding sandbox cannot start a process here: {again.message}") from None
        finally:
            await self.close_workspace(workspace)
        if outcome.exit_code != 0:
            raise ConfigError(
                f"The sandbox cannot run {self.python} as an unprivileged user in {self.scratch} "
                f"(exit {outcome.exit_code}: {outcome.stderr.strip()[-300:]}); set CODING_PYTHON to an interpreter, "
                "and CODING_SCRATCH to a directory, that any user may reach"
            )
        self.capabilities = Capabilities(
            users=caps.users,
            namespaces=caps.namespaces,
            python_version=outcome.stdout.strip(),
            problems=caps.problems,
            seccomp=caps.seccomp,
        )

    # workspaces ------------------------------------------------------------------------------

    def account(self) -> Account:
        """A fresh per-episode account, or the server's own user without user isolation."""
        if self.pool is not None:
            return self.pool.acquire()
        return Account(uid=os.getuid(), gid=os.getgid())

    async def open_workspace(self) -> Workspace:
        """A new empty size-capped directory (0700, owned by a fresh account) under the scratch directory."""
        account = self.account()
        try:
            path = self._make_dir(account)
        except OSError as exc:
            self._release(account)
            raise BackendUnavailable(f"Cannot make a workspace in {self.scratch}: {exc.strerror}") from None
        try:
            group = self.group_for(account)
        except BackendUnavailable:
            self._remove_dir(path)
            self._release(account)
            raise
        return Workspace(path=path, account=account, group=group)

    def group_for(self, account: Account) -> Group | None:
        """A control group bounding everything ``account`` runs (None where the host has none to give)."""
        settings = self.settings
        try:
            return self.cgroups.create(f"uid-{account.uid}", self.episode_memory_bytes, settings.max_processes)
        except OSError as exc:
            raise BackendUnavailable(f"Cannot make a control group {exc.filename}: {exc.strerror}") from None

    @property
    def episode_memory_bytes(self) -> int:
        """Memory of an episode's processes and of its working directory's files, together."""
        return (self.settings.memory_mb + self.settings.workspace_mb) * 2**20

    async def close_workspace(self, workspace: Workspace) -> None:
        """Kill what the account still runs, remove the directory if owned, give the uid back."""
        await self.sweep_unless_empty(workspace)
        if workspace.group is not None:
            workspace.group.remove()
        if workspace.owned:
            await asyncio.to_thread(self._remove_dir, workspace.path)
        namespace = self._user_namespaces.pop(workspace.account.uid, None)
        if namespace is not None:
            os.close(namespace)
        self._release(workspace.account)

    async def _user_namespace(self, account: Account) -> int | None:
        """A user namespace for seeded runs of ``account``: root is root, the account's uid and gid are
        :data:`SEEDED_ID`, nothing else is mapped; made once per account (None where it cannot be used)."""
        tools = self.tools
        if self.pool is None or not self.capabilities.namespaces or tools is None or tools.nsenter is None:
            return None
        found = self._user_namespaces.get(account.uid)
        if found is not None:
            return found
        # A process in a new user namespace of its own, waiting on its stdin; the maps are written from here
        # (root in the parent namespace), then the namespace is held by a descriptor and the process ends.
        holder = await asyncio.create_subprocess_exec(
            tools.sh,
            "-c",
            "read _",
            stdin=asyncio.subprocess.PIPE,
            preexec_fn=_new_user_namespace,
            close_fds=True,
            env={},
        )
        try:
            for name, own in (("uid_map", account.uid), ("gid_map", account.gid)):
                fd = os.open(f"/proc/{holder.pid}/{name}", os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.write(fd, f"0 0 1\n{SEEDED_ID} {own} 1\n".encode())
                finally:
                    os.close(fd)
            namespace = os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise BackendUnavailable(f"Cannot make a user namespace for a seeded run: {exc.strerror}") from None
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            await holder.wait()
        raced = self._user_namespaces.setdefault(account.uid, namespace)  # another run of the episode made one
        if raced != namespace:
            os.close(namespace)
        return raced

    @asynccontextmanager
    async def scratch_workspace(self, workspace: Workspace) -> AsyncIterator[Workspace]:
        """A fresh directory for one run as ``workspace``'s account (a hidden test, say), removed afterwards."""
        try:
            path = self._make_dir(workspace.account)
        except OSError as exc:
            raise BackendUnavailable(f"Cannot make a directory in {self.scratch}: {exc.strerror}") from None
        try:
            yield Workspace(path=path, account=workspace.account, group=workspace.group)
        finally:
            await asyncio.to_thread(self._remove_dir, path)

    def _make_dir(self, account: Account) -> Path:
        path = self.scratch / secrets.token_hex(8)
        path.mkdir(mode=0o700)
        if self.pool is not None:
            try:
                mount_capped(path, self.settings.workspace_mb, account.uid, account.gid)
            except OSError:
                path.rmdir()
                raise
        return path

    def _remove_dir(self, path: Path) -> None:
        if self.pool is not None:
            remove_capped(path)
        shutil.rmtree(path, ignore_errors=True)

    def _release(self, account: Account) -> None:
        if account.pooled and self.pool is not None:
            self.pool.release(account)

    def place(self, workspace: Workspace, name: str, text: str) -> None:
        """Write ``name`` into the workspace without following anything the sandboxed code planted there."""
        try:
            directory = os.open(workspace.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise BackendUnavailable(f"The workspace {workspace.path} is unusable: {exc.strerror}") from None
        try:
            try:
                os.unlink(name, dir_fd=directory)  # a symlink or hard link left there is removed, never followed
            except FileNotFoundError:
                pass
            except (IsADirectoryError, PermissionError):
                raise ToolFailed(f"{name} in the working directory is a directory; remove it first") from None
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(name, flags, 0o644, dir_fd=directory)
            with os.fdopen(fd, "wb") as file:
                file.write(text.encode("utf-8", errors="surrogatepass"))
                if self.pool is not None:
                    os.fchown(file.fileno(), workspace.account.uid, workspace.account.gid)
        except OSError as exc:
            raise BackendUnavailable(f"Cannot write {name} in the workspace {workspace.path}: {exc.strerror}") from None
        finally:
            os.close(directory)

    # runs ------------------------------------------------------------------------------------

    def visible_workdir(self, workspace: Workspace) -> str:
        """The working directory as the code sees it."""
        return VISIBLE_WORKDIR if self.capabilities.namespaces else str(workspace.path)

    async def run(
        self,
        workspace: Workspace,
        code: str,
        *,
        stdin: str,
        timeout_s: float,
        hash_seed: int | None = None,
        entropy: str | None = None,
        script: str = "main.py",
    ) -> RunOutcome:
        """Save ``code`` as ``script`` in the workspace and run it once, confined.

        ``entropy``: make the run seeded (see the module's docstring): its ``/dev/urandom`` is a stream
        drawn from this key, and it sees its uid and gid as a constant.
        """
        self.place(workspace, script, code)
        workdir = self.visible_workdir(workspace)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": workdir,
            "TMPDIR": workdir,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONUTF8": "1",
            "PYTHONHASHSEED": "random" if hash_seed is None else str(hash_seed % 4_294_967_296),
        }
        data = stdin.encode("utf-8", errors="surrogatepass")
        seeded = entropy is not None and self.capabilities.namespaces
        async with self._slots_here().hold(workspace.account.uid), self._entropy(entropy if seeded else None) as pool:
            userns = await self._user_namespace(workspace.account) if seeded else None
            try:
                cgroup_fds = workspace.group.join_fds() if workspace.group is not None else []
            except OSError as exc:
                raise BackendUnavailable(f"The sandbox's control group is unusable: {exc.strerror}") from None
            report_read, report_write = os.pipe()
            plan = self._plan(workspace, timeout_s, report_write, tuple(cgroup_fds), entropy=pool, userns=userns)
            started = time.monotonic()
            try:
                process = await asyncio.create_subprocess_exec(
                    *command(plan, self.tools, self.python, script),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env=env,
                    preexec_fn=preexec(plan),
                    start_new_session=True,
                    # Closing happens after preexec, which marks every descriptor but 0-2 close-on-exec anyway;
                    # a seeded run passes one on (its user namespace, for nsenter), which closing would take.
                    close_fds=userns is None,
                )
            except OSError as exc:
                os.close(report_read)
                raise BackendUnavailable(f"The sandbox could not start {self.python}: {exc.strerror}") from None
            finally:
                for fd in (report_write, *cgroup_fds):
                    os.close(fd)
            report = read_report(report_read)
            if report is not None:
                await process.wait()
                raise BackendUnavailable(f"The sandbox could not confine the run ({report})")
            return await self._supervise(process, workspace, data, timeout_s, started)

    @asynccontextmanager
    async def _entropy(self, key: str | None) -> AsyncIterator[Path | None]:
        """A seeded run's entropy file (``ENTROPY_BYTES`` drawn from ``key``, read-only), removed afterwards."""
        if key is None:
            yield None
            return
        path = self.scratch / f".entropy-{secrets.token_hex(8)}"
        stream = random.Random(f"openenv-coding:{key}").randbytes(ENTROPY_BYTES)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
            with os.fdopen(fd, "wb") as file:
                file.write(stream)
        except OSError as exc:
            raise BackendUnavailable(f"Cannot write a seeded run's entropy in {self.scratch}: {exc.strerror}") from None
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)

    def _plan(
        self,
        workspace: Workspace,
        timeout_s: float,
        report_fd: int,
        cgroup_fds: tuple[int, ...],
        *,
        entropy: Path | None = None,
        userns: int | None = None,
    ) -> Plan:
        settings = self.settings
        cpu = max(1, math.ceil(timeout_s))
        memory = settings.memory_mb * 1024 * 1024
        file_size = settings.max_file_mb * 1024 * 1024
        limits = [
            (resource.RLIMIT_CORE, 0, 0),
            (resource.RLIMIT_FSIZE, file_size, file_size),
            (resource.RLIMIT_NOFILE, settings.max_open_files, settings.max_open_files),
            (resource.RLIMIT_CPU, cpu, cpu + 1),
            (resource.RLIMIT_AS, memory, memory),
        ]
        if self.pool is not None:  # RLIMIT_NPROC counts per uid: meaningful only for a uid of the episode's own
            limits.insert(0, (resource.RLIMIT_NPROC, settings.max_processes, settings.max_processes))
        namespaces = self.capabilities.namespaces
        covered_dirs, covered_files = self.covers.now() if namespaces else ((), ())
        seccomp = self.seeded_filter if entropy is not None else self.filter
        return Plan(
            workspace=os.fsencode(workspace.path),
            namespaces=namespaces,
            account=workspace.account if self.pool is not None else None,
            rlimits=tuple(limits),
            niceness=settings.niceness,
            hidden_dirs=tuple(os.fsencode(p) for p in self.hidden_dirs if p.is_dir()),
            hidden_files=tuple(os.fsencode(p) for p in self.hidden_files if p.is_file()),
            covered_dirs=covered_dirs,
            covered_files=covered_files,
            cgroup_fds=cgroup_fds,
            seccomp=seccomp.address if seccomp is not None else 0,
            report_fd=report_fd,
            parent_pid=os.getpid(),
            entropy=os.fsencode(entropy) if entropy is not None else b"",
            userns_fd=userns if userns is not None else -1,
        )

    async def _supervise(
        self, process: asyncio.subprocess.Process, workspace: Workspace, stdin: bytes, timeout_s: float, started: float
    ) -> RunOutcome:
        overflow = asyncio.Event()
        stdout = Capture(self.settings.max_output_bytes, overflow)
        stderr = Capture(self.settings.max_output_bytes, overflow)
        readers = [
            asyncio.ensure_future(stdout.pump(process.stdout)),
            asyncio.ensure_future(stderr.pump(process.stderr)),
            asyncio.ensure_future(feed(process.stdin, stdin)),
        ]
        exited = asyncio.ensure_future(process.wait())
        flooded = asyncio.ensure_future(overflow.wait())
        try:
            done, _ = await asyncio.wait({exited, flooded}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            duration = time.monotonic() - started
        finally:
            # also when the call is cancelled (a client went away): the run must not outlive it
            with anyio.CancelScope(shield=True):
                await self._finish(process, workspace, exited, [flooded, *readers])
        if not exited.done() or exited.cancelled():
            raise BackendUnavailable(f"A sandboxed run did not end within {_TEARDOWN_S:g} s of being killed")
        status = exited.result()
        code = status if status >= 0 else 128 - status  # killed by signal N: 128 + N, as a shell says
        return RunOutcome(
            stdout=stdout.text(),
            stderr=stderr.text(),
            exit_code=code,
            timed_out=not done or code == _CPU_LIMIT_STATUS,
            truncated=stdout.truncated or stderr.truncated,
            duration_s=duration,
        )

    async def _finish(
        self,
        process: asyncio.subprocess.Process,
        workspace: Workspace,
        exited: asyncio.Future[int],
        helpers: list[asyncio.Future[Any]],
    ) -> None:
        """Stop the run if it still goes, wait for it, kill any leftovers, and drain its pipes (all bounded).

        With namespaces, ``unshare`` exits only once the namespace's init has, and with it every
        process in the namespace. An init that does not exit when its program is killed (one the
        program took over) is killed from here, which kills the whole namespace. Then every
        process of the account is killed (:meth:`sweep`), and whatever is left in its control group.
        """
        if not exited.done():
            self._stop(process.pid)
            await asyncio.wait([exited], timeout=_GRACE_S if self.capabilities.namespaces else _TEARDOWN_S)
            if not exited.done() and self.capabilities.namespaces:
                kill_namespace(process.pid)
                await asyncio.wait([exited], timeout=_TEARDOWN_S)
        kill_group(process.pid)
        await self.sweep_unless_empty(workspace)
        helpers[0].cancel()  # the overflow watch
        _, pending = await asyncio.wait([exited, *helpers], timeout=_DRAIN_S)
        for helper in pending:
            helper.cancel()

    def _stop(self, pid: int) -> None:
        """Kill a run that is still going.

        With namespaces, kill the program (the init shell's child): the shell exits, the kernel
        kills and reaps everything left in the PID namespace, and only then does ``unshare``
        exit, so the run is entirely gone when it has been waited for. Otherwise (or when the
        program cannot be found) kill the whole process group.
        """
        if self.capabilities.namespaces:
            init = children(pid)
            program = children(init[0]) if len(init) == 1 else []
            if program:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(program[0], signal.SIGKILL)
                return
        kill_group(pid)

    async def sweep_unless_empty(self, workspace: Workspace) -> None:
        """:meth:`sweep` the account and kill what is in its control group, unless the group is there and empty.

        Every process of the account started in its group and cannot leave it (moving needs root), so
        an empty group means nothing of the uid is left, and the sweep (a fork and an exec) is spared.
        """
        group = workspace.group
        if group is None or group.processes():
            await self.sweep(workspace.account)
            if group is not None:
                group.kill()

    async def sweep(self, account: Account) -> None:
        """Kill every process of a per-episode (or prod workspace) account, wherever it is.

        Called at the end of every run and when a workspace closes: whatever a run did to leave
        its process group or namespace, nothing of its uid survives the call.
        """
        if not self.capabilities.users or account.uid == 0:
            return
        process = await asyncio.create_subprocess_exec(_TRUE, preexec_fn=sweeper(account), close_fds=True, env={})
        await process.wait()

    def _slots_here(self) -> _Slots:
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = _Slots(self.settings.max_concurrent_runs, self.settings.max_runs_per_episode)
        return slots

    def isolation(self, *, capped_workspace: bool = True) -> list[str]:
        """The measures in force, in words; ``capped_workspace`` false for the operator's own (prod) directory."""
        caps = self.capabilities
        measures = []
        if caps.users:
            measures.append("a uid of its own per episode (files 0700, process limit)")
        if caps.namespaces:
            measures += [
                "network namespace: no interfaces but a down loopback",
                "mount namespace: read-only filesystem except the working directory and /dev/shm; "
                "task data and source checkout hidden",
                "PID and IPC namespaces: only the run's own processes, all killed when it ends",
            ]
        if caps.namespaces:
            measures.append(
                "host UNIX sockets out of reach: every place one can live is covered by an empty filesystem"
            )
        if self.filter is not None:
            measures.append(
                "system-call filter: no UNIX, netlink or other non-internet sockets, no ptrace, no user namespaces, "
                "no bpf, perf_event_open, io_uring, userfaultfd or key ring"
            )
        measures.append("limits per process: CPU time, address space, file size, open files; core dumps off")
        settings = self.settings
        measures.append(self.cgroups.describe(self.episode_memory_bytes, settings.max_processes))
        if self.pool is not None and capped_workspace:
            measures.append(f"disk: the working directory is a {settings.workspace_mb} MiB tmpfs")
        elif self.pool is not None:
            measures.append(
                "NOT bounded: disk use in the working directory (the operator's CODING_WORKSPACE; 16 MiB per file); "
                f"each hidden test's directory is a {settings.workspace_mb} MiB tmpfs"
            )
        else:
            measures.append("NOT bounded: disk use in the working directory (not root: no tmpfs)")
        measures.append(
            f"slots: {settings.max_concurrent_runs} runs at once per server, "
            f"{settings.max_runs_per_episode} per episode"
        )
        return measures


class _Slots:
    """Run slots: a cap per server, and one per episode so that no episode holds every slot."""

    def __init__(self, total: int, per_episode: int) -> None:
        self._total = asyncio.Semaphore(total)
        self._per_episode = per_episode
        self._episodes: dict[int, tuple[asyncio.Semaphore, int]] = {}

    @asynccontextmanager
    async def hold(self, key: int) -> AsyncIterator[None]:
        own, users = self._episodes.get(key, (asyncio.Semaphore(self._per_episode), 0))
        self._episodes[key] = (own, users + 1)
        try:
            async with own, self._total:  # the episode's own slot first: a queued episode holds no shared slot
                yield
        finally:
            own, users = self._episodes[key]
            if users == 1:
                del self._episodes[key]
            else:
                self._episodes[key] = (own, users - 1)


def _tool_paths(tools: Tools | None) -> list[Path]:
    if tools is None:
        return []
    return [Path(os.path.realpath(p)) for p in (tools.unshare, tools.setpriv, tools.sh, tools.nsenter) if p]


_libc = ctypes.CDLL(None, use_errno=True)


def _new_user_namespace() -> None:
    """In a forked child: move into a new user namespace (the holder of :meth:`Sandbox._user_namespace`)."""
    if _libc.unshare(_CLONE_NEWUSER) != 0:
        os._exit(125)
