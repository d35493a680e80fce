"""Settings of the TextWorld server (``TEXTWORLD_*`` variables)."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from openenv_mcp.environment.cache import cache_dir
from openenv_mcp.worlds import WorkerConfig

__all__ = ["TextWorldSettings"]

WORKER = Path(__file__).resolve().with_name("worker.py")


class TextWorldSettings(BaseSettings):
    """Where generated games are kept and how the TextWorld workers run; every setting has a default."""

    model_config = SettingsConfigDict(env_prefix="TEXTWORLD_", extra="ignore", populate_by_name=True)

    games_dir: Path | None = Field(
        default=None,
        description="Where games are generated on first use and kept (default: textworld/ in the user's cache "
        "directory, $XDG_CACHE_HOME/openenv-mcp, else ~/.cache/openenv-mcp)",
    )
    train_games: int = Field(default=1_050, ge=3, description="Train games (a third per difficulty)")
    test_games: int = Field(default=210, ge=3, description="Test games (a third per difficulty)")
    pool_size: int = Field(default=2, ge=0, le=256, description="Workers kept started and idle for resets")
    valid_actions: bool = Field(default=True, description="List the admissible commands in every observation")
    make_timeout: float = Field(default=300.0, gt=0, description="Seconds tw-make may take for one game")
    init_timeout: float = Field(default=60.0, gt=0, description="Seconds a game's start may take")
    step_timeout: float = Field(default=30.0, gt=0, description="Seconds a step may take")

    @property
    def games(self) -> Path:
        """The folder of generated games."""
        if self.games_dir is not None:
            return self.games_dir
        return cache_dir() / "textworld"

    def config(self) -> WorkerConfig:
        """The workers' configuration."""
        return WorkerConfig(
            world="textworld",
            command=(sys.executable, "-u", str(WORKER)),
            pool_size=self.pool_size,
            warm=False,  # a game loads in a few tens of milliseconds: nothing to warm
            init_timeout=self.init_timeout,
            step_timeout=self.step_timeout,
        )
