"""A world built on the toolkit's ``openenv_mcp.worlds`` alone, as a package of its own would build one (no shipped
server imported): its ``World`` gives the environment its ``act`` tool, its sim backend and its opening, with the
task's ``init`` parameters, the world prepared first and the valid actions shown or not as its settings say."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_settings import BaseSettings, SettingsConfigDict

from openenv_mcp import ConfigError, Environment, Grade, Observation, TaskSet
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.worlds import WorkerConfig, World, WorldBackend, WorldTask, world_tasks
from tests.support import LiveServer, live_server
from tests.support.worlds import COUNTER_WORKER, act, view


class CounterSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TEST_COUNTER_", extra="ignore")

    start: int = 2
    valid_actions: bool = False

    def config(self) -> WorkerConfig:
        return WorkerConfig(world="counter", command=(sys.executable, "-u", str(COUNTER_WORKER)), pool_size=1)


PREPARED: list[str] = []


async def _prepare(task: WorldTask, settings: CounterSettings) -> None:
    PREPARED.append(task.id)


def _init_params(task: WorldTask, seed: int, settings: CounterSettings) -> Mapping[str, Any]:
    return {**task.params, "start": settings.start}


def _load() -> TaskSet:
    return TaskSet([WorldTask(id="five", split="train", prompt="Bring the counter to 5.", env_id="count-to-5")])


async def _grade(task: WorldTask, world: WorldBackend, call: BoundCall, observation: Observation) -> Grade:
    reply = world.last
    return Grade() if observation.is_error or reply is None else Grade(reward=reply.reward, done=reply.done)


def _counter(missing: list[str]) -> Environment[WorldBackend, WorldTask]:
    world = World(
        name="counter",
        config=CounterSettings.config,
        init_params=_init_params,
        show_valid_actions=lambda settings: settings.valid_actions,
        prepare=_prepare,
    )
    return Environment(
        name=world.name,
        description="A counter to bring to a number.",
        settings=CounterSettings,
        tasks=world_tasks(world.name, _load, lambda: missing),
        tools=world.tools,
        sim_backend=world.sim_backend,
        opening=world.opening,
        prod_sessions=True,
        grade=_grade,
    )


@pytest.fixture(scope="module")
def counter() -> Iterator[LiveServer]:
    with live_server(_counter([]), mode="sim") as server:
        yield server


def test_a_world_of_its_own_starts_with_its_init_parameters_and_plays_to_its_reward(counter: LiveServer) -> None:
    with httpx.Client(base_url=counter.url) as http:
        first = http.post("/reset", json={"task_id": "five"}).json()
        text = first["observation"]["content"][0]["text"]
        assert text.startswith("Bring the counter to 5.") and "The counter shows 2. Bring it to 5." in text
        assert "five" in PREPARED  # made ready before its init
        episode = first["episode_id"]
        step = act(http, episode, "add 1")
        assert view(step) == {"observation": "The counter shows 3.", "valid_actions": None, "info": {"value": 3}}
        last = act(http, episode, "add 2").json()
        assert (last["reward"], last["done"]) == (1.0, True)
        http.delete(f"/episodes/{episode}")


def test_a_world_missing_what_it_needs_says_what_to_install() -> None:
    env = _counter(["the counter package: pip install counter"])
    with pytest.raises(ConfigError, match="counter cannot run here; it needs the counter package: pip install counter"):
        env.tasks()


def test_the_world_docs_worlds_md_shows_authors_builds_as_written() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "worlds.md").read_text(encoding="utf-8")
    section = guide.split("## A world in your own package", 1)[1].split("\n## ", 1)[0]
    [example] = re.findall(r"^```python\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(compile(example, "docs/worlds.md", "exec"), namespace)
    env = namespace["environment"]
    assert isinstance(env, Environment) and env.prod_sessions
    assert env.tools.names == ["act"] and [task.id for task in env.tasks()] == ["count-3"]
