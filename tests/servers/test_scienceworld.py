"""ScienceWorld, shipped: its 7,207 tasks in the package's own splits, gold paths played to a total reward of 1.0
over HTTP, MCP and eval, forks by replay, recorded. One server (one warm JVM) for the module; a seeded sample of
test tasks, one per difficulty, is played (a one-command check plays them all: docs/worlds.md)."""

from __future__ import annotations

import json
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
from openenv_mcp.servers.scienceworld import environment
from openenv_mcp.servers.scienceworld.settings import JAVA_OPTIONS
from openenv_mcp.servers.scienceworld.tasks import solve, task_types
from openenv_mcp.trajectories import iter_records
from tests.support import LiveServer
from tests.support.worlds import act, play, recording_server, view

CLI = [sys.executable, "-m", "openenv_mcp.cli"]
# the first test variation of three task types, one per difficulty (gold paths of 5, 24 and 51 steps)
SAMPLE = ["find-non-living-thing-225", "chemistry-mix-24", "inclined-plane-friction-named-surfaces-1038"]

AGAINST_THE_PACKAGE = """
import json, sys
from scienceworld import ScienceWorldEnv
shipped = json.loads(sys.stdin.read())
env = ScienceWorldEnv("", envStepLimit=100)
found = []
for kind in shipped:
    env.load(kind["name"], 0, "", False)
    found.append({"name": kind["name"], "variations": env.get_max_variations(kind["name"]),
                  "train": env.get_variations_train(), "dev": env.get_variations_dev(),
                  "test": env.get_variations_test()})
env.close()
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    store = f"sqlite:///{tmp_path_factory.mktemp('trajectories') / 'scienceworld.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCIENCEWORLD_POOL_SIZE", "1")
        with recording_server(environment, store) as live:
            yield live


def test_every_variation_of_every_task_type_is_a_task_in_the_package_own_split() -> None:
    tasks = environment.tasks()
    assert len(tasks) == 7207 and tasks.splits == {"train": 3592, "dev": 1796, "test": 1819}
    assert {task.difficulty for task in tasks} == {"easy", "medium", "hard"}
    shipped = [{key: kind[key] for key in ("name", "variations", "train", "dev", "test")} for kind in task_types()]
    asked = subprocess.run(
        [sys.executable, "-c", AGAINST_THE_PACKAGE], input=json.dumps(shipped), capture_output=True, text=True,
        timeout=300, check=False, env={**os.environ, "JAVA_TOOL_OPTIONS": JAVA_OPTIONS},
    )  # fmt: skip
    assert asked.returncode == 0, asked.stderr[-2000:]
    assert json.loads(asked.stdout.splitlines()[-1]) == shipped  # the data file is the package's own lists
    assert len(shipped) == 30


@pytest.mark.timeout(600)  # 80 gold steps, each path played once where it is made, once here
def test_the_gold_paths_of_a_seeded_sample_solve_their_tasks_through_the_one_path(server: LiveServer) -> None:
    report = check_task_set(environment, tasks=[environment.tasks().get(task_id) for task_id in SAMPLE])
    assert report.ok and report.played == 3, (report.failures, report.problems)
    assert report.counts == {"test": {"easy": 1, "hard": 1, "medium": 1}}


def test_an_episode_over_http_starts_with_the_task_and_the_room_and_earns_score_over_100(server: LiveServer) -> None:
    gold = [arguments["action"] for _, arguments in solve(environment.tasks().get(SAMPLE[0]))]
    with httpx.Client(base_url=server.url, timeout=120) as http:
        episode, answers = play(http, SAMPLE[0], gold)
        first = http.get("/state", headers={"X-Episode-Id": episode}).json()
        assert first["total_reward"] == pytest.approx(1.0) and first["done"] and first["step_count"] == len(gold)
        scores = [answer["observation"]["structured_content"]["info"]["score"] for answer in answers]
        assert [answer["reward"] for answer in answers] == pytest.approx(
            [(now - before) / 100 for before, now in zip([0, *scores], scores, strict=False)]
        )
        opened = http.post("/reset", json={"task_id": SAMPLE[1]}).json()
        text = opened["observation"]["content"][0]["text"]
        assert "Your task is to" in text and "This room is called" in text
        opening = opened["observation"]["structured_content"]["opening"]
        assert "look around" in opening["valid_actions"] and opening["valid_actions"] == sorted(
            opening["valid_actions"]
        )
        http.delete(f"/episodes/{opened['episode_id']}")


@pytest.mark.anyio
async def test_the_same_world_over_mcp(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
        episode = (await http.post("/reset", json={"task_id": SAMPLE[1]})).json()["episode_id"]
    async with (
        httpx2.AsyncClient(headers={"X-Episode-Id": episode}, timeout=120) as http2,
        Client(streamable_http_client(server.mcp_url, http_client=http2)) as client,  # type: ignore[arg-type]
    ):
        answer = await client.call_tool("act", {"action": "look around"})
        wrong = await client.call_tool("act", {"action": "fly to the moon"})
    assert answer.structured_content is not None and "This room is called" in answer.structured_content["observation"]
    assert wrong.structured_content is not None and "No known action" in wrong.structured_content["observation"]
    async with httpx.AsyncClient(base_url=server.url) as http:
        state = (await http.get("/state", headers={"X-Episode-Id": episode})).json()
    # the points the starting room already earns come with the first step
    assert state["step_count"] == 2 and state["total_reward"] == answer.structured_content["info"]["score"] / 100


def test_forks_replay_and_the_world_passes_the_determinism_audit(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, timeout=120) as http:
        source = http.post("/reset", json={"task_id": SAMPLE[1]}).json()["episode_id"]
        act(http, source, "look around")
        act(http, source, "inventory")
        fork = http.post(f"/episodes/{source}/fork").json()
        assert fork["info"]["via"] == "replay" and fork["info"]["step_count"] == 2
        assert view(act(http, fork["episode_id"], "look around")) == view(act(http, source, "look around"))
        for episode in (source, fork["episode_id"]):
            http.delete(f"/episodes/{episode}")
    actions = [("act", {"action": a}) for a in ("look around", "inventory", "open door to kitchen", "go to kitchen")]
    assert audit_determinism(environment, actions=actions, sequences=2, max_length=3) == []


def test_eval_with_the_scripted_policy_solves_a_test_task_and_it_is_recorded(
    server: LiveServer, tmp_path: Path
) -> None:
    done = subprocess.run(
        [*CLI, "eval", server.url, "-k", "1", "--no-progress", "--out", str(tmp_path / "eval"), "--task", SAMPLE[0]],
        capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    overall = json.loads((tmp_path / "eval" / "results.json").read_text())["overall"]
    assert (overall["tasks"], overall["errors"], overall["pass^k"]["1"]) == (1, 0, 1.0)
    records = [r for r in iter_records(server.runtime.settings.trajectories_url) if r["task_id"] == SAMPLE[0]]
    assert records and all(r["reward"] == pytest.approx(1.0) for r in records if r["done"])
    assert "Your task is to" in records[-1]["messages"][1]["content"]


def test_without_java_the_world_lists_with_a_hint_and_serving_says_what_to_install(tmp_path: Path) -> None:
    bare = {**os.environ, "PATH": str(tmp_path)}  # no java on it (the interpreter is called by its path)
    listed = subprocess.run([*CLI, "list"], capture_output=True, text=True, timeout=60, check=False, env=bare)
    assert listed.returncode == 0, listed.stderr
    assert "not ready here: Java 17 (Debian: apt-get install openjdk-17-jre-headless)" in listed.stdout
    served = subprocess.run(
        [*CLI, "serve", "scienceworld", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=bare,
    )
    assert served.returncode == 2
    assert "scienceworld cannot run here; it needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)" in (
        served.stderr
    )
