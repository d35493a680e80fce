"""The servers under test: how each is started (a subprocess on a free port), waited for, measured and stopped.

Ours are started the way users start them (``openenv-mcp serve NAME``; the trivial environment through the same
``openenv_mcp.cli.main``, see ``bench/trivial.py``). The baselines are ``bench/baseline_*.py``. OpenEnv runs from the
venv the tests already make for OpenEnv's clients, ``.venv/openenv`` (the latest ``openenv`` release, pinned in
``tests/interop/openenv-requirements.txt``), made here on first use when the tests have not made it, plus uvloop and
httptools so that it is served like ours; it never enters the project's dependencies.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
READY_TIMEOUT = 90.0  # several servers start at once on 2 shared cores; the desktop one starts Xvfb
STOP_TIMEOUT = 10.0
MAX_STEPS = 10**9  # one long episode per client: no step limit inside a measured block
BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OPENENV_VENV = ROOT / ".venv" / "openenv"  # shared with tests/doors/test_openenv.py, which makes it the same way
OPENENV_REQUIREMENTS = ROOT / "tests" / "interop" / "openenv-requirements.txt"
ORS_VENV = ROOT / ".venv" / "ors-client"  # shared with tests/doors/test_ors.py (the reference ORS client)
ORS_REQUIREMENTS = ROOT / "tests" / "interop" / "ors-requirements.txt"
PEER_SERVING = ("uvloop", "httptools")  # served like ours; the tests' clients do not need them
TRAJECTORY_DIR = Path(tempfile.gettempdir()) / f"openenv-mcp-bench-{os.getpid()}"  # one per run: runs may overlap


@dataclass
class ServerSpec:
    """How to start one server; it is ready once GET ``ready_path`` answers below 500 (stdio servers: never)."""

    name: str
    argv: list[str]
    ready_path: str
    env: dict[str, str] = field(default_factory=dict)
    optional: bool = False  # when it does not start, its figures are reported as skipped (with why), not fatal
    cwd: Path | None = None  # where it runs (the repository's root when None)


@dataclass
class Server:
    spec: ServerSpec
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    started_at: float

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def name(self) -> str:
        return self.spec.name

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (Linux ``/proc``; 10 ms resolution)."""
        return _cpu_seconds(self.process.pid)

    def rss_bytes(self) -> int:
        """Resident memory of the server and every process under it (the desktop server's Xvfb and editors)."""
        return sum(_rss_bytes(pid) for pid in [self.process.pid, *descendants(self.process.pid)])


