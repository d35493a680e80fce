"""Shared-prefix groups over a live sql server: members start in one state, diverge alone, and nothing leaks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anyio
import pytest

from openenv_mcp.client import AsyncEnvClient, EnvClient
from openenv_mcp.errors import CapacityExceeded, ConfigError, EpisodeFinished, EpisodeNotFound, ToolNotFound
from openenv_mcp.rollout import RolloutEpisode, discover, scripted_policy
from openenv_mcp.servers.sql import environment as sql
from openenv_mcp.training.groups import ashared_prefix_group, prefix_actions, shared_prefix_group
from tests.support import LiveServer, live_server, open_episodes

GOLD = "SELECT COUNT(*) FROM customers"  # sql-001's answer


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(sql, mode="sim", max_episodes=8) as running:
        yield running


@pytest.fixture
def env(server: LiveServer) -> Iterator[EnvClient]:
    with EnvClient(server.url) as client:
        yield client
    assert len(server.runtime.episodes) == 0, "a test left an episode open"


def test_members_start_in_the_roots_state_and_diverge_alone(env: EnvClient, server: LiveServer) -> None:
    prefix = [("list_tables", {}), ("run_query", {"sql": "SELECT COUNT(*) FROM customers"})]
    group = shared_prefix_group(env, task_id="sql-001", seed=5, k=3, actions=prefix)
    assert (group.task_id, group.seed, len(group.members)) == ("sql-001", 5, 3)
    assert len(set(group.episode_ids)) == 3 and group.root_id not in group.episode_ids
    with pytest.raises(EpisodeNotFound, match="Unknown episode"):
        env.state(episode_id=group.root_id)  # the root is closed once forked
    states = [env.state(episode_id=e) for e in group.episode_ids]
    assert {(s.task_id, s.seed, s.step_count, s.total_reward, s.done) for s in states} == {
        ("sql-001", 5, 2, 0.0, False)
    }
    assert {m.observation.text for m in group.members} == {group.steps[-1].observation}  # the prefix's last answer
    assert {m.info["forked_from"] for m in group.members} == {group.root_id}
    assert [s.tool for s in group.steps] == ["list_tables", "run_query"] and '"customers"' in group.steps[0].observation

    right, wrong, idle = group.episode_ids
    assert env.step("submit_answer", {"sql": GOLD}, episode_id=right).reward == 1.0
    assert env.step("submit_answer", {"rows": [[1]]}, episode_id=wrong).reward == 0.0
    after = {e: env.state(episode_id=e) for e in group.episode_ids}
    assert (after[right].total_reward, after[right].step_count, after[right].done) == (1.0, 3, True)
    assert (after[wrong].total_reward, after[wrong].step_count, after[wrong].done) == (0.0, 3, True)
    assert (after[idle].total_reward, after[idle].step_count, after[idle].done) == (0.0, 2, False)  # untouched
    for episode_id in group.episode_ids:
        env.close_episode(episode_id=episode_id)
    assert open_episodes(server.url) == 0


def test_the_prefix_as_a_chat_is_the_task_then_each_call_and_answer(env: EnvClient) -> None:
    group = shared_prefix_group(env, task_id="sql-001", seed=0, k=1, actions=[{"tool": "list_tables"}])
    chat = group.messages("You query a database.")
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool"]
    assert chat[1]["content"] == group.prompt and group.prompt.startswith("How many customers")
    assert chat[2]["tool_calls"][0]["function"] == {"name": "list_tables", "arguments": "{}"}
    assert chat[3] == {"role": "tool", "tool_call_id": "prefix_1", "content": group.steps[0].observation}
    trl = group.messages(style="trl")
    assert trl[1]["tool_calls"][0]["function"] == {"name": "list_tables", "arguments": {}}
    assert trl[2] == {"role": "tool", "name": "list_tables", "content": group.steps[0].observation}
    env.close_episode(episode_id=group.episode_ids[0])


def test_a_refused_or_finishing_prefix_is_an_error_that_leaves_nothing_open(env: EnvClient, server: LiveServer) -> None:
    with pytest.raises(ToolNotFound, match=r"Action 1 \(drop_everything\) of the shared prefix of task sql-001"):
        shared_prefix_group(env, task_id="sql-001", seed=0, k=2, actions=[("list_tables", {}), ("drop_everything", {})])
    with pytest.raises(EpisodeFinished, match=r"ended the episode at step 1 \(submit_answer\).*shorter prefix"):
        shared_prefix_group(env, task_id="sql-001", seed=0, k=2, actions=[("submit_answer", {"sql": GOLD})])
    with pytest.raises(ConfigError, match="k >= 1"):
        shared_prefix_group(env, task_id="sql-001", seed=0, k=0)
    with pytest.raises(ConfigError, match=r"Action 0 of the prefix is 'list_tables'"):
        prefix_actions(["list_tables"])
    assert len(server.runtime.episodes) == 0


def test_a_group_larger_than_the_cap_fails_whole(env: EnvClient, server: LiveServer) -> None:
    with pytest.raises(CapacityExceeded, match="Forking the shared prefix failed"):
        shared_prefix_group(env, task_id="sql-002", seed=0, k=8)  # the root and 8 forks: 9 > 8
    assert len(server.runtime.episodes) == 0  # the forks that were made are closed again


def test_the_async_twin_plays_a_policys_first_steps_as_the_prefix(server: LiveServer) -> None:
    calls = [("list_tables", {}), ("describe_table", {"table": "customers"}), ("submit_answer", {"sql": GOLD})]

    async def main() -> None:
        info = await discover(server.url)
        async with AsyncEnvClient(server.url) as client:
            group = await ashared_prefix_group(
                client, task_id="sql-001", seed=1, k=2, policy=scripted_policy(calls), steps=2, server=info
            )
            assert [s.tool for s in group.steps] == ["list_tables", "describe_table"]  # the policy stopped at 2
            for member in group.members:  # each member goes on from there: step 3 ends it
                episode = RolloutEpisode(client, info, member, group.seed, history=group.messages())
                assert (episode.steps, episode.reward, episode.done) == (2, 0.0, False)
                await episode.step("submit_answer", {"sql": GOLD})
                assert (episode.steps, episode.reward, episode.done) == (3, 1.0, True)
                await client.close_episode(episode_id=member.episode_id)

    anyio.run(main)
    assert len(server.runtime.episodes) == 0


def test_a_group_cancelled_again_and_again_while_it_opens_forks_or_closes_leaves_nothing_open(
    server: LiveServer,
) -> None:
    """A trainer that stops cancels its workers, then ``asyncio.run`` cancels them again (Atropos does both):
    cancelled at any point of making a group, however often, nothing stays open on the server."""

    async def main() -> None:
        async with AsyncEnvClient(server.url) as client:
            for delay in (0.0, 0.001, 0.003, 0.006, 0.01, 0.02, 0.04, 0.08):
                made = asyncio.ensure_future(
                    ashared_prefix_group(client, task_id="sql-001", seed=1, k=2, actions=[("list_tables", {})])
                )
                await asyncio.sleep(delay)
                for _ in range(40):  # cancelled, and cancelled again while it cleans up
                    made.cancel()
                    await asyncio.sleep(0)
                try:
                    group = await made
                except asyncio.CancelledError:
                    pass
                else:  # it was done before the first cancellation: its members are the caller's to close
                    for episode_id in group.episode_ids:
                        await client.close_episode(episode_id=episode_id)
                assert len(server.runtime.episodes) == 0, f"left open when cancelled after {delay} s"

    asyncio.run(main())
