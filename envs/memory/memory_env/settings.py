"""Settings of memory (``MEMORY_*`` variables)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["MemorySettings"]


class MemorySettings(BaseSettings):
    """``MEMORY_DATABASE`` is required in prod."""

    model_config = SettingsConfigDict(env_prefix="MEMORY_", extra="ignore")

    database: str | None = Field(default=None, description="Path of the SQLite file that holds the notes in prod")
    distractors: int = Field(default=3, ge=0, le=50, description="Extra notes a sim episode starts with")