def _cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # fields from the 3rd on: utime and stime are the 14th, 15th
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    """Every live process whose ancestry leads to ``pid``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        children = [child for child, parent in parents.items() if parent == current]
        found += children
        frontier += children
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


# what to start -------------------------------------------------------------------------------------


def _ours_env(recording: bool, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"MODE": "sim", "OPENENV_MAX_STEPS": str(MAX_STEPS), "OPENENV_MAX_EPISODES": "20000"}
    if recording:  # the shipped default records every step into SQLite; keep the file out of the repository
        TRAJECTORY_DIR.mkdir(parents=True, exist_ok=True)
        env["OPENENV_TRAJECTORIES"] = f"sqlite:///{TRAJECTORY_DIR / 'trajectories-{port}.db'}"
    else:
        env["OPENENV_TRAJECTORIES"] = "off"
    return {**env, **(extra or {})}


def ours(env_name: str, *, recording: bool = False, name: str | None = None, **extra: str) -> ServerSpec:
    """A shipped environment in sim mode, started by the installed CLI."""
    cli = str(Path(sys.executable).parent / "openenv-mcp")
    argv = [cli, "serve", env_name, "--mode", "sim", "--port", "{port}"]
    optional = env_name == "desktop"  # needs Xvfb and Tk on the machine
    return ServerSpec(name or f"ours-{env_name}", argv, "/readyz", _ours_env(recording, extra), optional)


def ours_trivial(*, recording: bool = False, name: str | None = None, **extra: str) -> ServerSpec:
    """The trivial environment (``bench/trivial.py``) through the same ``openenv-mcp serve`` code."""
    argv = [sys.executable, "-m", "bench.trivial", "serve", "trivial", "--mode", "sim", "--port", "{port}"]
    spec_name = name or ("ours-trivial-recording" if recording else "ours-trivial")
    return ServerSpec(spec_name, argv, "/readyz", _ours_env(recording, extra))


def ours_stdio_argv(env_name: str) -> list[str]:
    if env_name == "trivial":
        return [sys.executable, "-m", "bench.trivial", "serve", "trivial", "--transport", "stdio"]
    return [str(Path(sys.executable).parent / "openenv-mcp"), "serve", env_name, "--transport", "stdio"]


def bare_fastapi(tables: Sequence[str]) -> ServerSpec:
    argv = [sys.executable, "-m", "bench.baseline_fastapi", "--port", "{port}", "--tables", ",".join(tables)]
    return ServerSpec("bare-fastapi", argv, "/healthz")


def fastapi_with_mcp(tables: Sequence[str]) -> ServerSpec:
    """Bare FastAPI with the bare SDK server at ``/mcp``: the start-up floor of a server with both doors."""
    argv = [sys.executable, "-m", "bench.baseline_fastapi", "--port", "{port}", "--tables", ",".join(tables), "--mcp"]
    return ServerSpec("fastapi-mcp", argv, "/healthz")


def bare_mcp(tables: Sequence[str]) -> ServerSpec:
    argv = [sys.executable, "-m", "bench.baseline_mcp", "--port", "{port}", "--tables", ",".join(tables)]
    return ServerSpec("bare-mcp", argv, "/")  # "/" is a plain 404: proves the app serves without an MCP session


def bare_mcp_stdio_argv(tables: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "bench.baseline_mcp", "--runner", "stdio", "--tables", ",".join(tables)]


def openenv(tables: Sequence[str], python: Path) -> ServerSpec:
    argv = [str(python), str(BENCH / "baseline_openenv.py"), "--port", "{port}", "--tables", ",".join(tables)]
    return ServerSpec("openenv", argv, "/health", optional=True)


def ors_sdk(tables: Sequence[str], python: Path) -> ServerSpec:
    """The ORS SDK's own server (``bench/baseline_ors.py``), its per-request INFO logs and update check off."""
    argv = [str(python), str(BENCH / "baseline_ors.py"), "--port", "{port}", "--tables", ",".join(tables)]
    env = {"OPENREWARD_LOG_LEVEL": "WARNING", "OPENREWARD_DISABLE_UPDATE_CHECK": "1"}
    return ServerSpec("ors-sdk", argv, "/health", env, optional=True)


# the OpenEnv venv ----------------------------------------------------------------------------------


def openenv_python() -> tuple[Path | None, str]:
    """The OpenEnv venv's python, made on first use; ``(None, why)`` when it cannot be made.

    The venv is the one ``tests/doors/test_openenv.py`` makes (same place, same stamp: a hash of the requirements
    file), so whichever runs first makes it for both; the benchmark adds uvloop and httptools to it.
    """
    return _peer_python(OPENENV_VENV, OPENENV_REQUIREMENTS, "openenv.core", "openenv")


def ors_python() -> tuple[Path | None, str]:
    """The ORS client venv's python (``openreward``, whose SDK also holds the ORS server), made on first use.

    The venv is the one ``tests/doors/test_ors.py`` makes for the reference client (same place, same stamp); the
    benchmark adds uvloop and httptools to it.
    """
    return _peer_python(ORS_VENV, ORS_REQUIREMENTS, "openreward.environments", "openreward")


