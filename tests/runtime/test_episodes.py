"""Episodes: the cap is exact, idle ones are reaped, close frees the backend."""

from __future__ import annotations

import pytest

from openenv_mcp import CapacityExceeded, EpisodeNotFound, Task
from openenv_mcp.runtime.episodes import EpisodeTable

pytestmark = pytest.mark.anyio

TASK = Task(id="t", split="train", prompt="p")


class Recorder:
    closed = 0

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        Recorder.closed += 1


async def factory() -> Recorder:
    return Recorder()


async def test_cap_refuses_the_next_episode_with_what_to_do() -> None:
    table = EpisodeTable(capacity=2, idle_timeout=60)
    await table.open(TASK, 0, factory, max_steps=5)
    await table.open(TASK, 0, factory, max_steps=5)
    with pytest.raises(CapacityExceeded, match="OPENENV_MAX_EPISODES"):
        await table.open(TASK, 0, factory, max_steps=5)


async def test_idle_episodes_are_reaped_and_busy_ones_kept() -> None:
    table = EpisodeTable(capacity=10, idle_timeout=60)
    idle = await table.open(TASK, 0, factory, max_steps=5)
    busy = await table.open(TASK, 0, factory, max_steps=5)
    fresh = await table.open(TASK, 0, factory, max_steps=5)
    idle.last_active_at -= 120
    busy.last_active_at -= 120
    before = Recorder.closed
    async with busy.lock:
        assert await table.reap() == [idle.id]
    assert Recorder.closed == before + 1
    assert busy.id in table and fresh.id in table
    with pytest.raises(EpisodeNotFound, match="reaped after 60 s idle"):
        table.get(idle.id)


async def test_close_frees_the_backend_and_forgets_the_episode() -> None:
    table = EpisodeTable(capacity=10, idle_timeout=60)
    episode = await table.open(TASK, 0, factory, max_steps=5)
    before = Recorder.closed
    await table.close(episode.id)
    assert Recorder.closed == before + 1 and len(table) == 0
    with pytest.raises(EpisodeNotFound):
        await table.close(episode.id)


async def test_a_failing_backend_factory_releases_its_slot() -> None:
    table = EpisodeTable(capacity=1, idle_timeout=60)

    async def broken() -> Recorder:
        raise OSError("disk full")

    with pytest.raises(OSError):
        await table.open(TASK, 0, broken, max_steps=5)
    await table.open(TASK, 0, factory, max_steps=5)
