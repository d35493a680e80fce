"""Settings of the worker server (``WORKER_*`` variables)."""

from __future__ import annotations

import shlex
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from openenv_mcp.worlds import WorkerConfig

__all__ = ["WorkerSettings"]


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
