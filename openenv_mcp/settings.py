"""Settings of the toolkit, read from the environment once, at the composition root.

Nothing else in the package reads ``os.environ``. Environment servers declare their own
prod settings class (see :func:`load_settings`) for connection URLs and secrets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from openenv_mcp.errors import ConfigError

__all__ = ["Mode", "Settings", "load_settings"]

Mode = Literal["sim", "prod"]
SettingsT = TypeVar("SettingsT", bound=BaseSettings)


class Settings(BaseSettings):
    """Toolkit settings. ``MODE`` picks sim or prod; the rest are ``OPENENV_*`` variables."""

    model_config = SettingsConfigDict(env_prefix="OPENENV_", extra="ignore", populate_by_name=True)

    mode: Mode = Field(default="sim", validation_alias=AliasChoices("MODE", "OPENENV_MODE"))
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    max_episodes: int = Field(default=1024, ge=1, description="Open sim episodes before /reset answers 503")
    idle_timeout: float = Field(
        default=900.0, gt=0, description="Seconds before an idle sim episode (or stateful MCP session) is closed"
    )
    max_mcp_sessions: int = Field(
        default=1024, ge=1, description="Open stateful MCP sessions (2025-era protocol) before a new one gets 503"
    )
    mcp_reward_meta: bool = Field(
        default=False,
        description=(
            "Also put each MCP call's reward, done flag and reward parts in the result's _meta, which some agent "
            "frameworks show the model; off: the trainer reads them from GET /state and the trajectories"
        ),
    )
    reap_interval: float = Field(default=30.0, gt=0, description="Seconds between idle-episode sweeps")
    ors_keepalive: float = Field(default=10.0, gt=0, description="Seconds between keep-alives on an ORS /call stream")
    ors_result_ttl: float = Field(
        default=60.0, gt=0, description="Seconds an ORS call's result is kept for a reconnect by task_id"
    )
    max_steps: int | None = Field(default=None, ge=1, description="Override every environment's step limit")
    max_body_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="Largest request body the control plane reads (413 above)"
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description=(
            "Host names the server answers to besides localhost, IP addresses and its own hostname "
            "(JSON list: 'env.example.com', 'name:8443', 'name:*', '*.example.com', or '*' to accept any)"
        ),
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description=(
            "Browser origins accepted besides the server's own, loopback ones and those of allowed hosts "
            "(JSON list: 'https://app.example.com', 'http://tool.local:*', or '*' to accept any)"
        ),
    )
    auth_token: SecretStr | None = Field(
        default=None,
        description="Bearer token every HTTP request must carry (all routes but /healthz and /readyz); unset: none",
    )
    auth_token_file: Path | None = Field(
        default=None,
        description="File of accepted bearer tokens, one per line, re-read when it changes (for rotation)",
    )
    snapshot_key: SecretStr | None = Field(
        default=None,
        description="Key that signs episode snapshots (HMAC-SHA256); replicas that restore each other's share it",
    )
    prod_task: str | None = Field(
        default=None,
        description="Prod, for a world (an environment with prod sessions): the task each MCP session's world starts "
        "on; unset: one drawn from the default split per session",
    )
    record_sessions: Path | None = Field(
        default=None,
        description="Prod: record every MCP tool call and its result, by session, as JSON lines in this file "
        "(off when unset; the redaction hook runs first); 'openenv-mcp tasks mine FILE' turns them into sim tasks",
    )
    record_max_bytes: int = Field(
        default=100_000_000, ge=1, description="The session recording's size cap: past it, calls are not recorded"
    )
    record_redact: str | None = Field(
        default=None,
        description="Redaction hook for session recording, module:function; it takes each call's record (a dict) "
        "and returns it redacted, or None to leave the call out, before anything is written",
    )
    extra_tasks: Path | None = Field(
        default=None,
        description="Sim: a JSON-lines file of more tasks for this environment (e.g. from 'openenv-mcp tasks mine')",
    )
    curriculum: bool = Field(
        default=False, description="Draw the task of a reset without task_id from the adaptive curriculum"
    )
    curriculum_band: tuple[float, float] = Field(
        default=(0.2, 0.8), description="Target success rate per task, low and high (JSON list)"
    )
    curriculum_window: int = Field(default=20, ge=1, description="Recent episodes per task the success rate uses")
    curriculum_min_attempts: int = Field(default=3, ge=1, description="Episodes of a task before its rate counts")
    curriculum_success: float = Field(
        default=1.0, description="Total reward at or above which a finished episode is a success"
    )
    curriculum_outside_weight: float = Field(
        default=0.1, ge=0, description="Sampling weight of a task outside the band (one inside weighs 1)"
    )
    curriculum_seed: int = Field(default=0, description="Seed of the curriculum's draws (reproducible runs)")
    trajectories: str | None = Field(
        default=None,
        description=(
            "Where sim servers record every step: a SQLAlchemy URL (sqlite:///FILE, postgresql://...) or off; "
            "unset: trajectories.db in the user's data directory ($XDG_DATA_HOME/openenv-mcp)"
        ),
    )
    data_home: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("XDG_DATA_HOME", "OPENENV_DATA_HOME"),
        description="The user's data directory (XDG); unset: ~/.local/share",
    )
    cache_home: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("OPENENV_CACHE_HOME", "XDG_CACHE_HOME"),
        description="The user's cache directory (XDG), where generated task tables and games are kept; unset: ~/.cache",
    )
    trajectories_queue: int = Field(
        default=200_000,
        ge=1,
        description="Steps journaled for the trajectory writer and not yet written; beyond it steps wait for room",
    )
    trajectories_wait: float = Field(
        default=30.0,
        ge=0,
        description="Seconds a step waits for room in a full trajectory queue, then is dropped and counted (0: never)",
    )
    openai_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("OPENAI_BASE_URL", "OPENENV_OPENAI_BASE_URL"),
        description="OpenAI-compatible chat endpoint for 'openenv-mcp rollout --policy openai' (up to /v1)",
    )
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("OPENAI_API_KEY", "OPENENV_OPENAI_API_KEY"),
        description="API key for that endpoint",
    )

    @property
    def data_dir(self) -> Path:
        """Where openenv-mcp keeps the user's data: ``$XDG_DATA_HOME/openenv-mcp``."""
        return (self.data_home or Path.home() / ".local" / "share") / "openenv-mcp"

    @property
    def cache_dir(self) -> Path:
        """Where openenv-mcp keeps what it generates once and reuses: ``$XDG_CACHE_HOME/openenv-mcp``."""
        return (self.cache_home or Path.home() / ".cache") / "openenv-mcp"

    @property
    def trajectories_url(self) -> str:
        """The store sim servers record into: ``trajectories`` when set, else a file in :attr:`data_dir`."""
        if self.trajectories is not None and self.trajectories.strip():
            return self.trajectories.strip()
        return f"sqlite:///{self.data_dir / 'trajectories.db'}"


