"""openenv-mcp: MCP tool servers that run the same tools in training (sim) and production (prod).

The layers, each a folder, imports only running down:
    cli/                                          one module per command
    evaluation/ training/ authoring/  >  rollout/ deploy/ registry/  >  doors/ client/  >  trajectories/
    runtime/  (the one path: Runtime.call)  >  rewards/ backends/ worlds/  >  environment/  (the authoring contract)
    errors, models, settings                      the vocabulary
This module re-exports the public names; the rest is reached by its module path.
"""

from typing import TYPE_CHECKING, Any

from openenv_mcp.environment.backend import Backend
from openenv_mcp.environment.spec import Environment, ProdService, Upstream
from openenv_mcp.environment.tasks import Grade, Task, TaskSet
from openenv_mcp.environment.tools import BoundCall, Tool, Toolbox
from openenv_mcp.errors import (
    BackendUnavailable,
    CapacityExceeded,
    ConfigError,
    EnvironmentCrashed,
    EpisodeError,
    EpisodeFinished,
    EpisodeNotFound,
    InvalidToolArguments,
    ModeError,
    OpenEnvError,
    RegistryError,
    ResetNeeded,
    ToolError,
    ToolFailed,
    ToolNotFound,
)
from openenv_mcp.models import Action, EpisodeState, Observation, StepResult, TaskInfo
from openenv_mcp.settings import Settings

if TYPE_CHECKING:
    from openenv_mcp.client import AsyncEnvClient, EnvClient


def __getattr__(name: str) -> Any:
    # The clients (and httpx under them) load on first use: a server never needs them, and importing
    # them cost about a quarter of a second of every server's start-up.
    if name in ("AsyncEnvClient", "EnvClient"):
        from openenv_mcp import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Action",
    "AsyncEnvClient",
    "Backend",
    "BackendUnavailable",
    "BoundCall",
    "CapacityExceeded",
    "ConfigError",
    "EnvClient",
    "Environment",
    "EnvironmentCrashed",
    "EpisodeError",
    "EpisodeFinished",
    "EpisodeNotFound",
    "EpisodeState",
    "Grade",
    "InvalidToolArguments",
    "ModeError",
    "Observation",
    "OpenEnvError",
    "ProdService",
    "RegistryError",
    "ResetNeeded",
    "Settings",
    "StepResult",
    "Task",
    "TaskInfo",
    "TaskSet",
    "Tool",
    "ToolError",
    "ToolFailed",
    "ToolNotFound",
    "Toolbox",
    "Upstream",
]
