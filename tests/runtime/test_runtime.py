"""The runtime: observers see every reset, step and close; the default episode; prod has no episodes."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

import pytest
from pydantic_settings import BaseSettings

from openenv_mcp import (
    Environment,
    EnvironmentCrashed,
    EpisodeNotFound,
    Grade,
    ModeError,
    Settings,
    Task,
    TaskSet,
    Toolbox,
)
from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.sql import environment

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
    async with runtime.run():
        first = await runtime.reset(task_id="sql-001")
        await runtime.call("list_tables", {}, first.episode_id)
        await runtime.call("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"}, first.episode_id)
        await runtime.close_episode(first.episode_id)
        second = await runtime.reset(seed=3)
        runtime.episodes.get(second.episode_id).last_active_at -= 10_000
        await runtime.episodes.reap()
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
    async with runtime.run():
        episode = (await runtime.reset(seed=1)).episode_id
        with pytest.raises(Exception, match="Invalid arguments"):
            await runtime.call("run_query", {"sql": 1}, episode)
    assert [e[0] for e in recorder.events] == ["start", "reset", "close", "stop"]


async def test_prod_runtime_refuses_episode_operations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    runtime = build_runtime(environment, Settings(mode="prod"))
    with pytest.raises(ModeError, match="sim mode only"):
        await runtime.reset()
    with pytest.raises(ModeError):
        runtime.task_list()


class Gate:
    """A backend whose tools wait for the test to open a gate, or raise a bug."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.closed = False

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        self.closed = True


gated: Toolbox[Gate] = Toolbox("gated")


@gated.tool
async def wait(gate: Gate) -> str:
    """Wait for the gate."""
    gate.entered.set()
    await gate.release.wait()
    assert not gate.closed, "the backend was closed under a running step"
    return "done"


@gated.tool
async def crash(gate: Gate) -> str:
    """Fail like a bug."""
    raise RuntimeError("a bug, not a ToolFailed")


class _NoSettings(BaseSettings):
    pass


async def _open_gate(task: Task, seed: int, settings: object) -> Gate:
    return Gate()


async def _no_grade(task: Task, gate: Gate, call: object, observation: object) -> Grade:
    return Grade()


async def _no_prod(settings: object) -> Gate:
    return Gate()


GATED = Environment(
    name="gated",
    description="test",
    tools=gated,
    tasks=lambda: TaskSet([Task(id="t", split="train", prompt="p")]),
    settings=_NoSettings,
    sim_backend=_open_gate,
    prod_backend=_no_prod,
    grade=_no_grade,
)


async def test_close_waits_for_the_steps_before_it_and_later_calls_find_it_closed() -> None:
    runtime = build_runtime(GATED, Settings(mode="sim"))
    async with runtime.run():
        episode_id = (await runtime.reset()).episode_id
        gate: Gate = runtime.episodes.get(episode_id).backend
        running = asyncio.create_task(runtime.call("wait", {}, episode_id))
        await asyncio.wait_for(gate.entered.wait(), 5)
        queued = asyncio.create_task(runtime.call("wait", {}, episode_id))
        closing = asyncio.create_task(runtime.close_episode(episode_id))
        await asyncio.sleep(0)
        assert not closing.done() and not gate.closed
        gate.release.set()
        assert (await asyncio.wait_for(running, 5)).observation.structured_content == {"result": "done"}
        # the lock is first come, first served: a step queued before the close still runs, on an open backend
        assert (await asyncio.wait_for(queued, 5)).observation.structured_content == {"result": "done"}
        await asyncio.wait_for(closing, 5)
        assert gate.closed
        with pytest.raises(EpisodeNotFound):
            await runtime.call("wait", {}, episode_id)


async def test_a_crashing_tool_is_counted_as_crashed_not_ok() -> None:
    runtime = build_runtime(GATED, Settings(mode="sim"))
    async with runtime.run():
        episode_id = (await runtime.reset()).episode_id
        with pytest.raises(EnvironmentCrashed, match="Tool 'crash' crashed inside the server") as raised:
            await runtime.call("crash", {}, episode_id)
        assert isinstance(raised.value.__cause__, RuntimeError) and "a bug" in str(raised.value.__cause__)
    text = runtime.metrics.render().decode()
    assert 'openenv_tool_calls_total{outcome="crashed",tool="crash"} 1.0' in text
    assert 'outcome="ok",tool="crash"' not in text


async def test_step_info_says_whether_the_limit_or_the_task_ended_the_episode() -> None:
    runtime = build_runtime(environment, Settings(mode="sim", max_steps=2))
    async with runtime.run():
        by_limit = (await runtime.reset(seed=1)).episode_id
        first = await runtime.call("list_tables", {}, by_limit)
        last = await runtime.call("list_tables", {}, by_limit)
        by_task = (await runtime.reset(task_id="sql-001")).episode_id
        await runtime.call("list_tables", {}, by_task)
        solved = await runtime.call("submit_answer", {"rows": [[60]]}, by_task)
    assert (first.done, first.truncated, first.as_step().info["truncated"]) == (False, False, False)
    assert (last.done, last.truncated, last.as_step().info["truncated"]) == (True, True, True)
    assert (solved.done, solved.truncated, solved.reward) == (True, False, 1.0)


async def test_the_default_episode_is_announced_to_observers_and_keeps_raw_arguments() -> None:
    runtime = build_runtime(environment, Settings(mode="sim"))
    recorder = Recorder()
    seen: list[Any] = []
    recorder.on_step = lambda episode, call, outcome, seconds: seen.append(dict(call.arguments))  # type: ignore[method-assign]
    runtime.observe(recorder)
    async with runtime.run():
        await runtime.call("run_query", {"sql": "SELECT 1"}, None)
    first_default = runtime.tasks.pick(task_id=None, split=None, seed=0).id
    assert [e for e in recorder.events if e[0] == "reset"] == [("reset", first_default, first_default)]
    assert seen == [{"sql": "SELECT 1"}]


async def test_a_served_runtime_collects_young_objects_less_often_and_gives_the_setting_back() -> None:
    import gc

    before = gc.get_threshold()
    runtime = build_runtime(environment, Settings(mode="sim"))
    async with runtime.run():
        serving = gc.get_threshold()
    assert serving == (7_000, *before[1:])  # a batch's live objects are not re-scanned several times per batch
    assert gc.get_threshold() == before  # a process hosting servers one after another gets its own setting back


async def test_runtimes_sharing_a_process_give_the_collector_back_when_the_last_one_stops() -> None:
    import gc

    before = gc.get_threshold()
    first, second = (build_runtime(environment, Settings(mode="sim")) for _ in range(2))
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(first.run())
        async with second.run():
            await stack.aclose()  # stops first, started first: the other one still serves
            assert gc.get_threshold()[0] == 7_000
    assert gc.get_threshold() == before
