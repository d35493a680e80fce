"""EnvPool against real local servers: three replicas of the sql server started by the local provider.

The replicas listen on 127.0.0.1, 127.0.0.2 and 127.0.0.3 on one port, as a Swarm service's tasks
or a headless Service's pods do on their own addresses, and a name resolves to the three.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from openenv_mcp import EnvClient, EpisodeNotFound
from openenv_mcp.deploy.pool import AsyncEnvPool, EnvPool, ReplicaUnavailable, resolve_addresses
from openenv_mcp.deploy.providers import LocalServer
from openenv_mcp.errors import ConfigError
from tests.support import free_port

HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
QUIET = {"OPENENV_TRAJECTORIES": "off"}


@contextlib.contextmanager
def replicas(count: int = 3) -> Iterator[list[LocalServer]]:
    port = free_port()
    servers = [LocalServer("sql", host=host, port=port, environment=QUIET) for host in HOSTS[:count]]
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(count) as starting:
        for server in servers:
            stack.callback(server.stop)
        list(starting.map(LocalServer.start, servers))
        yield servers


@pytest.fixture(scope="module")
def three() -> Iterator[list[LocalServer]]:
    with replicas() as servers:
        yield servers


def _resolver(servers: list[LocalServer]) -> dict[str, list[str]]:
    return {"tasks.sql": [server.host for server in servers]}


def _pool_by_name(servers: list[LocalServer], **options: float) -> EnvPool:
    names = _resolver(servers)
    port = servers[0].port
    assert port is not None
    return EnvPool(["tasks.sql"], port=port, resolve=lambda host, _: names[host], **options)


def test_a_name_resolving_to_many_addresses_is_one_replica_per_address(three: list[LocalServer]) -> None:
    with _pool_by_name(three) as pool:
        assert pool.refresh() == [server.url for server in three]


def test_urls_are_replicas_as_given(three: list[LocalServer]) -> None:
    with EnvPool([server.url + "/" for server in three]) as pool:
        pool.reset(seed=0)
        assert pool.replicas == [server.url for server in three]


def test_the_system_resolver_is_used_by_default() -> None:
    assert "127.0.0.1" in resolve_addresses("localhost", 8000)
    with pytest.raises(ConfigError, match="resolve only inside that cluster's network"):
        EnvPool("tasks.no-such-service.invalid:8000").refresh()


def test_episodes_spread_evenly_and_stay_on_their_replica(three: list[LocalServer]) -> None:
    with _pool_by_name(three) as pool:
        episodes = [pool.reset(seed=seed).episode_id for seed in range(12)]
        where = {episode: pool.replica_of(episode) for episode in episodes}
        assert sorted(Counter(where.values()).values()) == [4, 4, 4]
        assert pool.load() == dict.fromkeys(pool.replicas, 4)
        for round_ in range(3):
            for episode in episodes:
                result = pool.step(episode, "run_query", {"sql": f"SELECT {round_}"})
                assert result.info["step_count"] == round_ + 1
        # Each episode lives on its replica only: the others do not know it.
        for episode, url in where.items():
            for server in three:
                with EnvClient(server.url) as direct:
                    if server.url == url:
                        assert direct.state(episode_id=episode).step_count == 3
                    else:
                        with pytest.raises(EpisodeNotFound):
                            direct.state(episode_id=episode)
        for episode in episodes:
            pool.close_episode(episode)
        assert pool.load() == dict.fromkeys(pool.replicas, 0)


def test_new_episodes_go_where_fewest_are_open(three: list[LocalServer]) -> None:
    with EnvPool([server.url for server in three]) as pool:
        episodes = [pool.reset(seed=seed).episode_id for seed in range(6)]
        emptied = pool.replica_of(episodes[0])
        for episode in [e for e in episodes if pool.replica_of(e) == emptied]:
            pool.close_episode(episode)
        assert pool.load()[emptied] == 0
        fresh = [pool.reset(seed=seed).episode_id for seed in range(2)]
        assert [pool.replica_of(e) for e in fresh] == [emptied, emptied]
        assert sorted(pool.load().values()) == [2, 2, 2]


def test_an_unknown_episode_is_named() -> None:
    with EnvPool(["http://127.0.0.1:9"]) as pool, pytest.raises(EpisodeNotFound, match="not opened through this pool"):
        pool.step("nope", "list_tables")


def test_killing_a_replica_mid_run_rebuilds_its_episodes_on_the_others() -> None:
    with replicas() as servers, _pool_by_name(servers, retry_after=60) as pool:
        episodes = [pool.reset(seed=seed).episode_id for seed in range(9)]
        for episode in episodes:
            pool.step(episode, "list_tables")
        victim = servers[1]
        moved = [episode for episode in episodes if pool.replica_of(episode) == victim.url]
        victim.kill()

        for episode in episodes:  # the caller sees slower steps on the victim's episodes, never an error
            pool.step(episode, "describe_table", {"table": "orders"})
            result = pool.step(episode, "submit_answer", {"sql": "SELECT COUNT(*) FROM orders"})
            assert (result.episode_id, result.done, result.info["step_count"]) == (episode, True, 3)
        assert len(moved) == 3 and len(pool.resumes) == 3
        assert victim.url not in {pool.replica_of(e) for e in episodes}
        for episode in moved:  # each rebuilt once, on a live replica, under the id its caller has
            state = pool.state(episode)
            assert (state.episode_id, state.step_count, state.done) == (episode, 3, True)
        stats = {s.url: s for s in pool.stats()}
        assert not stats[victim.url].up and "ConnectError" in (stats[victim.url].error or "")
        assert sorted(stats[s.url].open for s in servers if s is not victim) == [4, 5]
        more = [pool.reset(seed=seed).episode_id for seed in range(4)]  # new episodes avoid the dead replica
        assert victim.url not in {pool.replica_of(e) for e in more}


def test_an_episode_no_replica_takes_back_says_so_and_names_its_replica() -> None:
    with replicas(1) as servers, EnvPool([servers[0].url]) as pool:
        url = servers[0].url
        pool.resume_within = 1.0
        episode = pool.reset(seed=0).episode_id
        pool.step(episode, "list_tables")
        servers[0].kill()
        with pytest.raises(ReplicaUnavailable) as failed:
            pool.step(episode, "list_tables")
    message = failed.value.message
    assert f"Episode {episode} was on replica {url}, which stopped answering (ConnectError" in message
    assert "no replica took it back within 1 s" in message


def test_a_reset_falls_over_to_a_live_replica() -> None:
    with replicas(2) as servers, EnvPool([s.url for s in servers]) as pool:
        servers[0].kill()
        placed = [pool.replica_of(pool.reset(seed=seed).episode_id) for seed in range(3)]
        assert placed == [servers[1].url] * 3
        servers[1].kill()
        with pytest.raises(ReplicaUnavailable, match="No replica can take an episode"):
            pool.reset(seed=9)


@pytest.mark.anyio
async def test_the_async_pool_runs_concurrent_episodes_across_replicas(three: list[LocalServer]) -> None:
    rewards: list[float] = []
    async with AsyncEnvPool([server.url for server in three]) as pool:
        await pool.refresh()  # placement then happens before any answer arrives: exactly even

        async def episode(seed: int) -> None:
            first = await pool.reset(seed=seed)
            await pool.step(first.episode_id, "list_tables")
            result = await pool.step(first.episode_id, "submit_answer", {"rows": [[1]]})
            rewards.append(result.reward)
            await pool.close_episode(first.episode_id)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for seed in range(30):
                    group.start_soon(episode, seed)
        assert len(rewards) == 30
        placed = {s.url: s.placed for s in pool.stats()}
        assert sorted(placed.values()) == [10, 10, 10]
        assert pool.load() == dict.fromkeys(pool.replicas, 0)
