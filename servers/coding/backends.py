"""The coding backends: a fresh workspace per episode in sim, the operator's workspace in prod.

Both run code in the same :class:`~openenv_mcp.servers.coding.sandbox.Sandbox`. Sim is for training:
each episode has its own directory and uid, runs are seeded (``PYTHONHASHSEED`` is the
episode's seed; run ``n`` of the episode reads ``/dev/urandom`` as a stream drawn from the seed
and ``n``; the uid it sees is a constant) and report no wall-clock figures, so observations
replay exactly; the task's hidden tests grade ``submit_solution``. Prod is for agents at work: code runs in one
persistent directory (``CODING_WORKSPACE``) as the account that owns it, one run at a time,
and ``submit_solution`` saves the program and runs the operator's acceptance tests
(``CODING_TESTS_FILE``), if any.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
from typing import TYPE_CHECKING, Protocol

from openenv_mcp import Backend, BackendUnavailable, ConfigError
from openenv_mcp.servers.coding.accounts import Account
from openenv_mcp.servers.coding.judge import TestSuite, judge
from openenv_mcp.servers.coding.models import RunResult, SandboxInfo, SubmitResult
from openenv_mcp.servers.coding.sandbox import RunOutcome, Sandbox, Workspace
from openenv_mcp.servers.coding.settings import CodingSettings

if TYPE_CHECKING:
    from openenv_mcp.servers.coding.problem import CodingTask, Problem

__all__ = ["CodingBackend", "ProdBackend", "SimBackend"]

SOLUTION = "solution.py"


class CodingBackend(Backend, Protocol):
    """What the coding tools need: run a program, judge a solution, describe the sandbox."""

    async def run(self, code: str, *, stdin: str, timeout_s: float) -> RunResult: ...
    async def submit(self, code: str) -> SubmitResult: ...
    def describe(self) -> SandboxInfo: ...


class _Backend:
    """What both backends share: a sandbox, a workspace in it, and the settings' caps."""

    timing: bool = False

    def __init__(self, sandbox: Sandbox, workspace: Workspace, *, hash_seed: int | None) -> None:
        self.sandbox = sandbox
        self.workspace = workspace
        self._hash_seed = hash_seed

    async def ping(self) -> None:
        if not self.workspace.path.is_dir():
            raise BackendUnavailable(f"The sandbox workspace {self.workspace.path} is gone")

    def _entropy(self) -> str | None:
        """The key of the next run's entropy (None: an unseeded run)."""
        return None

    async def _run(self, code: str, stdin: str, timeout_s: float) -> RunResult:
        limit = min(timeout_s, self.sandbox.settings.max_timeout_s)
        outcome = await self.sandbox.run(
            self.workspace, code, stdin=stdin, timeout_s=limit, hash_seed=self._hash_seed, entropy=self._entropy()
        )
        return self._result(outcome)

    def _result(self, outcome: RunOutcome) -> RunResult:
        return RunResult(
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            exit_code=outcome.exit_code,
            timed_out=outcome.timed_out,
            truncated=outcome.truncated,
            duration_ms=round(outcome.duration_s * 1000, 1) if self.timing else None,
        )

    async def _judge(self, code: str, suite: TestSuite) -> SubmitResult:
        self.sandbox.place(self.workspace, SOLUTION, code)
        return await judge(
            self.sandbox, self.workspace, code, suite, hash_seed=self._hash_seed, entropy=self._entropy()
        )

    def describe(self) -> SandboxInfo:
        sandbox, settings = self.sandbox, self.sandbox.settings
        caps = sandbox.capabilities
        return SandboxInfo(
            python=caps.python_version,
            working_directory=sandbox.visible_workdir(self.workspace),
            max_timeout_s=settings.max_timeout_s,
            memory_mb=settings.memory_mb,
            max_processes=settings.max_processes if caps.users else None,
            max_file_mb=settings.max_file_mb,
            max_output_bytes=settings.max_output_bytes,
            network=not caps.namespaces,
            isolation=sandbox.isolation(capped_workspace=self.workspace.owned),
        )


