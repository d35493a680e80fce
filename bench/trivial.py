"""Ours with a trivial tool: an openenv-mcp environment whose one tool returns a constant list.

It does the same work as the baselines' endpoint (bare FastAPI ``POST /step``, the bare SDK's ``list_tables``
tool, the OpenEnv environment in ``baseline_openenv.py``), so its figures measure the toolkit alone: the control
plane, the one validation and dispatch, the episode table, metrics and grading.

``python -m bench.trivial serve trivial --port P [--transport stdio]`` runs the real ``openenv-mcp serve`` code path
(``openenv_mcp.cli.main``) with this environment put in the catalog, so start-up, uvicorn settings and the stdio
door are exactly those of a shipped server.
"""

from __future__ import annotations

import sys

from openenv_mcp import Environment, Grade, Task, TaskSet, Toolbox
from openenv_mcp.environment.tools import BoundCall

# The SQL fixture's tables: the baselines return the same list (bench/servers.py passes it on their command line).
TABLES = ["categories", "customers", "employees", "order_items", "orders", "products", "regions", "suppliers"]


class TrivialBackend:
    """Nothing to open or close: the cheapest possible per-episode backend."""

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def _open(task: Task, seed: int, settings: object) -> TrivialBackend:
    return TrivialBackend()


async def _open_prod(settings: object) -> TrivialBackend:
    return TrivialBackend()


tools: Toolbox[TrivialBackend] = Toolbox("trivial")


@tools.tool(read_only=True, idempotent=True)
async def list_tables(backend: TrivialBackend) -> list[str]:
    """List the tables of the database."""
    return TABLES


def _tasks() -> TaskSet:
    return TaskSet([Task(id="t0", split="train", prompt="Call list_tables.")])


async def _grade(task: Task, backend: TrivialBackend, call: BoundCall, observation: object) -> Grade:
    return Grade()


def _settings() -> type:
    from pydantic_settings import BaseSettings

    class TrivialSettings(BaseSettings):
        pass

    return TrivialSettings


environment: Environment[TrivialBackend, Task] = Environment(
    name="trivial",
    description="A benchmark environment: one tool that returns a constant list.",
    tools=tools,
    tasks=_tasks,
    settings=_settings(),
    sim_backend=_open,
    prod_backend=_open_prod,
    grade=_grade,
    examples=(("list_tables", {}),),
    max_steps=20,
)


def main(argv: list[str] | None = None) -> int:
    import openenv_mcp.environment.catalog as catalog
    from openenv_mcp import cli

    shipped = catalog.load_environment

    def load_environment(name: str) -> Environment[object, Task]:
        return environment if name == "trivial" else shipped(name)  # type: ignore[return-value]

    catalog.load_environment = load_environment  # serve (doors.serving) imports it from the module at call time
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
