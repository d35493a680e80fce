"""Containers for the tests: podman's Docker API on a socket of our own, the images, compose stacks up.

``scripts/containers`` installs and prepares what the engine needs; :func:`running_engine` starts the
API socket and stops it after; :func:`build_images` builds the project's two images and the PostgreSQL
stand-in (layer cache: a rebuild after no change takes seconds); :func:`stack_up` brings a committed
compose file up through ``openenv-mcp compose up`` and down after. tests/deploy/conftest.py makes them
fixtures. Without a container engine the tests skip with the reason; under ``CI=true`` they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from openenv_mcp.deploy.compose import COMPOSE_DIR, ComposeRunner
from tests.support import IN_CI, require_service, required_variables

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "tests" / "deploy" / "images"
BASE_IMAGE = os.environ.get("OPENENV_BASE_IMAGE", "localhost/openenv-python:3.11-bookworm")
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
SLIM = "localhost/openenv-mcp:test"
DESKTOP = "localhost/openenv-mcp-desktop:test"
POSTGRES = "localhost/openenv-postgres:test"
MAIL = "localhost/openenv-mail:test"


@dataclass
class Engine:
    """A running engine: the environment that points docker, compose and podman at it."""

    env: dict[str, str]
    socket: Path
    process: subprocess.Popen[bytes] | None = None
    built: dict[str, float] = field(default_factory=dict)

    def podman(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done

    def build(self, tag: str, context: Path, *, dockerfile: Path | None = None, target: str | None = None) -> float:
        """Build ``tag`` (the host's CA bundle as the build secret); seconds it took."""
        started = time.monotonic()
        args = ["build", "--format", "docker", "--network=host", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}"]
        if HOST_CA.is_file():
            args += ["--secret", f"id=ca-certificates,src={HOST_CA}"]
        if dockerfile is not None:
            args += ["-f", str(dockerfile)]
        if target is not None:
            args += ["--target", target]
        self.podman(*args, "-t", tag, str(context), timeout=900)
        self.built[tag] = time.monotonic() - started
        return self.built[tag]

    def cli(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        """``openenv-mcp ARGS`` against this engine."""
        return subprocess.run(
            [sys.executable, "-m", "openenv_mcp.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def unavailable(why: str) -> None:
    require_service(f"a container engine (podman; scripts/containers sets it up): {why}", OSError(why))


@contextmanager
def running_engine(folder: Path) -> Iterator[Engine]:
    """scripts/containers, then podman's Docker API on a socket in ``folder``; stopped on leaving."""
    state = ROOT / ".containers"
    script = str(ROOT / "scripts" / "containers")
    done = subprocess.run([script, str(state)], capture_output=True, text=True, check=False)
    if done.returncode == 3:
        unavailable(done.stderr.strip())
    if done.returncode != 0:
        message = f"scripts/containers failed ({done.returncode}): {done.stderr[-3000:]}"
        if IN_CI or shutil.which("podman"):
            pytest.fail(message)
        unavailable(message)
    socket = folder / "podman.sock"
    env = {
        **os.environ,
        "CONTAINERS_CONF": str(state / "containers.conf"),
        "DOCKER_CONFIG": str(state / "docker"),
        "DOCKER_HOST": f"unix://{socket}",
        "COMPOSE_BAKE": "false",
        "DOCKER_BUILDKIT": "0",
        "OPENENV_IMAGE": SLIM,
        "OPENENV_DESKTOP_IMAGE": DESKTOP,
        "OPENENV_POSTGRES_IMAGE": POSTGRES,
    }
    env = {k: v for k, v in env.items() if not k.startswith("OPENENV_PORT_")}
    process = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{socket}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"podman system service did not open {socket} (exit status {process.poll()})")
            time.sleep(0.05)
        yield Engine(env=env, socket=socket, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def build_images(engine: Engine) -> Engine:
    """The project's slim and desktop images and the PostgreSQL stand-in, built (or found in the cache)."""
    engine.build(SLIM, ROOT, dockerfile=COMPOSE_DIR / "Dockerfile", target="slim")
    engine.build(DESKTOP, ROOT, dockerfile=COMPOSE_DIR / "Dockerfile", target="display")
    engine.build(POSTGRES, IMAGES / "postgres")
    (ROOT / ".containers" / "build-times.json").write_text(json.dumps(engine.built, indent=2) + "\n")
    return engine


@dataclass
class Stack:
    """A compose project brought up from one of the committed files; each server's URL on the host."""

    runner: ComposeRunner
    engine: Engine
    urls: dict[str, str]
    project: str
    file: Path

    def containers(self, service: str) -> list[str]:
        out = self.runner.run("ps", "-q", service, capture=True).stdout.split()
        return out

    def inspect(self, container: str, template: str) -> str:
        return self.engine.podman("inspect", "--format", template, container).stdout.strip()


@contextmanager
def stack_up(engine: Engine, mode: str, extra: dict[str, str], services: list[str]) -> Iterator[Stack]:
    """The committed compose file of ``mode`` up (``services``, or all) with ``extra`` variables; down after."""
    project = f"openenv-test-{mode}-{uuid.uuid4().hex[:6]}"
    file = COMPOSE_DIR / f"docker-compose.{mode}.yml"
    env = {**engine.env, **extra}
    runner = ComposeRunner(file, project=project, environment=env, quiet=True)
    engine_for_stack = Engine(env=env, socket=engine.socket)
    try:
        # Up through the project's own CLI, with every server's /readyz within 60 s. The engine picks the host
        # ports; one it picked can be taken by another socket of this busy machine before it binds: then again.
        for attempt in range(3):
            done = engine_for_stack.cli(
                "compose", "up", "--mode", mode, "--project", project, "--timeout", "60", *services, timeout=300
            )
            if done.returncode == 0 or "address already in use" not in done.stderr or attempt == 2:
                break
            engine_for_stack.cli("compose", "down", "--mode", mode, "--project", project, timeout=300)
        if done.returncode != 0:
            logs = runner.run("logs", "--tail", "30", capture=True).stdout[-4000:]
            pytest.fail(f"openenv-mcp compose up --mode {mode} failed: {done.stderr[-3000:]}\n{logs}")
        urls = {}
        for line in done.stdout.splitlines():
            name, _, rest = line.partition(" ready at ")
            if rest:
                urls[name.strip()] = rest.split()[0]
        yield Stack(runner=runner, engine=engine_for_stack, urls=urls, project=project, file=file)
    finally:
        down = engine_for_stack.cli("compose", "down", "--mode", mode, "--project", project, "--volumes", timeout=300)
        assert down.returncode == 0, down.stderr


def unpublished(servers: list[str]) -> dict[str, str]:
    """An empty port variable per server: the engine picks free host ports (the machine is shared)."""
    return {f"OPENENV_PORT_{name.upper()}": "" for name in servers}


SIM_SERVERS = ["sql", "email", "search", "coding", "desktop", "memory"]


PROD_SERVERS = ["sql", "search", "coding"]


def prod_variables() -> dict[str, str]:
    """Every credential the prod file requires (servers not started still need theirs), ports left free."""
    file = COMPOSE_DIR / "docker-compose.prod.yml"
    extra = {name: f"pw{uuid.uuid4().hex[:12]}" for name in required_variables(file)}
    extra.update(unpublished(SIM_SERVERS))
    return extra
