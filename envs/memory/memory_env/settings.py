"""Settings of the memory environment (``MEMORY_*`` variables)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["MemorySettings"]


class MemorySettings(BaseSettings):
    """Prod runs the upstream memory server over stdio (``MEMORY_UPSTREAM_COMMAND``) or reaches it over HTTP."""

    model_config = SettingsConfigDict(env_prefix="MEMORY_", extra="ignore")

    upstream_command: str = Field(
        default="mcp-server-memory",
        description="Command that starts the upstream MCP memory server over stdio (split like a shell would)",
    )
    upstream_url: str | None = Field(
        default=None, description="Streamable HTTP URL of a running upstream memory server (instead of the command)"
    )
    upstream_headers: SecretStr | None = Field(
        default=None, description='JSON object of HTTP headers for the upstream, e.g. {"Authorization": "Bearer ..."}'
    )
    file_path: str = Field(
        default="memory.jsonl",
        description="The JSON-lines file the upstream keeps its graph in, relative to the working directory",
    )
    timeout: float = Field(default=30.0, gt=0, description="Seconds an upstream request may take before a 503")
    distractors: int = Field(default=4, ge=0, le=20, description="Unrelated entities a sim episode's graph starts with")
