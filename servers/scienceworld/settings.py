"""Settings of the ScienceWorld server (``SCIENCEWORLD_*`` variables)."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from openenv_mcp.worlds import WorkerConfig

__all__ = ["JAVA_OPTIONS", "ScienceWorldSettings"]

WORKER = Path(__file__).resolve().with_name("worker.py")

JAVA_OPTIONS = "-Xmx192m -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=32m"
"""The JVM flags each worker's simulator runs with: a heap of 192 MB is room for any task (the default JVM takes
about 800 MB of RSS; these, about 200: bench/worlds.py); the serial collector and the client compiler suit a
process that serves one world."""


class ScienceWorldSettings(BaseSettings):
    """How the ScienceWorld workers run; every setting has a default."""

    model_config = SettingsConfigDict(env_prefix="SCIENCEWORLD_", extra="ignore")

    pool_size: int = Field(default=2, ge=0, le=256, description="Workers (JVMs) kept started and idle for resets")
    java_options: str = Field(
        default=JAVA_OPTIONS, description="JVM flags of each worker's simulator (JAVA_TOOL_OPTIONS)"
    )
    simplifications: str = Field(
        default="",
        description="ScienceWorld simplifications for every episode, comma-separated (e.g. 'easy' or "
        "'teleportAction,openDoors'); none by default, as the package's benchmarks",
    )
    valid_actions: bool = Field(
        default=True, description="List the valid actions (often several hundred) in every observation"
    )
    init_timeout: float = Field(default=120.0, gt=0, description="Seconds a task's load may take")
    step_timeout: float = Field(default=60.0, gt=0, description="Seconds a step may take")

    def config(self) -> WorkerConfig:
        """The workers' configuration."""
        return WorkerConfig(
            world="scienceworld",
            command=(sys.executable, "-u", str(WORKER)),
            env=(("JAVA_TOOL_OPTIONS", self.java_options),),
            pool_size=self.pool_size,
            init_timeout=self.init_timeout,
            step_timeout=self.step_timeout,
        )
