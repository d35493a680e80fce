"""Settings of the coding server (``CODING_*`` variables)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["CodingSettings"]


class CodingSettings(BaseSettings):
    """Sandbox limits and isolation for both modes; ``CODING_WORKSPACE`` is required in prod."""

    model_config = SettingsConfigDict(env_prefix="CODING_", extra="ignore")

    workspace: Path | None = Field(
        default=None,
        description="Prod: the persistent working directory code runs in, owned by a dedicated unprivileged "
        "account that the code runs as (e.g. /srv/agent-workspace owned by 'sandbox', mode 0700)",
    )
    tests_file: Path | None = Field(
        default=None,
        description="Prod: a JSON file of acceptance tests that submit_solution runs (hidden from the sandbox)",
    )
    scratch: Path | None = Field(
        default=None,
        description="Where episode and test directories are made (default: a fresh directory in the system temp dir)",
    )
    python: Path | None = Field(
        default=None,
        description="The interpreter code runs with; it must be executable by an unprivileged user "
        "(default: this server's interpreter if it is, else python3 from /usr/local/bin, /usr/bin or /bin)",
    )
    max_timeout_s: float = Field(default=10.0, gt=0, le=60, description="Upper bound on run_python's timeout_s")
    memory_mb: int = Field(default=512, ge=64, description="Address-space limit of each sandboxed process (MiB)")
    max_processes: int = Field(default=64, ge=4, description="Processes and threads the sandbox user may have")
    max_open_files: int = Field(default=256, ge=16, description="Open files per sandboxed process")
    max_file_mb: int = Field(default=16, ge=1, description="Largest file a sandboxed process may write (MiB)")
    max_output_bytes: int = Field(default=65_536, ge=1_024, description="Stdout and stderr kept per run, each")
    max_concurrent_runs: int = Field(default=8, ge=1, description="Sandboxed runs at once in this process")
    max_runs_per_episode: int = Field(
        default=1, ge=1, description="Sandboxed runs at once per episode (prod: per workspace): none holds every slot"
    )
    workspace_mb: int = Field(
        default=64,
        ge=1,
        description="Size of each episode's working directory, a tmpfs (sim; prod's CODING_WORKSPACE is the "
        "operator's), and of each hidden test's; its files count in the episode's memory bound",
    )
    niceness: int = Field(default=5, ge=0, le=19, description="Scheduling niceness of sandboxed processes")
    require_network_isolation: bool = Field(
        default=True,
        description="Refuse to run code unless each run gets its own network namespace (needs root on Linux)",
    )
    require_user_isolation: bool = Field(
        default=True,
        description="Refuse to run code unless it runs as a per-episode unprivileged uid (needs root)",
    )
    uid_base: int = Field(default=0x7000_0000, ge=1_000, description="First uid/gid of the per-episode range")
    uid_count: int = Field(default=65_536, ge=1, description="How many uids the per-episode range holds")
    uid_lock: Path = Field(
        default=Path("/run/openenv-coding/uids.lock"),
        description="Lock file that keeps servers on one host from handing out the same uid",
    )
    hidden_paths: list[Path] = Field(
        default_factory=list, description="More paths to hide from the sandbox (the task data is always hidden)"
    )