class SimBackend(_Backend):
    """One episode: its own directory and uid, the task's hidden tests, runs seeded by the episode."""

    def __init__(self, sandbox: Sandbox, workspace: Workspace, problem: Problem, seed: int, runs: int = 0) -> None:
        super().__init__(sandbox, workspace, hash_seed=seed)
        self._problem = problem  # its hidden tests are built at the first submission, off the event loop
        self._seed = seed
        self._runs = runs  # runs and submissions so far: each draws its entropy from the seed and its number

    def _entropy(self) -> str:
        self._runs += 1
        return f"{self._seed}/{self._runs}"

    @classmethod
    async def open(cls, task: CodingTask, seed: int, settings: CodingSettings) -> SimBackend:
        sandbox = await Sandbox.for_settings(settings)
        return cls(sandbox, await sandbox.open_workspace(), task.problem, seed)

    async def fork(self) -> SimBackend:
        """Fast-path fork: a new workspace and uid holding a copy of this one's files (same seed and tests)."""
        workspace = await self.sandbox.open_workspace()
        try:
            await asyncio.to_thread(_copy_tree, self.workspace, workspace)
        except OSError as exc:
            await self.sandbox.close_workspace(workspace)
            raise BackendUnavailable(f"Cannot copy the workspace {self.workspace.path}: {exc.strerror}") from None
        return SimBackend(self.sandbox, workspace, self._problem, self._seed, self._runs)

    async def aclose(self) -> None:
        await self.sandbox.close_workspace(self.workspace)

    async def run(self, code: str, *, stdin: str, timeout_s: float) -> RunResult:
        return await self._run(code, stdin, timeout_s)

    async def submit(self, code: str) -> SubmitResult:
        return await self._judge(code, await asyncio.to_thread(self._problem.suite))


def _copy_tree(source: Workspace, target: Workspace, relative: str = ".") -> None:
    """Copy the directories, regular files and symbolic links (as links) the sandboxed account owns from one
    workspace to another, owned by the target's account. Nothing is followed; other files (FIFOs, sockets,
    anything the account does not own) are left out, so the copy never reads what the code could not."""
    with os.scandir(source.path / relative) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if info.st_uid != source.account.uid:
                continue
            path, copy = source.path / relative / entry.name, target.path / relative / entry.name
            if entry.is_symlink():
                os.symlink(os.readlink(path), copy)
            elif entry.is_dir(follow_symlinks=False):
                copy.mkdir(mode=stat.S_IMODE(info.st_mode))
                _copy_tree(source, target, f"{relative}/{entry.name}")
            elif entry.is_file(follow_symlinks=False):
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                with os.fdopen(fd, "rb") as reader, copy.open("xb") as writer:
                    shutil.copyfileobj(reader, writer)
                os.chmod(copy, stat.S_IMODE(info.st_mode), follow_symlinks=False)
            else:
                continue
            if os.geteuid() == 0:
                os.chown(copy, target.account.uid, target.account.gid, follow_symlinks=False)


class ProdBackend(_Backend):
    """The operator's persistent workspace, shared by every caller, one run at a time."""

    timing = True

    def __init__(self, sandbox: Sandbox, workspace: Workspace, suite: TestSuite | None) -> None:
        super().__init__(sandbox, workspace, hash_seed=None)
        self._suite = suite
        self._turn = asyncio.Lock()  # one account, one directory: runs must not overlap

    @classmethod
    async def open(cls, settings: CodingSettings) -> ProdBackend:
        if settings.workspace is None:
            raise ConfigError("Prod coding needs a working directory: set CODING_WORKSPACE")
        path = settings.workspace.resolve()
        if not path.is_dir():
            raise ConfigError(f"CODING_WORKSPACE {path} is not a directory; create it, owned by the sandbox account")
        sandbox = await Sandbox.for_settings(settings)
        account = Account(uid=os.getuid(), gid=os.getgid())
        if sandbox.capabilities.users:
            owner = path.stat()
            if owner.st_uid == 0:
                raise ConfigError(
                    f"CODING_WORKSPACE {path} is owned by root, and code never runs as root: chown it to a dedicated "
                    "unprivileged account (nothing else may run as it: leftover processes of it are killed)"
                )
            account = Account(uid=owner.st_uid, gid=owner.st_gid)
        from openenv_mcp.servers.coding.tasks import load_suite  # tasks imports this module

        suite = load_suite(settings.tests_file) if settings.tests_file is not None else None
        group = sandbox.group_for(account) if sandbox.capabilities.users else None
        return cls(sandbox, Workspace(path=path, account=account, owned=False, group=group), suite)

    async def ping(self) -> None:
        await super().ping()
        tests = self.sandbox.settings.tests_file
        if tests is not None and not tests.is_file():
            raise BackendUnavailable(f"The acceptance tests {tests} (CODING_TESTS_FILE) are gone")

    async def aclose(self) -> None:
        await self.sandbox.sweep(self.workspace.account)  # the operator's account: whatever it runs, always
        if self.workspace.group is not None:
            self.workspace.group.remove()

    async def run(self, code: str, *, stdin: str, timeout_s: float) -> RunResult:
        async with self._turn:
            return await self._run(code, stdin, timeout_s)

    async def submit(self, code: str) -> SubmitResult:
        async with self._turn:
            if self._suite is None:
                self.sandbox.place(self.workspace, SOLUTION, code)
                return SubmitResult(
                    passed=0,
                    total=0,
                    score=0.0,
                    failures=[],
                    message=f"Saved as {SOLUTION}; this server has no acceptance tests (CODING_TESTS_FILE)",
                )
            return await self._judge(code, self._suite)
