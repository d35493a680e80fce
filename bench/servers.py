"""Start the servers under test as subprocesses on free ports, wait until they answer, and always stop them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

READY_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0
HOST = "127.0.0.1"
MAX_STEPS = 10**9  # one long episode per client: no step limit (default 20) inside a measured block


@dataclass
class ServerSpec:
    """How to start one server; it is ready once GET ``ready_path`` answers below 500."""

    name: str
    argv: list[str]
    ready_path: str
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Server:
    spec: ServerSpec
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (Linux ``/proc``; 10 ms resolution)."""
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()  # fields from the 3rd on: utime and stime are the 14th, 15th
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def ours() -> ServerSpec:
    """Our SQL server in sim mode, started by the installed CLI."""
    cli = str(Path(sys.executable).parent / "openenv-mcp")
    env = {"MODE": "sim", "OPENENV_MAX_STEPS": str(MAX_STEPS)}
    return ServerSpec("ours", [cli, "serve", "sql", "--mode", "sim", "--port", "{port}"], "/readyz", env)


def bare_fastapi(tables: Sequence[str]) -> ServerSpec:
    argv = [sys.executable, "-m", "bench.baseline_fastapi", "--port", "{port}", "--tables", ",".join(tables)]
    return ServerSpec("bare-fastapi", argv, "/healthz")


def bare_mcp(tables: Sequence[str], *, runner: str = "uvicorn", sse: bool = False) -> ServerSpec:
    argv = [sys.executable, "-m", "bench.baseline_mcp", "--port", "{port}", "--tables", ",".join(tables)]
    argv += ["--runner", runner] + (["--sse"] if sse else [])
    name = f"bare-mcp-{runner}-{'sse' if sse else 'json'}"
    return ServerSpec(name, argv, "/")  # "/" is a plain 404: proves the app serves without opening an MCP session


def _start(spec: ServerSpec, log_dir: Path) -> Server:
    port = free_port()
    log = log_dir / f"{spec.name}.log"
    argv = [arg.replace("{port}", str(port)) for arg in spec.argv]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env={**os.environ, **spec.env}
        )
    return Server(spec, port, process, log)


def _wait_ready(server: Server, deadline: float) -> None:
    url = server.url + server.spec.ready_path
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.spec.name} exited with {server.process.returncode}:\n{_tail(server.log)}")
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{server.spec.name} not ready at {url} after {READY_TIMEOUT:g} s:\n{_tail(server.log)}")


def _stop(server: Server) -> None:
    if server.process.poll() is not None:
        return
    server.process.terminate()
    try:
        server.process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


def _tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def running(specs: Sequence[ServerSpec], log_dir: Path) -> Iterator[dict[str, Server]]:
    """Start every server at once, wait for each (bounded), yield them by name, stop them all on the way out."""
    log_dir.mkdir(parents=True, exist_ok=True)
    servers: dict[str, Server] = {}
    try:
        for spec in specs:
            servers[spec.name] = _start(spec, log_dir)
        deadline = time.monotonic() + READY_TIMEOUT
        for server in servers.values():
            _wait_ready(server, deadline)
        yield servers
    finally:
        for server in servers.values():
            _stop(server)
