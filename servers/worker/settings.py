"""Settings of the worker server (``WORKER_*`` variables), and what every world's workers are run with."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["WorkerConfig", "WorkerSettings"]


@dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    """How a world's workers are started and spoken to; built once from a server's settings.

    Attributes:
        world: The world's name, for messages and logs (``"worker"``, ``"scienceworld"``).
        command: The worker's command line.
        image: Run ``command`` in a container of this image, one per worker (``None``: a local process).
        engine: The container command line client (``podman``, ``docker``).
        run_options: More options for ``ENGINE run`` (``--memory=1g``, ``--network=none``).
        volumes: ``-v`` mounts for the container (``host:container[:mode]``).
        env: Variables added to the worker's environment (the container's with ``-e``).
        pool_size: Workers kept started and idle, ready for the next reset.
        reuse: Whether a worker whose episode ended takes the next episode (sent ``init`` again).
        warm: Whether a new worker is sent ``init`` of ``warm_task`` before it joins the pool, so a world that
            loads on its first ``init`` (a JVM, game files) is loaded before a reset needs it.
        init_timeout: Seconds an ``init`` may take (a fresh world's first load included).
        step_timeout: Seconds a ``step`` may take before the worker counts as hung and is killed.
        stderr_lines: Lines of the worker's stderr kept for the log when it fails.
        max_line_bytes: The longest answer line read from a worker.
    """

    world: str
    command: tuple[str, ...]
    image: str | None = None
    engine: str = "podman"
    run_options: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    pool_size: int = 2
    reuse: bool = True
    warm: bool = True
    init_timeout: float = 120.0
    step_timeout: float = 60.0
    stderr_lines: int = 40
    max_line_bytes: int = 16 * 1024 * 1024


class WorkerSettings(BaseSettings):
    """``WORKER_COMMAND`` and ``WORKER_TASKS`` say which world to serve; the rest tune how its workers run."""

    model_config = SettingsConfigDict(env_prefix="WORKER_", extra="ignore")

    command: str = Field(
        default="",
        description="The worker's command line, split as a shell would (e.g. 'python -u my_worker.py'); "
        "it speaks DockerGym's JSON-lines protocol on stdin/stdout",
    )
    tasks: Path | None = Field(
        default=None,
        description="A JSON file of tasks: a list of {id, split, env_id, params?, prompt?, difficulty?, solution?}",
    )
    image: str | None = Field(
        default=None, description="Run the command in a container of this image, one container per worker"
    )
    engine: str = Field(default="podman", description="The container client WORKER_IMAGE runs with (podman, docker)")
    run_options: str = Field(
        default="", description="More options for 'ENGINE run', split as a shell would (e.g. '--memory=1g')"
    )
    volumes: list[str] = Field(
        default_factory=list, description="Container mounts as a JSON list of 'host:container[:mode]'"
    )
    env: dict[str, str] = Field(default_factory=dict, description="Variables for the worker, as a JSON object")
    pool_size: int = Field(default=2, ge=0, le=256, description="Workers kept started and idle for the next resets")
    reuse: bool | None = Field(
        default=None,
        description="Whether a worker takes another episode after its own (sent init again); "
        "default: yes for processes, no for containers (a fresh container per episode)",
    )
    warm: bool = Field(
        default=True, description="Send a new worker init of the first task before it joins the pool (loads the world)"
    )
    init_timeout: float = Field(default=120.0, gt=0, description="Seconds an init may take")
    step_timeout: float = Field(default=60.0, gt=0, description="Seconds a step may take before the worker is killed")
    seed_param: str | None = Field(
        default=None, description="The init key that carries the episode's seed, for worlds that take one"
    )

    @field_validator("command", "run_options")
    @classmethod
    def _splits(cls, value: str) -> str:
        try:
            shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"cannot be split as a shell would: {exc}") from None
        return value

    def config(self, *, world: str = "worker") -> WorkerConfig:
        """The workers' configuration these settings describe."""
        return WorkerConfig(
            world=world,
            command=tuple(shlex.split(self.command)),
            image=self.image or None,
            engine=self.engine,
            run_options=tuple(shlex.split(self.run_options)),
            volumes=tuple(self.volumes),
            env=tuple(sorted(self.env.items())),
            pool_size=self.pool_size,
            reuse=self.reuse if self.reuse is not None else not self.image,
            warm=self.warm,
            init_timeout=self.init_timeout,
            step_timeout=self.step_timeout,
        )
