"""An environment as its author declares it: tools, tasks, backends per mode, and grading."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic_settings import BaseSettings

from openenv_mcp.environment.backend import Backend
from openenv_mcp.environment.declarations import Declarations
from openenv_mcp.environment.tasks import Grade, Task, TaskSet
from openenv_mcp.environment.tools import BoundCall, Toolbox
from openenv_mcp.models import Observation

__all__ = ["Environment", "ProdService", "Upstream", "Variable"]

BackendT = TypeVar("BackendT", bound=Backend)
TaskT = TypeVar("TaskT", bound=Task)


@dataclass(frozen=True, kw_only=True)
class Upstream:
    """An existing MCP server a prod backend forwards to (see :mod:`openenv_mcp.backends.upstream`).

    Attributes:
        package: Its package, e.g. ``"@modelcontextprotocol/server-memory"``.
        registry: Where the package comes from: ``"npm"`` or ``"pypi"``.
        version: The version the tool table was checked against.
        command: How to start it over stdio, e.g. ``("mcp-server-memory",)``; empty for HTTP only.
        transport: ``"stdio"`` or ``"streamable-http"``.
    """

    package: str
    registry: str
    version: str
    command: tuple[str, ...] = ()
    transport: str = "stdio"

    @property
    def install(self) -> str:
        """The command that installs it."""
        if self.registry == "npm":
            return f"npm install -g {self.package}@{self.version}"
        return f"pip install {self.package}=={self.version}"


@dataclass(frozen=True, kw_only=True)
class ProdService:
    """A production service behind some (or all) of a server's tools, for the registry and compose.

    Attributes:
        name: A short slug, e.g. ``"postgresql"``, ``"smtp"``.
        title: What people call it, e.g. ``"PostgreSQL"``.
        role: What it does for this server, in a few words.
        settings: Fields of the server's settings class this service reads (their variables,
            descriptions and secrecy come from that class).
        tools: The tools it serves; empty means every tool.
        shipped: Whether this project ships (and tests) a backend for it.
        tested: How far it is tested, in one sentence.
        image: A container image that runs it, for compose files (``None``: bring your own).
        upstream: The existing MCP server it is, when the prod backend forwards to one.
    """

    name: str
    title: str
    role: str
    settings: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    shipped: bool = True
    tested: str = ""
    image: str | None = None
    upstream: Upstream | None = None


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable a prod server reads."""

    name: str
    description: str
    secret: bool
    required: bool
    default: str | None