def _peer_python(venv: Path, requirements: Path, module: str, what: str) -> tuple[Path | None, str]:
    python = venv / "bin" / "python"
    digest = hashlib.sha1(requirements.read_bytes()).hexdigest()[:12]
    stamp = venv / f".installed-{digest}"
    serving = venv / f".serving-{digest}"
    if python.exists() and stamp.exists() and serving.exists():
        return python, ""
    print(f"making {venv.relative_to(ROOT)} ({what}, uvloop, httptools; about two minutes) ...", flush=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    try:
        if not (python.exists() and stamp.exists()):
            fresh = [sys.executable, "-m", "venv", "--clear", str(venv)]
            subprocess.run(fresh, check=True, capture_output=True, timeout=300)
            subprocess.run([*pip, "-r", str(requirements)], check=True, capture_output=True, timeout=900)
            stamp.touch()
        subprocess.run([*pip, *PEER_SERVING], check=True, capture_output=True, timeout=300)
        subprocess.run([str(python), "-c", f"import {module}, uvloop, httptools"], check=True, capture_output=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        tail = detail.decode(errors="replace").strip().splitlines()[-3:] if isinstance(detail, bytes) else []
        return None, f"could not install {what}, uvloop and httptools into {venv}: {exc} {' '.join(tail)}"
    serving.touch()
    return python, ""


def peer_version(python: Path, package: str) -> str:
    done = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or "?"


def openenv_version(python: Path) -> str:
    return peer_version(python, "openenv")


# start, wait, stop ----------------------------------------------------------------------------------


def start(spec: ServerSpec, log_dir: Path) -> Server:
    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{spec.name}.log"
    argv = [arg.replace("{port}", str(port)) for arg in spec.argv]
    env = {**os.environ, **{k: v.replace("{port}", str(port)) for k, v in spec.env.items()}}
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=spec.cwd or ROOT
        )
    return Server(spec, port, process, log, started)


def answers(server: Server, timeout: float = 1.0) -> bool:
    """One GET of the ready path over a fresh connection: True when it answers below 500."""
    request = f"GET {server.spec.ready_path} HTTP/1.1\r\nHost: {HOST}:{server.port}\r\nConnection: close\r\n\r\n"
    try:
        with socket.create_connection((HOST, server.port), timeout=timeout) as sock:
            sock.sendall(request.encode())
            head = sock.recv(64)
    except OSError:
        return False
    return head.startswith(b"HTTP/1.1 ") and head[9:10] in b"1234"


def wait_ready(server: Server, deadline: float, poll: float = 0.005) -> float:
    """Wait until the server answers; return seconds since it was started."""
    while time.monotonic() < deadline:
        if answers(server):
            return time.monotonic() - server.started_at
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.process.returncode}:\n{tail(server.log)}")
        time.sleep(poll)
    raise RuntimeError(f"{server.name} not ready at {server.url}{server.spec.ready_path}:\n{tail(server.log)}")


def stop(server: Server) -> None:
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


def tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def running(
    specs: Sequence[ServerSpec], log_dir: Path, skipped: dict[str, str] | None = None
) -> Iterator[dict[str, Server]]:
    """Start every server at once, wait for each (bounded), yield them by name, stop them all on the way out.

    An optional server that does not start is left out, with the reason in ``skipped``; any other is fatal.
    """
    servers: dict[str, Server] = {}
    try:
        for spec in specs:
            servers[spec.name] = start(spec, log_dir)
        deadline = time.monotonic() + READY_TIMEOUT
        for name, server in list(servers.items()):
            try:
                wait_ready(server, deadline, poll=0.05)
            except RuntimeError as exc:
                if not server.spec.optional or skipped is None:
                    raise
                stop(server)
                del servers[name]
                skipped[name] = str(exc).strip().splitlines()[0] + " (log: " + str(server.log) + ")"
        yield servers
    finally:
        for server in servers.values():
            stop(server)


def clean_trajectories() -> None:
    shutil.rmtree(TRAJECTORY_DIR, ignore_errors=True)
