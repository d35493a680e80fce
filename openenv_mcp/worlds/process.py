"""One running worker: a process in its own process group, or a container, spoken to in JSON lines.

A worker that exits, answers garbage or does not answer in time is killed (its whole process group, or its
container) and the request raises :class:`~openenv_mcp.BackendUnavailable` naming it; its stderr's last lines go
to the log. A world's own refusal (``{"status": "error"}``) raises :class:`Refused` and leaves the worker alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
from collections import deque

from openenv_mcp.errors import BackendUnavailable
from openenv_mcp.worlds.config import WorkerConfig
from openenv_mcp.worlds.protocol import Garbage, Reply, parse_reply

__all__ = ["Worker"]

log = logging.getLogger(__name__)

_KILL_WAIT = 10.0  # seconds a killed worker (or its container's removal) is waited for


class Worker:
    """A started worker. ``name`` says which one in every message about it."""

    def __init__(self, config: WorkerConfig, process: asyncio.subprocess.Process, container: str | None) -> None:
        self.config = config
        self.process = process
        self.container = container
        where = f"container {container} of image {config.image}" if container else f"pid {process.pid}"
        self.name = f"{config.world} worker ({where}: {' '.join(config.command)[:120]})"
        self.episodes = 0  # how many inits it answered
        self.failed: str | None = None  # why it was killed, once it was
        self._stderr: deque[str] = deque(maxlen=config.stderr_lines)
        self._drain = asyncio.get_running_loop().create_task(self._read_stderr())

    @classmethod
    async def start(cls, config: WorkerConfig) -> Worker:
        """Start a worker (its process, or its container); it answers once it has read its first line."""
        container = None
        env = None
        argv = list(config.command)
        if config.image:
            container = f"openenv-worker-{secrets.token_hex(6)}"
            options = ["run", "--rm", "-i", "--name", container, "--label", f"openenv-mcp.world={config.world}"]
            options += [arg for volume in config.volumes for arg in ("-v", volume)]
            options += [arg for key, value in config.env for arg in ("-e", f"{key}={value}")]
            argv = [config.engine, *options, *config.run_options, config.image, *argv]
        else:
            env = {**os.environ, **dict(config.env)}
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,  # its own process group: killed whole, children included
                limit=config.max_line_bytes,
            )
        except OSError as exc:
            raise BackendUnavailable(f"The {config.world} worker could not start ({argv[0]}: {exc})") from None
        return cls(config, process, container)

    @property
    def alive(self) -> bool:
        return self.failed is None and self.process.returncode is None

    def stderr_tail(self) -> str:
        """The last lines the worker wrote to stderr."""
        return "\n".join(self._stderr)

    async def request(self, line: bytes, *, timeout: float, what: str) -> Reply:
        """Send one line, read one answer; a dead, hung or garbling worker is killed and raises."""
        if not self.alive:
            raise BackendUnavailable(f"The {self.name} is gone ({self.failed or 'it exited'}); reset a new episode")
        try:
            answer = await asyncio.wait_for(self._exchange(line), timeout)
        except TimeoutError:
            raise await self._fail(f"did not answer {what} within {timeout:g} s") from None
        except ConnectionError:  # a broken pipe: it closed its input
            raise await self._fail(f"closed its input before {what}") from None
        except ValueError:  # a line longer than the limit
            raise await self._fail(f"answered {what} with a line over {self.config.max_line_bytes} bytes") from None
        if not answer:
            raise await self._fail(f"exited before answering {what}")
        try:
            return parse_reply(answer)
        except Garbage as exc:
            raise await self._fail(f"answered {what} with garbage ({exc})") from None

    async def _exchange(self, line: bytes) -> bytes:
        """Write ``line``; the next non-blank line of the answer (empty at the end of the stream)."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(line)
        await stdin.drain()
        while True:
            answer = await stdout.readline()
            if not answer or answer.strip():
                return answer

    async def _fail(self, why: str) -> BackendUnavailable:
        """Kill the worker, log its stderr's tail, and make the error the caller raises."""
        await self.kill(why)
        status = self.process.returncode
        exited = f" (exit status {status})" if status is not None and status >= 0 else ""
        log.warning("%s %s%s; the last of its stderr:\n%s", self.name, why, exited, self.stderr_tail() or "(empty)")
        return BackendUnavailable(
            f"The {self.name} {why}{exited}; it was stopped and its stderr is in the server's log. "
            "This episode cannot go on: close it and reset a new one"
        )

    async def kill(self, why: str = "stopped") -> None:
        """Stop the worker for good: its process group, its container; safe to call twice."""
        if self.failed is None:
            self.failed = why
        running = self.process.returncode is None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.container is not None and (running or why != "closed"):
            # the engine's client is gone, not necessarily its container: the engine stops it (docker and podman
            # alike; --rm removes it once stopped)
            stop = await asyncio.create_subprocess_exec(
                self.config.engine, "kill", self.container,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), _KILL_WAIT)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait(), _KILL_WAIT)
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(self._drain, 1.0)

    async def close(self) -> None:
        """End the worker gently: close its input (its loop ends on end of file), then kill what remains."""
        if self.process.returncode is None and self.process.stdin is not None:
            self.process.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), 2.0)
        await self.kill("closed")

    async def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line over the limit: dropped (readline has consumed it)
                continue
            except ConnectionError:
                return
            if not line:
                return
            text = line.decode("utf-8", errors="replace").rstrip()
            self._stderr.append(text)
            log.debug("%s: %s", self.name, text)
