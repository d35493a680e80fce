"""The compose runner: start, stop and watch the stacks in ``compose/`` through subprocess.

    runner = ComposeRunner(compose_file("sim"), project="openenv-sim")
    runner.up()                                  # start every sim server, wait for each /readyz
    runner.down()

It drives Docker Compose v2 (``docker compose``) or, failing that, v1 (``docker-compose``),
and fails with a message saying what to install or start when neither a compose tool nor a
Docker engine is there. ``openenv-mcp compose`` (:mod:`openenv_mcp.cli.compose`) is the same
thing on the command line; :func:`generated_files` is what ``compose generate`` writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from openenv_mcp.deploy.stacks import CONTAINER_PORT, SERVER_LABEL
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.settings import Mode

__all__ = ["ComposeError", "ComposeRunner", "compose_file", "find_compose", "generated_files"]

COMPOSE_DIR = Path(__file__).resolve().parents[2] / "compose"
"""``compose/`` of the checkout this package runs from (absent from an installed wheel)."""

Which = Callable[[str], "str | None"]


class ComposeError(OpenEnvError):
    """A compose tool or the Docker engine is missing, or a compose command failed."""

    code = "compose_error"
    status = 500


def compose_file(mode: Mode) -> Path:
    """The committed compose file of ``mode`` (``compose/docker-compose.<mode>.yml``)."""
    path = COMPOSE_DIR / f"docker-compose.{mode}.yml"
    if not path.is_file():
        raise ComposeError(
            f"No {path}: run from a checkout of openenv-mcp, pass --file, "
            "or write one with 'openenv-mcp compose generate'"
        )
    return path


def find_compose(*, which: Which = shutil.which) -> list[str]:
    """The compose command: ``docker compose`` (v2) if the plugin answers, else ``docker-compose`` (v1)."""
    docker = which("docker")
    if docker is not None:
        try:
            probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            probe = None
        if probe is not None and probe.returncode == 0:
            return [docker, "compose"]
    v1 = which("docker-compose")
    if v1 is not None:
        return [v1]
    found = "the docker client has no 'compose' plugin" if docker else "no 'docker' client"
    raise ComposeError(
        f"No compose tool found ({found}, no 'docker-compose'): install Docker Compose v2 "
        "(the docker-compose-plugin package, or Docker Desktop) or docker-compose v1"
    )


class ComposeRunner:
    """One compose project from one file: the commands ``openenv-mcp compose`` runs, as methods.

    Args:
        file: The compose file.
        project: The compose project name (``-p``); containers, networks and volumes are named after it.
        environment: Variables added to the compose tool's environment (interpolated into the file).
        command: The compose command; found with :func:`find_compose` when first needed.
        quiet: Capture the tool's output (quoted in errors) instead of letting it through.
        which: How to find executables.
    """

    def __init__(
        self,
        file: str | Path,
        *,
        project: str | None = None,
        environment: Mapping[str, str] | None = None,
        command: Sequence[str] | None = None,
        quiet: bool = False,
        which: Which = shutil.which,
    ) -> None:
        self.file = Path(file)
        self.project = project
        self.environment = dict(environment or {})
        self._command = list(command) if command is not None else None
        self.quiet = quiet
        self._which = which
        self._engine_checked = False

    @property
    def command(self) -> list[str]:
        if self._command is None:
            self._command = find_compose(which=self._which)
        return self._command

    def argv(self, *args: str) -> list[str]:
        """The full command line for compose arguments ``args``."""
        project = ["-p", self.project] if self.project else []
        return [*self.command, "-f", str(self.file), *project, *args]

    def _env(self) -> dict[str, str] | None:
        if not self.environment:
            return None  # inherit ours unchanged
        return {**os.environ, **self.environment}

    def run(self, *args: str, capture: bool = False, engine: bool = True) -> subprocess.CompletedProcess[str]:
        """Run one compose command (output streamed unless ``capture``); a failure raises ComposeError."""
        argv = self.argv(*args)
        capture = capture or self.quiet
        if engine:
            self.check_engine()
        try:
            done = subprocess.run(argv, env=self._env(), capture_output=capture, text=True, check=False)
        except OSError as exc:
            raise ComposeError(f"Could not run {argv[0]}: {exc}") from None
        if done.returncode != 0:
            detail = _last_lines(done.stderr) if capture else "see its messages above"
            raise ComposeError(f"'{' '.join(argv)}' failed with exit status {done.returncode}: {detail}")
        return done

    def check_engine(self) -> None:
        """Raise ComposeError, with the client's own message, when no Docker engine answers."""
        if self._engine_checked:
            return
        docker = self._which("docker")
        if docker is None:
            return  # compose v1 without the docker client: it reports a missing engine itself
        try:
            probe = subprocess.run(
                [docker, "info", "--format", "{{.ServerVersion}}"],
                env=self._env(),
                capture_output=True,
                text=True,
                timeout=30,
            )
        except subprocess.TimeoutExpired:
            raise ComposeError("The Docker engine did not answer 'docker info' within 30 s") from None
        if probe.returncode != 0:
            raise ComposeError(
                f"No Docker engine ({_last_lines(probe.stderr or probe.stdout)}): start Docker, or point DOCKER_HOST "
                "at an engine, and retry; 'openenv-mcp compose config' works without one"
            )
        self._engine_checked = True

    def up(
        self, services: Sequence[str] = (), *, build: bool = False, wait: bool = True, timeout: float = 180.0
    ) -> None:
        """Start ``services`` (all by default) in the background; then wait for every server's /readyz."""
        self.run("up", "-d", *(["--build"] if build else []), *services)
        if wait:
            self.wait_ready(services, timeout=timeout)

    def down(self, *, volumes: bool = False) -> None:
        """Stop and remove the project's containers and networks (and named volumes with ``volumes``)."""
        self.run("down", "--remove-orphans", *(["--volumes"] if volumes else []))

    def ps(self) -> None:
        self.run("ps")

    def logs(self, services: Sequence[str] = (), *, follow: bool = True, tail: int | None = None) -> None:
        """Stream the services' logs (until interrupted, with ``follow``)."""
        self.run(
            "logs", *(["--follow"] if follow else []), *(["--tail", str(tail)] if tail is not None else []), *services
        )

    def config(self, *, quiet: bool = False) -> str:
        """The file as compose resolves it (variables substituted); no engine needed."""
        return self.run("config", *(["-q"] if quiet else []), capture=True, engine=False).stdout

    def servers(self) -> list[str]:
        """The services of the file that run an openenv-mcp server (labelled with the server's name)."""
        try:
            doc = yaml.safe_load(self.file.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ComposeError(f"Cannot read the compose file {self.file}: {exc}") from None
        services: dict[str, Any] = doc.get("services") or {}
        return [name for name, spec in services.items() if SERVER_LABEL in ((spec or {}).get("labels") or {})]

    def url(self, service: str, *, port: int = CONTAINER_PORT) -> str:
        """The URL where ``service``'s container port is published on this host (``compose port``)."""
        out = self.run("port", service, str(port), capture=True).stdout.strip().splitlines()
        if not out or ":" not in out[-1]:
            raise ComposeError(f"Service {service!r} publishes no host port for {port}; add one to {self.file}")
        host, _, published = out[-1].rpartition(":")
        if host in ("0.0.0.0", "", "[::]", "::"):
            host = "127.0.0.1"
        return f"http://{host}:{published}"

    def wait_ready(self, services: Sequence[str] = (), *, timeout: float = 180.0) -> dict[str, str]:
        """Wait (at most ``timeout`` s) until each server service answers 200 on /readyz; its URL by name."""
        wanted = [s for s in self.servers() if not services or s in services]
        urls = {service: self.url(service) for service in wanted}
        waiting = dict(urls)
        last: dict[str, str] = {service: "no answer yet" for service in waiting}
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=5.0) as http:
            while waiting:
                for service, url in list(waiting.items()):
                    try:
                        response = http.get(f"{url}/readyz")
                    except httpx.HTTPError as exc:
                        last[service] = f"{type(exc).__name__}: {exc}"
                        continue
                    if response.status_code == 200:
                        del waiting[service]
                    else:
                        last[service] = f"HTTP {response.status_code} {response.text[:200]}"
                if waiting and time.monotonic() > deadline:
                    detail = "; ".join(f"{s} at {waiting[s]}: {last[s]}" for s in waiting)
                    raise ComposeError(
                        f"Not ready after {timeout:.0f} s: {detail}. See 'openenv-mcp compose logs {' '.join(waiting)}'"
                    )
                if waiting:
                    time.sleep(0.5)
        return urls


def _last_lines(text: str | None, count: int = 3) -> str:
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    return " / ".join(lines[-count:]) or "(no message)"


def generated_files(modes: Sequence[Mode] = ("sim", "prod")) -> dict[Path, str]:
    """The generated deployment files (compose stacks, Kubernetes manifests) as they should read today."""
    from openenv_mcp.deploy.kube import build_manifests, dump_manifests
    from openenv_mcp.deploy.stacks import build_stack, dump_stack, shipped_servers

    names = shipped_servers()
    files = {}
    for mode in modes:
        files[COMPOSE_DIR / f"docker-compose.{mode}.yml"] = dump_stack(build_stack(names, mode, build=".."))
        files[COMPOSE_DIR / "k8s" / f"openenv-{mode}.yaml"] = dump_manifests(build_manifests(names, mode))
    return files
