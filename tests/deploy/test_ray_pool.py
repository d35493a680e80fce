"""RayPool on a real Ray cluster of two nodes on this machine (tests/support/ray.py): a head and a worker node,
each its own ``ray start`` process group with a resource named after it, so every placement can be told apart.

Each replica is a Ray actor serving sql (both doors) on its node; the pool talks HTTP to it as EnvPool does.
Crashes are real: a replica's process is SIGKILLed, as the kernel's OOM killer would.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from openenv_mcp import EnvClient, EpisodeNotFound
from openenv_mcp.errors import ConfigError
from tests.support import require_service

ray = pytest.importorskip("ray", reason="Ray is an extra: pip install 'openenv-mcp[ray]' (the dev extra has it)")

from openenv_mcp.deploy.providers import ProviderError  # noqa: E402
from openenv_mcp.deploy.ray_pool import AsyncRayPool, Placement, RayPool  # noqa: E402
from tests.support.ray import RayCluster, ray_cluster  # noqa: E402

QUIET = {"OPENENV_TRAJECTORIES": "off"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    try:
        running = ray_cluster()
        started = running.__enter__()
    except RuntimeError as exc:
        require_service("A local Ray cluster (ray start)", exc)
    try:
        ray.init(address=started.address, log_to_driver=False)
        deadline = time.monotonic() + 30
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, "the worker node did not join within 30 s"
            time.sleep(0.1)
        yield started
    finally:
        ray.shutdown()
        running.__exit__(None, None, None)


def node_names() -> dict[str, str]:
    """Each live node's name (its ``node_NAME`` resource), by Ray node id."""
    return {
        node["NodeID"]: next(r for r in node["Resources"] if r.startswith("node_")).removeprefix("node_")
        for node in ray.nodes()
        if node["Alive"]
    }


def gone(placement: Placement) -> bool:
    """True when the replica's process has exited and nothing answers at its URL."""
    if os.path.exists(f"/proc/{placement.pid}") and "Z" not in _state(placement.pid):
        return False
    try:
        httpx.get(f"{placement.url}/healthz", timeout=2)
    except httpx.TransportError:
        return True
    return False


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


def wait_until(check: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f} s"
        time.sleep(0.1)


def all_cpus_free() -> bool:
    return ray.available_resources().get("CPU", 0) == ray.cluster_resources().get("CPU", -1)


def test_replicas_spread_over_the_nodes_episodes_over_the_replicas_and_nothing_outlives_the_pool(
    cluster: RayCluster,
) -> None:
    with RayPool("sql", replicas=2, environment=QUIET) as pool:
        urls = pool.refresh()
        placements = pool.placements()
        assert sorted(placements) == sorted(urls) and len(urls) == 2
        names = node_names()
        assert sorted(names[p.node_id] for p in placements.values()) == ["head", "worker"]  # Ray spread them

        episodes = [pool.reset(seed=seed).episode_id for seed in range(8)]
        where = {episode: pool.replica_of(episode) for episode in episodes}
        assert sorted(Counter(where.values()).values()) == [4, 4]
        for episode in episodes:
            assert pool.step(episode, "run_query", {"sql": "SELECT 1"}).info["step_count"] == 1
        for episode, url in where.items():  # sticky: the episode is on its replica, unknown to the other
            for other in urls:
                with EnvClient(other) as direct:
                    if other == url:
                        assert direct.state(episode_id=episode).step_count == 1
                    else:
                        with pytest.raises(EpisodeNotFound):
                            direct.state(episode_id=episode)

        async def tools(url: str) -> list[str]:  # the MCP door of a replica, unchanged
            from mcp import Client

            with anyio.fail_after(30):
                async with Client(f"{url}/mcp") as client:
                    return sorted(tool.name for tool in (await client.list_tools()).tools)

        assert anyio.run(tools, urls[0]) == ["describe_table", "list_tables", "run_query", "submit_answer"]
        for episode in episodes[:4]:
            pool.close_episode(episode)
        assert sorted(pool.load().values()) == [2, 2]
        assert not all_cpus_free()  # each replica holds a CPU while it lives
    # Closed: both actors ended, and their servers with them: no process, no port, no CPU held.
    wait_until(lambda: all(gone(p) for p in placements.values()), "every replica's process gone, its port closed")
    wait_until(all_cpus_free, "every CPU of the cluster free again (no actor left)")
    with pytest.raises(EpisodeNotFound, match="not opened through this pool"):
        pool.step(episodes[-1], "list_tables")


