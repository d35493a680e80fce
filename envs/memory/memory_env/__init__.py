"""Memory: notes kept in a notebook, as an openenv-mcp environment."""

from __future__ import annotations

from openenv_mcp import Environment, ProdService

from memory_env.backends import open_prod, open_sim
from memory_env.settings import MemorySettings
from memory_env.tasks import grade, load_tasks
from memory_env.tools import tools

__all__ = ["environment"]

environment = Environment(
    name="memory",
    description="Keep a notebook of titled notes: list, read, write and delete them.",
    tools=tools,
    tasks=load_tasks,
    settings=MemorySettings,
    sim_backend=open_sim,
    prod_backend=open_prod,
    grade=grade,
    prod_requires=("database",),
    sim_summary="A seeded in-memory notebook per episode (the task's notes plus distractors drawn from the seed).",
    prod_services=(
        ProdService(
            name="sqlite",
            title="SQLite",
            role="stores the notes in a database file",
            settings=("database",),
            tested="the tests run every tool on a real SQLite file",
        ),
    ),
    examples=(("list_notes", {}), ("read_note", {"title": "welcome"})),
    max_steps=15,
)
