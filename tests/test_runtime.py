"""The runtime: observers see every reset, step and close; the default episode; prod has no episodes."""

from __future__ import annotations

from typing import Any

import pytest

from openenv_mcp import ModeError, Settings
from openenv_mcp.app import build_runtime
from servers.sql import environment

pytestmark = pytest.mark.anyio


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    async def start(self) -> None:
        self.events.append(("start",))

    async def stop(self) -> None:
        self.events.append(("stop",))

    def on_reset(self, episode: Any, observation: Any) -> None:
        self.events.append(("reset", episode.task.id, observation.structured_content["task_id"]))

    def on_step(self, episode: Any, call: Any, outcome: Any, seconds: float) -> None:
        assert seconds >= 0
        self.events.append(("step", call.tool.name, outcome.reward, outcome.done, episode.step_count))

    def on_close(self, episode: Any) -> None:
        self.events.append(("close", episode.id))


async def test_observers_see_the_whole_life_of_episodes() -> None:
    runtime = build_runtime(environment, Settings(mode="sim"))
    recorder = Recorder()
    runtime.observe(recorder)
    await runtime.start()
    first = await runtime.reset(task_id="sql-001")
    await runtime.call("list_tables", {}, first.episode_id)
    await runtime.call("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"}, first.episode_id)
    await runtime.close_episode(first.episode_id)
    second = await runtime.reset(seed=3)
    runtime.episodes.get(second.episode_id).last_active_at -= 10_000
    await runtime.episodes.reap()
    await runtime.stop()
    assert recorder.events == [
        ("start",),
        ("reset", "sql-001", "sql-001"),
        ("step", "list_tables", 0.0, False, 1),
        ("step", "submit_answer", 1.0, True, 2),
        ("close", first.episode_id),
        ("reset", second.info["task_id"], second.info["task_id"]),
        ("close", second.episode_id),
        ("stop",),
    ]


async def test_rejected_calls_reach_no_observer() -> None:
    runtime = build_runtime(environment, Settings(mode="sim"))
    recorder = Recorder()
    runtime.observe(recorder)
    await runtime.start()
    episode = (await runtime.reset(seed=1)).episode_id
    with pytest.raises(Exception, match="Invalid arguments"):
        await runtime.call("run_query", {"sql": 1}, episode)
    await runtime.stop()
    assert [e[0] for e in recorder.events] == ["start", "reset", "close", "stop"]


async def test_prod_runtime_refuses_episode_operations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    runtime = build_runtime(environment, Settings(mode="prod"))
    with pytest.raises(ModeError, match="sim mode only"):
        await runtime.reset()
    with pytest.raises(ModeError):
        runtime.task_list()
