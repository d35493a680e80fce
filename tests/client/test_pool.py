"""AsyncEnvPool's episodes outlive their replica: rebuilt where a replica answers, under the id the caller has.
(Placement and stickiness: tests/deploy/test_pool.py; a replica killed under a running eval: tests/cli/test_runs.py.)
"""

from __future__ import annotations

import pytest

from openenv_mcp import EnvClient
from openenv_mcp.client.pool import AsyncEnvPool, ReplicaUnavailable
from openenv_mcp.servers.email import environment as email
from openenv_mcp.servers.sql import environment as sql
from tests.support import LiveServer, live_server

pytestmark = pytest.mark.anyio


async def test_an_episode_its_replica_forgot_is_rebuilt_there_and_goes_on(sim_server: LiveServer) -> None:
    async with AsyncEnvPool([sim_server.url]) as pool:
        first = await pool.reset(task_id="sql-001", seed=4)
        await pool.step(first.episode_id, "run_query", {"sql": "SELECT COUNT(*) FROM customers"})
        with EnvClient(sim_server.url) as other:  # as a restart would: the server no longer has the episode
            other.close_episode(episode_id=first.episode_id)
        final = await pool.step(first.episode_id, "submit_answer", {"rows": [[60]]})
        assert (final.episode_id, final.reward, final.done, final.info["step_count"]) == (
            first.episode_id,
            1.0,
            True,
            2,
        )
        state = await pool.state(first.episode_id)
        assert (state.episode_id, state.step_count, state.total_reward) == (first.episode_id, 2, 1.0)
        assert len(pool.resumes) == 1 and pool.resumes[0] < 5
        await pool.close_episode(first.episode_id)
    assert len(sim_server.runtime.episodes) == 0


async def test_an_episode_that_cannot_be_rebuilt_says_so_and_names_the_replicas() -> None:
    with live_server(email, mode="sim") as other:
        with live_server(sql, mode="sim") as first:
            pool = AsyncEnvPool([first.url, other.url])  # the second does not serve the episode's task
            opened = await pool.reset(task_id="sql-001", seed=0)
            assert pool.replica_of(opened.episode_id) == first.url
            await pool.step(opened.episode_id, "list_tables", {})
        try:
            with pytest.raises(ReplicaUnavailable) as failed:  # the first replica is gone; the other refuses it
                await pool.step(opened.episode_id, "list_tables", {})
        finally:
            await pool.aclose()
    message = failed.value.message
    assert f"was on replica {first.url}, which stopped answering" in message
    assert f"it cannot be rebuilt on {other.url}: " in message and "sql-001" in message