@dataclass(frozen=True, kw_only=True)
class Environment(Generic[BackendT, TaskT]):
    """Everything that makes one server, bound to a mode only when the server is assembled.

    Attributes:
        name: The server's name (``openenv-mcp serve NAME``).
        description: One paragraph for agents and for ``openenv-mcp list``.
        tools: The tool table; the same in both modes.
        tasks: Loads the tasks (called once, when the server is assembled).
        settings: The server's own settings class (connection URLs, secrets), read once at start.
        sim_backend: Opens a fresh, isolated sim backend for one episode from its task and seed.
        prod_backend: Opens the one shared prod backend from the settings (``None`` with ``prod_sessions``).
        grade: Computes a step's reward and whether the episode is done, from the task, the
            episode's backend, the call and its result. The one place rewards are computed.
        prod_requires: Settings fields that must be set in prod (checked before serving starts).
        sim_summary: What the sim backend is, in one sentence (for the registry).
        prod_services: The production services behind the tools (for the registry and compose).
        examples: A few valid tool calls ``(tool, arguments)`` that work on any task; the
            conformance check replays them for determinism and the benchmark times them.
        solve: A reference solution: the tool calls ``(tool, arguments)`` that solve a task, which
            ``--policy scripted`` plays (so ``rollout`` and ``eval`` show an environment's ceiling);
            ``None`` when the environment has none to ship.
        max_steps: Steps after which an episode is done whatever the grade says.
        sim_fork: Optional fast path for forks: a copy of an episode's sim backend in the same state (grading
            state included), independent from then on; called with the episode's lock held. Without it a fork
            replays the episode's actions on a fresh backend, which every environment supports.
        version: The server's version, as MCP ``serverInfo`` reports it.
        opening: What an episode's backend shows at its start, after the task's prompt, in the episode's first
            observation (a text game's first room): takes what ``sim_backend`` made; ``None`` shows the prompt only.
        prod_sessions: In prod, give each MCP session an instance of its own, made by ``sim_backend`` (for the task
            ``OPENENV_PROD_TASK`` names, else one drawn from the default split) and closed with the session, instead
            of one shared ``prod_backend``: for a world (a simulator, a text game), which has no real service
            behind it. Prod still shows no reward and serves no control plane; such an environment has no prod
            services to deploy or map, so compose, Kubernetes and the registry leave it out (docs/worlds.md).
        requires: What is missing for the environment to serve (an optional package, a runtime), as hints that
            say how to install each; ``openenv-mcp list`` shows them. ``None``: nothing beyond the toolkit.
        declares: What the toolkit needs to know beyond the tools, declared here and nowhere else: how parity
            compares sim and prod and stages prod, how a recorded prod session is mined into a task (or why it
            cannot be), what its container and a cluster manifest need (:mod:`~openenv_mcp.environment.declarations`;
            the defaults fit an environment with no needs of its own).
    """

    name: str
    description: str
    tools: Toolbox[BackendT]
    tasks: Callable[[], TaskSet]
    settings: type[BaseSettings]
    sim_backend: Callable[[TaskT, int, Any], Awaitable[BackendT]]
    prod_backend: Callable[[Any], Awaitable[BackendT]] | None = None
    grade: Callable[[TaskT, BackendT, BoundCall, Observation], Awaitable[Grade]]
    prod_requires: tuple[str, ...] = ()
    sim_summary: str = ""
    prod_services: tuple[ProdService, ...] = ()
    examples: tuple[tuple[str, dict[str, Any]], ...] = ()
    solve: Callable[[TaskT], Sequence[tuple[str, dict[str, Any]]]] | None = None
    max_steps: int = 20
    version: str = "0.1.0"
    # these two take what sim_backend made, typed as its own class (a SqliteBackend, not the SqlBackend protocol):
    # a parameter typed BackendT would refuse them, and a third type parameter would burden every annotation
    sim_fork: Callable[[Any], Awaitable[BackendT]] | None = None
    opening: Callable[[Any], Observation | None] | None = None
    prod_sessions: bool = False
    requires: Callable[[], list[str]] | None = None
    declares: Declarations = dataclasses.field(default_factory=Declarations)

    def __post_init__(self) -> None:
        if self.prod_backend is None and not self.prod_sessions:
            raise TypeError(
                f"Environment {self.name!r} needs a prod_backend, or prod_sessions=True to serve each prod session "
                "an instance of its sim backend (a world with no real service)"
            )

    def missing(self) -> list[str]:
        """Hints for what this environment needs and does not find here (empty when it can serve)."""
        return self.requires() if self.requires is not None else []

    def variables(self, fields: tuple[str, ...] | None = None) -> list[Variable]:
        """The environment variables behind ``fields`` of the settings class (all fields by default)."""
        prefix = str(self.settings.model_config.get("env_prefix", ""))
        chosen = fields if fields is not None else tuple(self.settings.model_fields)
        found = []
        for field in chosen:
            info = self.settings.model_fields.get(field)
            if info is None:
                raise TypeError(f"{self.name}: {self.settings.__name__} has no setting {field!r}")
            default = None if info.default is None or info.is_required() else str(info.default)
            found.append(
                Variable(
                    name=f"{prefix}{field}".upper(),
                    description=info.description or "",
                    secret="SecretStr" in repr(info.annotation),
                    required=info.is_required() or field in self.prod_requires,
                    default=default,
                )
            )
        return found