def load_settings(cls: type[SettingsT], *, required: tuple[str, ...] = (), **overrides: Any) -> SettingsT:
    """Build a settings class from the environment; a missing or bad value names the variable to set.

    ``required`` names fields that may default to ``None`` in general but must be set here
    (prod connection URLs, say). ``overrides`` (command-line flags) win over the environment.
    """
    prefix = str(cls.model_config.get("env_prefix", ""))
    try:
        settings = cls(**overrides)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "?"
            variable = f"{prefix}{field}".upper()
            hint = _hint(cls, field)
            if error["type"] == "missing":
                problems.append(f"set {variable}{hint}")
            else:
                problems.append(f"{variable} is invalid: {error['msg']}{hint}")
        raise ConfigError(f"{cls.__name__}: " + "; ".join(problems)) from None
    missing = [name for name in required if _blank(getattr(settings, name))]
    if missing:
        problems = [f"set {(prefix + name).upper()}{_hint(cls, name)}" for name in missing]
        raise ConfigError(f"{cls.__name__}: " + "; ".join(problems))
    return settings


def _blank(value: Any) -> bool:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return value is None or (isinstance(value, str) and not value.strip())


def _hint(cls: type[BaseSettings], field: str) -> str:
    info = cls.model_fields.get(field)
    return f" ({info.description})" if info is not None and info.description else ""
