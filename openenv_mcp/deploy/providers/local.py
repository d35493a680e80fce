"""The embedded default provider: ``openenv-mcp serve NAME`` as a child process on a free port."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import IO

from openenv_mcp.deploy.providers.base import STOP_GRACE, Provider, ProviderError, free_port, http_url
from openenv_mcp.settings import Mode

__all__ = ["LocalServer"]


def _tail(stream: IO[bytes] | None, limit: int = 2_000) -> str:
    if stream is None:
        return ""
    stream.flush()
    stream.seek(0)
    text = stream.read().decode("utf-8", "replace").strip()
    return text[-limit:]


class LocalServer(Provider):
    """``openenv-mcp serve NAME`` as a child process on a free port: the embedded default.

    Args:
        name: The server, as ``openenv-mcp list`` shows it.
        mode: sim or prod (prod settings such as ``SQL_DATABASE_URL`` come from ``environment``
            or this process's environment).
        host: The address to bind (``127.0.0.2`` and so on are other loopback addresses on Linux).
        port: The port; by default a free one, picked again if another process takes it first.
        environment: Variables added to the child's environment (``MODE`` and ``OPENENV_*`` are set
            from the arguments above).
        startup_timeout: Seconds to wait for ``/readyz``.
        log_level: The server's log level; its output goes to a temporary file, quoted in errors.
    """

    def __init__(
        self,
        name: str,
        *,
        mode: Mode = "sim",
        host: str = "127.0.0.1",
        port: int | None = None,
        environment: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        log_level: str = "warning",
    ) -> None:
        self.name = name
        self.mode = mode
        self.host = host
        self.port = port
        self.environment = dict(environment or {})
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def __repr__(self) -> str:
        return f"LocalServer({self.name!r}, mode={self.mode!r})"

    def argv(self, port: int) -> list[str]:
        """The child's command line."""
        return [
            sys.executable, "-m", "openenv_mcp.cli", "serve", self.name, "--mode", self.mode,
            "--host", self.host, "--port", str(port), "--log-level", self.log_level,
        ]  # fmt: skip

    def start(self) -> str:
        if self.process is not None:
            return self.url
        attempts = 1 if self.port is not None else 3
        for attempt in range(attempts):
            port = self.port if self.port is not None else free_port(self.host)
            try:
                return self._start_on(port)
            except ProviderError as exc:
                lost_race = "address already in use" in exc.message.lower()
                if not lost_race or attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def _start_on(self, port: int) -> str:
        env = {**os.environ, **self.environment, "MODE": self.mode}
        self._log = tempfile.TemporaryFile(prefix=f"openenv-{self.name}-")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            self.argv(port),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stop() ends everything it started
        )
        return self._ready(http_url(self.host, port))

    def _died(self) -> str | None:
        process = self.process
        if process is None or process.poll() is None:
            return None
        return (
            f"'openenv-mcp serve {self.name} --mode {self.mode}' exited with status {process.returncode} before it "
            f"was ready: {_tail(self._log) or '(no output)'}"
        )

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would; :meth:`stop` still cleans up after."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_GRACE)

    def stop(self) -> None:
        process, self.process = self.process, None
        self._url = None
        try:
            if process is not None and process.poll() is None:
                _signal_group(process, signal.SIGTERM)
                try:
                    process.wait(timeout=STOP_GRACE)
                except subprocess.TimeoutExpired:
                    _signal_group(process, signal.SIGKILL)
                    process.wait(timeout=STOP_GRACE)
            if process is not None:
                _signal_group(process, signal.SIGKILL)  # anything it left behind in its group
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(process.pid, sig)
