"""TextWorld, shipped: seeded games made by tw-make on first use, played to a total reward of 1.0 over HTTP, MCP,
eval, rollout and the /web page, recorded; one server for the module, three games made (one per difficulty)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
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
from openenv_mcp.authoring.tasksets import check_task_set, hygiene
from openenv_mcp.servers.textworld import environment
from openenv_mcp.servers.textworld.games import LEVELS, ensure_game_now, folder
from openenv_mcp.servers.textworld.tasks import solve
from openenv_mcp.trajectories import iter_records
from tests.support import IN_CI, LiveServer
from tests.support.worlds import act, play, recording_server, view

CLI = [sys.executable, "-m", "openenv_mcp.cli"]
# the games CI makes and plays: the first of each difficulty (a server's start makes the first one, for its probe)
SAMPLE = ["tw-easy-1", "tw-medium-100001", "tw-hard-200001"]


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder_ = tmp_path_factory.mktemp("games")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TEXTWORLD_GAMES_DIR", str(folder_))
        patch.setenv("TEXTWORLD_POOL_SIZE", "1")
        patch.setenv("TEXTWORLD_TRAIN_GAMES", "3")  # resets without a task id draw from the sample's games
        # the server's readiness probe plays the first game: made here, so that the server starts in seconds
        ensure_game_now(folder_, SAMPLE[0], LEVELS[0], 1, timeout=300)
        yield folder_


@pytest.fixture(scope="module")
def server(games: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    store = f"sqlite:///{tmp_path_factory.mktemp('trajectories') / 'textworld.db'}"
    with recording_server(environment, store) as live:
        yield live


def test_the_task_list_has_its_games_over_three_difficulties_without_making_any(
    games: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEXTWORLD_TRAIN_GAMES")
    tasks = environment.tasks()
    assert tasks.splits == {"train": 1050, "test": 210}
    counts: dict[tuple[str, str | None], int] = {}
    for task in tasks:
        counts[task.split, task.difficulty] = counts.get((task.split, task.difficulty), 0) + 1
    assert counts == {(s, level.name): n // 3 for s, n in (("train", 1050), ("test", 210)) for level in LEVELS}
    seeds = {split: {task.params["seed"] for task in tasks if task.split == split} for split in ("train", "test")}
    assert not seeds["train"] & seeds["test"] and hygiene(tasks) == []
    assert len(list(folder(games).glob("*.z8"))) == 1  # the listing made nothing (the one is the probe's)


def test_a_game_is_the_same_bytes_from_the_same_seed(server: LiveServer, games: Path, tmp_path: Path) -> None:
    again = ensure_game_now(tmp_path, SAMPLE[0], LEVELS[0], 1, timeout=300)  # made again, elsewhere
    made = [folder(games) / again.name, again]
    digests = {hashlib.sha256(game.read_bytes() + game.with_suffix(".json").read_bytes()).hexdigest() for game in made}
    assert len(digests) == 1


def test_the_walkthroughs_of_a_seeded_sample_win_through_the_one_path(server: LiveServer) -> None:
    tasks = [environment.tasks().get(task_id) for task_id in SAMPLE]
    report = check_task_set(environment, tasks=tasks)
    assert report.ok and report.played == 3, (report.failures, report.problems)
    assert report.counts == {"train": {"easy": 1, "hard": 1, "medium": 1}}


def test_an_episode_over_http_shows_the_game_and_its_admissible_commands(server: LiveServer) -> None:
    task = environment.tasks().get(SAMPLE[1])
    walkthrough = [arguments["action"] for _, arguments in solve(task)]
    with httpx.Client(base_url=server.url, timeout=60) as http:
        first = http.post("/reset", json={"task_id": task.id}).json()
        opening = first["observation"]["structured_content"]["opening"]
        assert "TextWorld" in opening["observation"] and walkthrough[0] in opening["valid_actions"]
        assert opening["info"]["max_score"] >= 1 and opening["info"]["score"] == 0
        http.delete(f"/episodes/{first['episode_id']}")
        episode, answers = play(http, task.id, walkthrough)
        assert sum(answer["reward"] for answer in answers) == pytest.approx(1.0) and answers[-1]["done"]
        assert answers[-1]["observation"]["structured_content"]["info"]["won"] is True
        assert http.get("/state", headers={"X-Episode-Id": episode}).json()["total_reward"] == pytest.approx(1.0)


@pytest.mark.anyio
async def test_the_same_game_over_mcp(server: LiveServer) -> None:
    walkthrough = [arguments["action"] for _, arguments in solve(environment.tasks().get(SAMPLE[0]))]
    async with httpx.AsyncClient(base_url=server.url) as http:
        episode = (await http.post("/reset", json={"task_id": SAMPLE[0]})).json()["episode_id"]
    async with (
        httpx2.AsyncClient(headers={"X-Episode-Id": episode}, timeout=60) as http2,
        Client(streamable_http_client(server.mcp_url, http_client=http2)) as client,  # type: ignore[arg-type]
    ):
        for action in walkthrough:
            answer = await client.call_tool("act", {"action": action})
            assert not answer.is_error
    assert answer.structured_content is not None and answer.structured_content["info"]["won"] is True
    async with httpx.AsyncClient(base_url=server.url) as http:
        state = (await http.get("/state", headers={"X-Episode-Id": episode})).json()
    assert state["total_reward"] == pytest.approx(1.0) and state["done"]


def test_forks_replay_and_the_world_passes_the_determinism_audit(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        source = http.post("/reset", json={"task_id": SAMPLE[2]}).json()["episode_id"]
        act(http, source, "look")
        act(http, source, "inventory")
        fork = http.post(f"/episodes/{source}/fork").json()
        assert fork["info"]["via"] == "replay" and fork["info"]["step_count"] == 2
        assert view(act(http, fork["episode_id"], "look")) == view(act(http, source, "look"))
    actions = [("act", {"action": a}) for a in ("look", "inventory", "go north", "open door", "examine door")]
    assert audit_determinism(environment, actions=actions, sequences=2, max_length=3) == []


def test_eval_and_rollout_with_the_scripted_policy_win_and_are_recorded(server: LiveServer, tmp_path: Path) -> None:
    tasks = [arg for task_id in SAMPLE for arg in ("--task", task_id)]
    done = subprocess.run(
        [*CLI, "eval", server.url, "-k", "1", "--split", "train", "--no-progress", "--out", str(tmp_path / "eval"),
         *tasks],
        capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    overall = json.loads((tmp_path / "eval" / "results.json").read_text())["overall"]
    assert (overall["tasks"], overall["errors"], overall["pass^k"]["1"]) == (3, 0, 1.0)
    rolled = subprocess.run(
        [*CLI, "rollout", server.url, "--policy", "scripted", "-n", "2", "--no-progress"],
        capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert rolled.returncode == 0, rolled.stderr
    records = list(iter_records(server.runtime.settings.trajectories_url))
    won = [r for r in records if r["task_id"] in SAMPLE and r["reward"] == pytest.approx(1.0)]
    assert len(won) >= 5 and all(r["tools"][0]["function"]["name"] == "act" for r in won)
    assert all("-= " in r["messages"][1]["content"] for r in won)  # the prompt as recorded shows the first room


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def test_a_person_plays_a_game_on_the_web_page(server: LiveServer) -> None:
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail("chromium (scripts/debian-packages) must be installed in CI")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")
    from playwright.sync_api import sync_playwright

    walkthrough = [arguments["action"] for _, arguments in solve(environment.tasks().get(SAMPLE[0]))]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{server.url}/web")
            page.wait_for_selector(f"#task option[value='{SAMPLE[0]}']", state="attached")
            page.select_option("#task", SAMPLE[0])
            page.click("#reset")
            page.wait_for_function("document.querySelector('#prompt').textContent.includes('TextWorld')")
            for step, action in enumerate(walkthrough, 1):
                page.click("#tool-act summary") if step == 1 else None
                page.fill("#arg-act-action", action)
                page.click("#tool-act button.call")
                page.wait_for_selector(f"#log li[data-step='{step}']")
            page.wait_for_function("document.querySelector('#state').dataset.done === 'true'")
            assert page.get_attribute("#state", "data-total-reward") == "1"
        finally:
            browser.close()
