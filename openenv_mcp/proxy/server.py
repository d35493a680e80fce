"""The capture proxy's one lifecycle: :class:`CaptureProxy` builds, starts and stops it (STYLE 20).

    with CaptureProxy("http://127.0.0.1:8080", store="sqlite:///runs.db") as proxy:
        base_url = proxy.base_url(episode_id)          # give it to the harness
        ...                                             # the harness plays the episode
        turns = proxy.turns(episode_id)                 # what the model read and sampled, in order

In process (the default), the proxy serves from a thread of this process on a free port; with
``subprocess=True`` it runs as ``openenv-mcp proxy`` in a process of its own (its CPU apart from the caller's),
and the port it took is read from its first line. Either way, leaving the block stops it and waits for it.
"""

from __future__ import annotations

import contextlib
import re
import subprocess as subprocesses
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
import uvicorn
from starlette.applications import Starlette

from openenv_mcp.errors import BackendUnavailable, ConfigError
from openenv_mcp.proxy.app import build_app
from openenv_mcp.proxy.engine import Engine, EngineOptions
from openenv_mcp.proxy.recording import TurnLog
from openenv_mcp.proxy.upstream import LlamaCppUpstream
from openenv_mcp.trajectories.store import TrajectoryStore

__all__ = ["READY_LINE", "CaptureProxy", "proxy_app"]

READY_LINE = "openenv-mcp proxy: serving on "
_READY = re.compile(re.escape(READY_LINE) + r"(http://\S+)")
_START_TIMEOUT = 30.0


def proxy_app(upstream: str, *, store: str, options: EngineOptions | None = None, timeout: float = 300.0) -> Starlette:
    """The proxy as an ASGI app: its lifespan opens the store (adding the turn columns an older store lacks) and
    closes the upstream client. ``timeout``: seconds the inference server has to answer a request."""
    if store.strip().lower() == "off":
        raise ConfigError(
            "The capture proxy records into the trajectory store, and OPENENV_TRAJECTORIES is off; set it to the "
            "store the environment's server records into"
        )
    options = options or EngineOptions()
    opened = TrajectoryStore(store)
    engine = Engine(LlamaCppUpstream(upstream, timeout=timeout), TurnLog(opened, wait=options.episode_wait), options)
    app = build_app(engine)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(opened.create)
        with contextlib.suppress(BackendUnavailable):
            await engine.start()  # read the template now if the server is up; else on the first request
        try:
            yield
        finally:
            await engine.upstream.aclose()
            opened.close()

    app.router.lifespan_context = lifespan
    app.state.engine = engine
    return app


class CaptureProxy:
    """A capture proxy in front of ``upstream`` (llama-server's root URL), recording into ``store``.

    Args:
        upstream: The inference server's URL.
        store: The trajectory store's SQLAlchemy URL (the one the environment's server records into).
        host: Where to listen.
        port: The port (0: a free one).
        options: How the proxy answers (parser, chat template, token cap, how long to wait for an episode).
        timeout: Seconds the inference server has to answer one request.
        subprocess: Run as ``openenv-mcp proxy`` in a process of its own instead of a thread of this one.
    """

    def __init__(
        self,
        upstream: str,
        *,
        store: str,
        host: str = "127.0.0.1",
        port: int = 0,
        options: EngineOptions | None = None,
        timeout: float = 300.0,
        subprocess: bool = False,
    ) -> None:
        self.upstream = upstream
        self.store = store
        self.host = host
        self.port = port
        self.options = options or EngineOptions()
        self.timeout = timeout
        self.subprocess = subprocess
        self.url = ""
        self.process: subprocesses.Popen[str] | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._reader: TrajectoryStore | None = None
        self._template_file: Path | None = None

    def base_url(self, episode_id: str, *, v1: bool = True) -> str:
        """The base URL to give a harness for ``episode_id`` (``v1=False`` for those that append ``/v1``)."""
        return f"{self.url}/ep/{episode_id}" + ("/v1" if v1 else "")

    def turns(self, episode_id: str) -> list[dict[str, Any]]:
        """The turns recorded for ``episode_id`` so far (side requests included, marked ``side``), in order."""
        if self._reader is None:
            raise RuntimeError("The proxy is not running: use it inside its `with` block")
        return self._reader.episode_turns(episode_id)

    def __enter__(self) -> Self:
        self._reader = TrajectoryStore(self.store)
        try:
            if self.subprocess:
                self._spawn()
            else:
                self._serve()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop()

    def _serve(self) -> None:
        app = proxy_app(self.upstream, store=self.store, options=self.options, timeout=self.timeout)
        config = uvicorn.Config(app, host=self.host, port=self.port, log_level="warning", lifespan="on")
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, name="capture-proxy", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise BackendUnavailable(f"The capture proxy did not start within {_START_TIMEOUT:g} s")
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{_host(self.host)}:{port}"

    def _spawn(self) -> None:
        command = [sys.executable, "-m", "openenv_mcp.cli", "proxy", "--upstream", self.upstream]
        command += [
            "--store",
            self.store,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--timeout",
            str(self.timeout),
        ]
        command += ["--tool-parser", self.options.parser, "--episode-wait", str(self.options.episode_wait)]
        if self.options.max_tokens is not None:
            command += ["--max-tokens", str(self.options.max_tokens)]
        if not self.options.own_replies:
            command.append("--template-replies")
        if self.options.chat_template is not None:
            with tempfile.NamedTemporaryFile("w", suffix=".jinja", delete=False) as written:
                written.write(self.options.chat_template)
            self._template_file = Path(written.name)
            command += ["--chat-template", written.name]
        self.process = process = subprocesses.Popen(
            command, stdout=subprocesses.PIPE, stderr=subprocesses.STDOUT, text=True
        )
        found: list[str] = []
        ready = threading.Event()
        reader = threading.Thread(target=_first_line, args=(process.stdout, found, ready), daemon=True)
        reader.start()
        ready.wait(_START_TIMEOUT)
        match = _READY.search(found[0]) if found else None
        if match is None:
            raise BackendUnavailable(
                f"The capture proxy process did not start within {_START_TIMEOUT:g} s: {' '.join(found)[:500]}"
            )
        self.url = match.group(1)

    def _stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=20)
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocesses.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
            if self.process.stdout is not None:
                self.process.stdout.close()
        if self._reader is not None:
            self._reader.close()
        if self._template_file is not None:
            self._template_file.unlink(missing_ok=True)
        self._server = self._thread = self.process = None


def _first_line(stream: Any, found: list[str], ready: threading.Event) -> None:
    """Read lines until the ready line (then ``found`` is it alone) or the end; then drain the rest."""
    for line in stream:
        found.append(line.strip())
        if _READY.search(line):
            found[:] = [line.strip()]
            break
    ready.set()
    for _ in stream:  # keep the pipe drained so the proxy never blocks on a full one
        pass


def _host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
