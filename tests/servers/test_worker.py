"""The worker environment: a DockerGym-style worker, unchanged, on the one path (HTTP, MCP, eval), warm and reused,
forked by replay; a worker that crashes, garbles or hangs fails its own episode only."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from openenv_mcp.authoring.determinism import audit_determinism
from openenv_mcp.authoring.tasksets import check_task_set
from openenv_mcp.servers.worker import environment
from openenv_mcp.worlds import WorkerPool
from tests.support import LiveServer, live_server, wait_for
from tests.support.containers import Engine, running_engine
from tests.support.worlds import COUNTER_WORKER, UNRULY_WORKER, act, command, view, write_tasks

CLI = [sys.executable, "-m", "openenv_mcp.cli"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("counter")
    monkeypatch_module.setenv("WORKER_COMMAND", command(COUNTER_WORKER))
    monkeypatch_module.setenv("WORKER_TASKS", str(write_tasks(folder)))
    monkeypatch_module.setenv("WORKER_POOL_SIZE", "2")
    with live_server(environment, mode="sim") as server:
        yield server


def test_a_dockergym_worker_plays_to_its_own_reward_over_http(counter: LiveServer) -> None:
    with httpx.Client(base_url=counter.url) as http:
        first = http.post("/reset", json={"task_id": "count-9"}).json()
        text = first["observation"]["content"][0]["text"]
        assert text.startswith("Task count-9") and "The counter shows 1. Bring it to 9." in text
        opening = first["observation"]["structured_content"]["opening"]
        assert opening["valid_actions"] == ["add 1", "add 2", "look"] and opening["info"] == {"value": 1}
        episode = first["episode_id"]
        rewards = [act(http, episode, "add 2").json()["reward"] for _ in range(3)]
        last = act(http, episode, "add 2").json()
        assert rewards == [0.0, 0.0, 0.0] and (last["reward"], last["done"]) == (1.0, True)
        assert last["observation"]["structured_content"]["observation"] == "The counter shows 9."
        state = http.get("/state", headers={"X-Episode-Id": episode}).json()
        assert (state["step_count"], state["total_reward"], state["done"]) == (4, 1.0, True)
        assert act(http, episode, "look").status_code == 409  # the worker's done flag ended it
        http.delete(f"/episodes/{episode}")


@pytest.mark.anyio
async def test_the_same_world_over_mcp_earns_the_same_reward(counter: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=counter.url) as http:
        episode = (await http.post("/reset", json={"task_id": "count-3"})).json()["episode_id"]
    async with (
        httpx2.AsyncClient(headers={"X-Episode-Id": episode}) as http2,
        Client(streamable_http_client(counter.mcp_url, http_client=http2)) as client,  # type: ignore[arg-type]
    ):
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["act"]
        assert listed.tools[0].input_schema["required"] == ["action"]
        await client.call_tool("act", {"action": "add 1"})
        answer = await client.call_tool("act", {"action": "add 2"})
    assert answer.structured_content is not None and answer.structured_content["observation"] == "The counter shows 3."
    async with httpx.AsyncClient(base_url=counter.url) as http:
        state = (await http.get("/state", headers={"X-Episode-Id": episode})).json()
        await http.delete(f"/episodes/{episode}")  # its worker goes back to the pool
    assert (state["step_count"], state["total_reward"], state["done"]) == (2, 1.0, True)


def test_a_worker_started_ahead_takes_episode_after_episode(counter: LiveServer) -> None:
    # earlier tests' episodes may still be handing their workers back, or the pool topping up: from a pool that
    # is still moving, which idle worker a reset takes depends on which start finished first (CI under load)
    wait_for(lambda: all(pool.settled for pool in WorkerPool._pools.values()), "the worker pool to settle")
    with httpx.Client(base_url=counter.url) as http:
        seen = []
        for _ in range(3):
            first = http.post("/reset", json={"task_id": "introspect"}).json()
            seen.append(first["observation"]["structured_content"]["opening"]["info"])
            http.delete(f"/episodes/{first['episode_id']}")
    # one process answered all three (init again), and it had been warmed before the first (inits counts them)
    assert len({info["pid"] for info in seen}) == 1
    assert [info["inits"] for info in seen] == [seen[0]["inits"], seen[0]["inits"] + 1, seen[0]["inits"] + 2]
    assert seen[0]["inits"] >= 2


def test_forks_and_snapshots_replay_the_world(counter: LiveServer) -> None:
    with httpx.Client(base_url=counter.url) as http:
        source = http.post("/reset", json={"task_id": "count-9"}).json()["episode_id"]
        act(http, source, "add 2")
        forked = http.post(f"/episodes/{source}/fork").json()
        assert forked["info"]["via"] == "replay" and forked["info"]["step_count"] == 1
        fork = forked["episode_id"]
        assert view(act(http, fork, "add 1"))["info"] == {"value": 4}
        assert view(act(http, source, "add 2"))["info"] == {"value": 5}  # each world went its own way
        snapshot = http.post(f"/episodes/{source}/snapshot").json()
        restored = http.post("/reset", json={"snapshot": snapshot}).json()
        assert view(act(http, restored["episode_id"], "look"))["info"] == {"value": 5}
        for episode in (source, fork, restored["episode_id"]):
            http.delete(f"/episodes/{episode}")


def test_the_counter_world_passes_the_determinism_audit_and_its_task_set_check(counter: LiveServer) -> None:
    actions = [("act", {"action": a}) for a in ("add 1", "add 2", "look", "jump")]
    assert audit_determinism(environment, actions=actions, sequences=6, max_length=5) == []
    tasks = [task for task in environment.tasks() if task.split != "probe"]
    report = check_task_set(environment, tasks=tasks)
    assert report.ok, (report.failures, report.problems)
    assert report.played == 4 and report.counts == {"train": {"easy": 2}, "test": {"hard": 1, "medium": 1}}


def test_eval_with_the_scripted_policy_solves_the_test_split(counter: LiveServer, tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "eval", counter.url, "-k", "1", "--no-progress", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["run"]["policy"] == "scripted"
    assert (results["overall"]["tasks"], results["overall"]["pass^k"]["1"]) == (2, 1.0)


def test_the_tasks_command_counts_the_set_and_plays_it(counter: LiveServer) -> None:
    counted = subprocess.run([*CLI, "tasks", "worker"], capture_output=True, text=True, timeout=60, check=False)
    assert counted.returncode == 0 and "worker: 5 tasks" in counted.stdout, counted.stderr
    checked = subprocess.run(
        [*CLI, "tasks", "worker", "--check", "--all", "--split", "test", "--no-progress"], capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert checked.returncode == 0 and "ok: 2 references played, each to reward 1.0" in checked.stdout, checked.stdout
    unsolved = subprocess.run(
        [*CLI, "tasks", "worker", "--check", "--split", "probe", "--no-progress"], capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert unsolved.returncode == 1 and "introspect: the reference has no calls" in unsolved.stdout, unsolved.stdout


# faults ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unruly(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("unruly")
    tasks = [{"id": "t", "split": "train", "env_id": "anything"}]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKER_COMMAND", command(UNRULY_WORKER))
        patch.setenv("WORKER_TASKS", str(write_tasks(folder, tasks)))
        patch.setenv("WORKER_STEP_TIMEOUT", "2")
        patch.setenv("WORKER_POOL_SIZE", "1")
        with live_server(environment, mode="sim") as server:
            yield server


def _pid(server: LiveServer, episode: str) -> int:
    return int(server.runtime.episodes.get(episode).backend.worker.process.pid)


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize(
    ("action", "why"),
    [("crash", "exited before answering a step"), ("garbage", "answered a step with garbage"),
     ("hang", "did not answer a step within 2 s")],
)  # fmt: skip
def test_a_failing_worker_fails_its_episode_with_a_503_and_others_go_on(
    unruly: LiveServer, caplog: pytest.LogCaptureFixture, action: str, why: str
) -> None:
    caplog.set_level(logging.WARNING, logger="openenv_mcp.worlds")
    with httpx.Client(base_url=unruly.url, timeout=30) as http:
        victim = http.post("/reset", json={}).json()["episode_id"]
        bystander = http.post("/reset", json={}).json()["episode_id"]
        pid = _pid(unruly, victim)
        failed = act(http, victim, action)
        assert failed.status_code == 503, failed.text
        error = failed.json()["error"]
        assert error["code"] == "backend_unavailable"
        assert f"worker worker (pid {pid}: {command(UNRULY_WORKER)})" in error["message"] and why in error["message"]
        assert _gone(pid)  # its whole process group was killed
        again = act(http, victim, "look")
        assert again.status_code == 503 and "is gone" in again.json()["error"]["message"]
        assert view(act(http, bystander, "look"))["observation"] == "you did look"
        for episode in (victim, bystander):
            http.delete(f"/episodes/{episode}")
    if action == "crash":
        assert "RuntimeError: the world fell over" in caplog.text  # the stderr tail is in the log


def test_a_world_refusing_an_action_is_a_tool_error_and_the_episode_goes_on(unruly: LiveServer) -> None:
    with httpx.Client(base_url=unruly.url) as http:
        episode = http.post("/reset", json={}).json()["episode_id"]
        refused = act(http, episode, "refuse").json()
        assert refused["observation"]["is_error"] and refused["reward"] == 0.0 and not refused["done"]
        assert "the world does not know how to refuse" in refused["observation"]["content"][0]["text"]
        assert view(act(http, episode, "look"))["observation"] == "you did look"
        scored = act(http, episode, "score").json()  # "score" stands for a missing "reward"
        assert scored["reward"] == 0.5 and scored["observation"]["structured_content"]["info"] == {
            "score": 0.5,
            "moves": 1,
        }
        http.delete(f"/episodes/{episode}")


def _serve(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "serve", "worker", "--port", "0"], capture_output=True, text=True, timeout=60, check=False,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("WORKER_")}, **env},
    )  # fmt: skip


def test_a_missing_setting_or_a_broken_command_stops_the_start_with_a_clear_message(tmp_path: Path) -> None:
    missing = _serve(tmp_path)
    assert missing.returncode == 2 and "set WORKER_COMMAND" in missing.stderr and "set WORKER_TASKS" in missing.stderr
    tasks = str(write_tasks(tmp_path))
    broken = _serve(tmp_path, WORKER_COMMAND="/nonexistent/worker --flag", WORKER_TASKS=tasks)
    assert broken.returncode != 0
    assert "The worker worker could not start (/nonexistent/worker" in broken.stderr
    world = {"WORKER_COMMAND": command(COUNTER_WORKER), "WORKER_TASKS": tasks}
    unknown = _serve(tmp_path, **world, MODE="prod", OPENENV_PROD_TASK="x")
    assert unknown.returncode != 0 and "No task 'x'" in unknown.stderr  # prod: a world per session, on a known task


@pytest.mark.anyio
async def test_prod_gives_each_mcp_session_a_world_of_its_own_with_no_reward_and_no_control_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("WORKER_IMAGE", "WORKER_RUN_OPTIONS"):  # a process per world here, whatever a fixture set
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WORKER_COMMAND", command(COUNTER_WORKER))
    monkeypatch.setenv("WORKER_TASKS", str(write_tasks(tmp_path)))
    with live_server(environment, mode="prod", prod_task="count-9") as server:
        runtime = server.runtime
        async with (
            httpx2.AsyncClient(headers={"X-Episode-Id": "default"}) as http2,  # ids a client sends reach nothing
            Client(streamable_http_client(server.mcp_url, http_client=http2), mode="legacy") as one,  # type: ignore[arg-type]
            Client(server.mcp_url, mode="legacy") as two,
        ):
            mine = await one.call_tool("act", {"action": "add 2"})
            theirs = await two.call_tool("act", {"action": "look"})
            assert mine.structured_content is not None and theirs.structured_content is not None
            assert mine.structured_content["observation"] == "The counter shows 3."  # count-9 starts at 1
            assert theirs.structured_content["observation"] == "The counter shows 1."  # its own world, untouched
            assert mine.meta is None and theirs.meta is None  # no reward, no episode shown
            assert len(runtime.episodes) == 2 and "default" not in runtime.episodes
            for _ in range(3):
                last = await one.call_tool("act", {"action": "add 2"})
            assert last.structured_content is not None and last.structured_content["observation"].endswith("9.")
            done = await one.call_tool("act", {"action": "look"})
            assert done.is_error and "This session's world is done after 4 steps" in done.content[0].text
        assert len(runtime.episodes) == 0  # each world closed with its session
        async with Client(server.mcp_url) as sessionless:  # 2026-07-28: no session, so no world to act on
            refused = await sessionless.call_tool("act", {"action": "look"})
        assert refused.is_error and "a world of its own in prod" in refused.content[0].text
        async with httpx.AsyncClient(base_url=server.url) as http:
            assert (await http.post("/reset", json={})).status_code == 404
            assert (await http.get("/readyz")).status_code == 200


# a container per episode ---------------------------------------------------------------------------------------

COUNTER_IMAGE = "localhost/openenv-counter-worker:test"


@pytest.fixture(scope="module")
def containers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Engine]]:
    folder = tmp_path_factory.mktemp("containers")
    with running_engine(folder) as engine, pytest.MonkeyPatch.context() as patch:
        engine.build(
            COUNTER_IMAGE,
            ROOT / "tests" / "support",
            dockerfile=ROOT / "tests/servers/images/counter-worker/Dockerfile",
        )
        patch.setenv("CONTAINERS_CONF", engine.env["CONTAINERS_CONF"])
        patch.setenv("WORKER_IMAGE", COUNTER_IMAGE)
        patch.setenv("WORKER_COMMAND", "python -u /app/worker.py")
        patch.setenv("WORKER_RUN_OPTIONS", "--network=none")
        patch.setenv("WORKER_TASKS", str(write_tasks(folder)))
        patch.setenv("WORKER_POOL_SIZE", "1")
        with live_server(environment, mode="sim") as server:
            yield server, engine


def _running(engine: Engine) -> set[str]:
    listed = engine.podman("ps", "--filter", "label=openenv-mcp.world=worker", "--format", "{{.Names}}")
    return set(listed.stdout.split())


@pytest.mark.containers
def test_the_same_worker_in_a_container_per_episode(containers: tuple[LiveServer, Engine]) -> None:
    server, engine = containers
    with httpx.Client(base_url=server.url, timeout=60) as http:
        episodes = [http.post("/reset", json={"task_id": task}).json()["episode_id"] for task in ("count-3", "count-9")]
        names = [server.runtime.episodes.get(episode).backend.worker.container for episode in episodes]
        assert len(set(names)) == 2 and set(names) <= _running(engine)
        rewards = [act(http, episodes[0], "add 1").json()["reward"], act(http, episodes[0], "add 2").json()["reward"]]
        assert rewards == [0.0, 1.0]
        assert view(act(http, episodes[1], "add 2"))["info"] == {"value": 3}
        for episode in episodes:
            http.delete(f"/episodes/{episode}")
        assert not set(names) & _running(engine)  # each episode's container went with it
        again = http.post("/reset", json={"task_id": "count-3"}).json()["episode_id"]
        assert server.runtime.episodes.get(again).backend.worker.container not in names  # a fresh one, not reused
        http.delete(f"/episodes/{again}")
