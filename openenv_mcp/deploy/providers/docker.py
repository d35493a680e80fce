"""Providers through the docker client: one container of the image, or one service of a compose file."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from openenv_mcp.deploy.compose import ComposeError, ComposeRunner, compose_file
from openenv_mcp.deploy.providers.base import Provider, ProviderError, http_url
from openenv_mcp.deploy.stacks import CONTAINER_PORT, SERVER_LABEL, port_variable
from openenv_mcp.environment.catalog import load_environment
from openenv_mcp.errors import ConfigError
from openenv_mcp.settings import Mode

__all__ = ["ComposeService", "DockerImage"]


def _run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120.0) -> str:
    """Run a docker command, capturing its output; a failure raises ProviderError with its message."""
    try:
        done = subprocess.run(
            list(argv),
            env=dict(env) if env is not None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise ProviderError(f"'{argv[0]}' is not installed (or not on PATH): install the Docker client") from None
    except subprocess.TimeoutExpired:
        raise ProviderError(f"'{' '.join(argv[:3])} ...' did not finish within {timeout:.0f} s") from None
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip() or "(no message)"
        raise ProviderError(f"'{' '.join(argv[:2])} ...' failed with exit status {done.returncode}: {message}")
    return done.stdout


class DockerImage(Provider):
    """``docker run IMAGE serve NAME``: one container, published on a free port of ``host``.

    Args:
        name: The server to serve.
        image: The image (see ``compose/Dockerfile``); by default ``openenv-mcp-desktop:latest`` for a
            server whose container declares the display stack, else ``openenv-mcp:latest``.
        mode: sim or prod.
        environment: Variables for the container. Only their names reach the ``docker`` command
            line (``--env NAME``); the values travel in its environment, so secrets stay out of ``ps``.
        docker: The docker client to run.
        host: The host address the port is published on.
        run_args: More ``docker run`` options (``--network``, ``--memory``, ...).
        startup_timeout: Seconds to wait for ``/readyz``.
    """

    def __init__(
        self,
        name: str,
        *,
        image: str | None = None,
        mode: Mode = "sim",
        environment: Mapping[str, str] | None = None,
        docker: str = "docker",
        host: str = "127.0.0.1",
        run_args: Sequence[str] = (),
        startup_timeout: float = 120.0,
    ) -> None:
        self.name = name
        self.image = image if image is not None else _default_image(name)
        self.mode = mode
        self.environment = dict(environment or {})
        self.docker = docker
        self.host = host
        self.run_args = tuple(run_args)
        self.startup_timeout = startup_timeout
        self.container: str | None = None

    def __repr__(self) -> str:
        return f"DockerImage({self.name!r}, image={self.image!r}, mode={self.mode!r})"

    def argv(self) -> list[str]:
        """The ``docker run`` command line."""
        names = [arg for key in sorted(self.environment) for arg in ("--env", key)]
        return [
            self.docker, "run", "--detach", "--rm",
            "--publish", f"{self.host}::{CONTAINER_PORT}",
            "--env", f"MODE={self.mode}",
            "--label", f"{SERVER_LABEL}={self.name}",
            *names, *self.run_args, self.image, "serve", self.name,
        ]  # fmt: skip

    def start(self) -> str:
        if self.container is not None:
            return self.url
        env = {**os.environ, **self.environment}
        self.container = _run(self.argv(), env=env).strip().splitlines()[-1]
        try:
            published = _run([self.docker, "port", self.container, f"{CONTAINER_PORT}/tcp"]).strip().splitlines()
            if not published:
                raise ProviderError(f"Container {self.container[:12]} publishes no port for {CONTAINER_PORT}")
            port = int(published[0].rsplit(":", 1)[-1])
        except BaseException:
            self.stop()
            raise
        return self._ready(http_url(self.host, port))

    def _died(self) -> str | None:
        if self.container is None:
            return None
        try:
            running = _run([self.docker, "inspect", "--format", "{{.State.Running}}", self.container], timeout=30)
        except ProviderError as exc:
            return f"Container {self.container[:12]} is gone: {exc.message}"
        if running.strip() == "true":
            return None
        logs = subprocess.run(
            [self.docker, "logs", "--tail", "30", self.container], capture_output=True, text=True, check=False
        )
        return f"Container {self.container[:12]} stopped before it was ready: {(logs.stdout + logs.stderr)[-2000:]}"

    def stop(self) -> None:
        container, self.container = self.container, None
        self._url = None
        if container is not None:
            with contextlib.suppress(ProviderError):  # already removed (--rm), or the engine went with it
                _run([self.docker, "rm", "--force", container], timeout=60)


class ComposeService(Provider):
    """One service of a compose file, in a project of its own, on a free host port.

    ``start()`` runs ``compose up -d SERVICE`` (with what it depends on) and waits for its
    ``/readyz``; ``stop()`` runs ``compose down --volumes`` for the project (``keep_volumes`` keeps
    named volumes).

    Args:
        service: The compose service (a server's name in the generated files).
        mode: Picks ``compose/docker-compose.<mode>.yml`` when ``file`` is not given.
        file: Another compose file.
        project: The project name; by default a fresh one, so a running stack is never touched.
        environment: Variables for the compose tool (credentials the prod file asks for).
        startup_timeout: Seconds to wait for ``/readyz``.
    """

    def __init__(
        self,
        service: str,
        *,
        mode: Mode = "sim",
        file: str | Path | None = None,
        project: str | None = None,
        environment: Mapping[str, str] | None = None,
        startup_timeout: float = 180.0,
        keep_volumes: bool = False,
        runner: Callable[..., ComposeRunner] = ComposeRunner,
    ) -> None:
        self.service = service
        self.mode = mode
        self.startup_timeout = startup_timeout
        self.keep_volumes = keep_volumes
        # An empty OPENENV_PORT_<SERVICE> publishes the service on a port the engine picks.
        variables = {port_variable(service): "", **(environment or {})}
        self.runner = runner(
            Path(file) if file is not None else compose_file(mode),
            project=project or f"openenv-{service}-{secrets.token_hex(3)}",
            environment=variables,
            quiet=True,
        )
        self._started = False

    def __repr__(self) -> str:
        return f"ComposeService({self.service!r}, file={str(self.runner.file)!r})"

    def start(self) -> str:
        if self._started:
            return self.url
        self._started = True
        try:
            self.runner.up([self.service], wait=False)
            url = self.runner.wait_ready([self.service], timeout=self.startup_timeout)[self.service]
        except ComposeError as exc:
            self.stop()
            raise ProviderError(f"Compose service {self.service!r} did not start: {exc.message}") from None
        except BaseException:
            self.stop()
            raise
        self._url = url
        return url

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self._url = None
        with contextlib.suppress(ComposeError):  # nothing is running (no engine, or it never started)
            self.runner.down(volumes=not self.keep_volumes)


def _default_image(name: str) -> str:
    """The local tag of the image ``name`` runs: the display target's for a server whose container declares it,
    else the slim one (also for a name no installed server has: the container says so when it starts)."""
    try:
        target = load_environment(name).declares.container.target
    except ConfigError:
        target = "slim"
    return "openenv-mcp-desktop:latest" if target == "display" else "openenv-mcp:latest"