def test_a_crashed_replicas_episodes_are_rebuilt_and_ray_restarts_it(cluster: RayCluster) -> None:
    with RayPool("sql", replicas=2, environment=QUIET, retry_after=60) as pool:
        episodes = [pool.reset(seed=seed).episode_id for seed in range(6)]
        victim = pool.placements()[pool.replica_of(episodes[0])]
        os.kill(victim.pid, signal.SIGKILL)  # the replica's process dies mid-run

        for episode in episodes:  # its episodes are rebuilt on the other replica: slower steps, no error
            pool.step(episode, "list_tables")
            result = pool.step(episode, "submit_answer", {"sql": "SELECT COUNT(*) FROM orders"})
            assert (result.episode_id, result.done, result.info["step_count"]) == (episode, True, 2)
        assert len(pool.resumes) == 3
        assert victim.url not in {pool.replica_of(e) for e in episodes}

        pool.refresh()  # Ray restarted the actor (same actor, new process): the pool serves from it again
        restarted = next(p for p in pool.placements().values() if p.actor_id == victim.actor_id)
        assert restarted.pid != victim.pid and restarted.url != victim.url
        assert victim.url not in pool.replicas
        fresh = [pool.reset(seed=seed).episode_id for seed in range(3)]  # the empty one takes them
        assert {pool.replica_of(e) for e in fresh} == {restarted.url}
        assert all(pool.step(e, "list_tables").info["step_count"] == 1 for e in fresh)


def test_a_replica_dead_for_good_is_replaced_by_a_new_actor(cluster: RayCluster) -> None:
    options = {"max_restarts": 0}  # Ray will not bring it back: the pool must start another
    with RayPool("sql", replicas=2, environment=QUIET, options=options) as pool:
        episodes = [pool.reset(seed=seed).episode_id for seed in range(4)]
        victim = pool.placements()[pool.replica_of(episodes[0])]
        survivor = next(url for url in pool.replicas if url != victim.url)
        os.kill(victim.pid, signal.SIGKILL)
        assert pool.step(episodes[0], "list_tables").info["step_count"] == 1  # rebuilt on the survivor
        assert pool.replica_of(episodes[0]) == survivor
        # New episodes go on at once, on the survivor, while the replacement starts.
        assert pool.replica_of(pool.reset(seed=9).episode_id) == survivor
        pool.refresh()
        replacement = next(p for url, p in pool.placements().items() if url != survivor)
        assert replacement.actor_id != victim.actor_id
        assert pool.replica_of(pool.reset(seed=10).episode_id) == replacement.url


def test_the_async_twin_runs_episodes_concurrently_where_the_options_place_it(cluster: RayCluster) -> None:
    options = {"resources": {"node_worker": 1}}  # only the worker node has this resource

    async def run() -> tuple[dict[str, Placement], list[float]]:
        async with AsyncRayPool("sql", replicas=2, environment=QUIET, options=options) as pool:
            rewards: list[float] = []

            async def episode(seed: int) -> None:
                first = await pool.reset(seed=seed)
                step = await pool.step(first.episode_id, "list_tables")
                while not step.done:
                    step = await pool.step(first.episode_id, "submit_answer", {"sql": "SELECT 1"})
                rewards.append((await pool.state(first.episode_id)).total_reward)

            with anyio.fail_after(120):
                async with anyio.create_task_group() as group:
                    for seed in range(10):
                        group.start_soon(episode, seed)
            assert sorted(pool.load().values()) == [5, 5]  # finished, not closed: balanced while they ran
            return pool.placements(), rewards

    placements, rewards = anyio.run(run)
    assert len(rewards) == 10
    assert {node_names()[p.node_id] for p in placements.values()} == {"worker"}
    wait_until(lambda: all(gone(p) for p in placements.values()), "the async pool's replicas gone")


def test_a_replica_that_cannot_start_says_why(cluster: RayCluster) -> None:
    with (
        pytest.raises(ProviderError, match=r"did not start: .*No server 'no-such-server'"),
        RayPool("no-such-server", replicas=1) as pool,
    ):
        pool.refresh()
    wait_until(all_cpus_free, "the failed replica's CPU free again")


def test_a_replica_no_node_can_host_is_reported_with_what_it_asks_for(cluster: RayCluster) -> None:
    options = {"resources": {"node_nowhere": 1}}
    with (
        pytest.raises(ProviderError, match=r"not ready within 3 s.*\(CPU: 1, node_nowhere: 1\)"),
        RayPool("sql", replicas=1, options=options, startup_timeout=3) as pool,
    ):
        pool.refresh()


def test_a_pool_needs_a_replica(cluster: RayCluster) -> None:
    with pytest.raises(ConfigError, match="at least one replica"):
        RayPool("sql", replicas=0)


def test_the_core_and_the_command_line_never_import_ray() -> None:
    check = (
        "import sys\n"
        "import openenv_mcp, openenv_mcp.cli, openenv_mcp.deploy.pool, openenv_mcp.deploy.providers\n"
        "try:\n"
        "    openenv_mcp.cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.split('.')[0] == 'ray')\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_the_example_spreads_its_episodes_over_both_nodes(cluster: RayCluster) -> None:
    example = Path(__file__).parents[2] / "examples" / "ray_pool.py"
    done = subprocess.run(
        [sys.executable, str(example), "--address", cluster.address, "--replicas", "2", "--episodes", "6"],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("replica http://") == 2
    by_node = next(line for line in done.stdout.splitlines() if line.startswith("episodes by node:"))
    assert sorted(int(n) for n in re.findall(r": (\d+)", by_node)) == [3, 3]  # two nodes, three each
    assert "6 episodes, mean reward" in done.stdout
