"""Rollouts: concurrent episodes with scripted, OpenAI-compatible and user policies, and their summary."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_mcp.rollout import (
    Batch,
    ChatModel,
    EpisodeResult,
    OpenAIPolicy,
    RolloutEpisode,
    Summary,
    discover,
    run_rollouts,
    scripted_policy,
)
from openenv_mcp.servers.sql import environment
from openenv_mcp.trajectories import iter_records, openai_tools
from tests.support import LiveServer, live_server, serve_app
from tests.support.buggy_env import buggy
from tests.support.model import TASKS, ScriptedModel, expected_reward, gold

pytestmark = pytest.mark.anyio
FAILING = TASKS.pick(task_id=None, split=None, seed=101).id  # the task the scripted model fails on (answers 500)
CLI = [sys.executable, "-m", "openenv_mcp.cli"]


async def gold_policy(episode: RolloutEpisode) -> None:
    """A user policy (``--policy tests.rollout.test_rollout:gold_policy``): submit the gold query at once."""
    await episode.step("submit_answer", {"sql": gold(episode.task_id)})


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[str, ScriptedModel]]:
    scripted = ScriptedModel(fail_task=FAILING)
    with serve_app(scripted.app) as url:
        yield f"{url}/v1", scripted


@pytest.fixture(scope="module")
def sql_server() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=64) as server:
        yield server


def rollout(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "rollout", *args], capture_output=True, text=True, timeout=120, env={**os.environ, **env}, check=False
    )


def summary_line(out: str, label: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(label))[len(label) :].strip()


# ---------------------------------------------------------------------------------------------------


async def test_the_openai_policy_runs_concurrent_episodes_with_the_right_rewards(
    sql_server: LiveServer, model: tuple[str, ScriptedModel]
) -> None:
    base_url, scripted = model
    seeds = [s for s in range(40) if TASKS.pick(task_id=None, split=None, seed=s).id != FAILING]
    async with OpenAIPolicy(ChatModel(base_url=base_url, model="scripted", api_key="sk-test")) as policy:
        one = await run_rollouts(sql_server.url, policy, episodes=1, seed=seeds[0])
        concurrent = await run_rollouts(sql_server.url, policy, episodes=12, seed=100, batch=Batch(concurrency=4))
    [result] = one.results
    assert (result.reward, result.steps, result.done, result.error) == (expected_reward(seeds[0]), 2, True, None)
    failing = {r.seed for r in concurrent.results if r.task_id == FAILING}
    assert [r.seed for r in concurrent.results] == list(range(100, 112))
    for result in concurrent.results:
        if result.seed in failing:
            assert result.error is not None and "answered 500" in result.error
        else:
            assert (result.reward, result.steps, result.error) == (expected_reward(result.seed), 2, None)
    assert len(sql_server.runtime.episodes) == 0  # every episode was closed

    first = scripted.requests[0]
    assert first["authorization"] == "Bearer sk-test" and first["model"] == "scripted"
    assert first["tools"] == openai_tools(
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in environment.tools
    )
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    second = next(r for r in scripted.requests if len(r["messages"]) == 4)
    refusal = second["messages"][3]
    assert refusal["role"] == "tool" and refusal["tool_call_id"] == "call_0"
    assert "No tool 'drop_everything' on server 'sql'; available:" in refusal["content"]


async def test_a_server_error_mid_run_is_reported_in_the_summary() -> None:
    with live_server(buggy, mode="sim") as server:
        summary = await run_rollouts(
            server.url, scripted_policy(buggy.examples), episodes=6, batch=Batch(concurrency=3)
        )
    assert [r.seed for r in summary.errors] == [2]
    crashed = "EnvironmentCrashed: Tool 'poke' crashed inside the server (RuntimeError: the backend of seed 2 is"
    assert (summary.errors[0].error or "").startswith(crashed)
    assert [r.reward for r in summary.results if r.error is None] == [1.0] * 5
    table = summary.render()
    assert "6 (5 scored, 1 infra failures, 1 errors)" in table and f"1 x {crashed}" in table and "(seeds 2)" in table


async def test_a_run_stopped_mid_way_leaves_no_episode_open() -> None:
    """A Ctrl-C under ``openenv-mcp rollout`` cancels the run while episodes open, play and close."""
    import asyncio

    async def stalls(episode: RolloutEpisode) -> None:
        await episode.step("list_tables", {})
        await asyncio.sleep(30)

    with live_server(environment, mode="sim") as server:
        for wait in (0.0, 0.005, 0.02, 0.3):  # while resets are in flight, during steps, all playing
            run = asyncio.ensure_future(
                run_rollouts(server.url, stalls, episodes=6, seed=1, batch=Batch(concurrency=3))
            )
            await asyncio.sleep(wait)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert len(server.runtime.episodes) == 0, f"left open when stopped after {wait} s"


async def test_discover_lists_the_tools_an_mcp_agent_sees(sql_server: LiveServer) -> None:
    info = await discover(sql_server.url)
    assert (info.name, info.description) == ("sql", environment.description)
    assert [tool["name"] for tool in info.tools] == ["list_tables", "describe_table", "run_query", "submit_answer"]
    assert info.tools[2]["inputSchema"] == environment.tools.get("run_query").input_schema


def test_summary_figures() -> None:
    results = [EpisodeResult(seed=i, reward=r, steps=2, latencies=[i / 1000, 0.001]) for i, r in enumerate([1, 0.5])]
    results.append(EpisodeResult(seed=2, error="OpenEnvError: down", end_reason="server_error"))
    summary = Summary(results, seconds=2.0, success_threshold=0.5)
    assert (summary.mean_reward, summary.success_rate, summary.mean_steps) == (0.75, 1.0, 2.0)  # infra left out
    assert (summary.latency(0.5), summary.latency(0.99)) == (0.001, 0.001)
    table = summary.render()
    assert "episodes      3 (2 scored, 1 infra failures, 1 errors)" in table
    assert "success rate  100.0% (reward >= 0.5)" in table
    assert "throughput    1.5 episodes/s, 2.0 steps/s" in table
    assert "1 x OpenEnvError: down (seeds 2)" in table


# the command line ------------------------------------------------------------------------------------


def test_rollout_cli_with_an_openai_compatible_model(sql_server: LiveServer, model: tuple[str, ScriptedModel]) -> None:
    base_url, _ = model
    seeds = range(200, 206)
    done = rollout(
        sql_server.url, "--policy", "openai", "--model", "scripted", "--base-url", base_url,
        "--episodes", "6", "--concurrency", "3", "--seed", "200", OPENAI_API_KEY="sk-env",
    )  # fmt: skip
    failing = [s for s in seeds if TASKS.pick(task_id=None, split=None, seed=s).id == FAILING]
    assert done.returncode == (1 if failing else 0), done.stderr
    rewards = [expected_reward(s) for s in seeds if s not in failing]
    n = len(failing)
    assert summary_line(done.stdout, "episodes") == f"6 ({6 - n} scored, {n} infra failures, {n} errors)"
    assert summary_line(done.stdout, "mean reward") == f"{sum(rewards) / len(rewards):.3f}"
    assert summary_line(done.stdout, "mean steps") == "2.00"
    assert re.search(r"p50 [\d.]+ ms, p99 [\d.]+ ms", summary_line(done.stdout, "step latency"))
    assert "6/6" in done.stderr  # the progress bar


def test_rollout_cli_reports_a_failing_model_and_exits_1(
    sql_server: LiveServer, model: tuple[str, ScriptedModel]
) -> None:
    base_url, _ = model
    seed = 101  # FAILING's seed
    done = rollout(
        sql_server.url, "--policy", "openai", "--model", "m", "--base-url", base_url, "--no-progress",
        "--episodes", "1", "--seed", str(seed),
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert summary_line(done.stdout, "episodes") == "1 (0 scored, 1 infra failures, 1 errors)"
    assert "PolicyError: The chat endpoint" in done.stdout and "answered 500" in done.stdout


def test_rollout_cli_with_a_user_policy(sql_server: LiveServer) -> None:
    policy = "tests.rollout.test_rollout:gold_policy"
    done = rollout(sql_server.url, "--policy", policy, "-n", "8", "-c", "4", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert summary_line(done.stdout, "mean reward") == "1.000"
    assert summary_line(done.stdout, "success rate") == "100.0% (reward >= 1)"


def test_rollout_by_name_starts_its_own_server_which_records_trajectories(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'rollout.db'}"
    done = rollout("sql", "--episodes", "5", "--concurrency", "2", OPENENV_TRAJECTORIES=store)
    assert done.returncode == 0, done.stderr
    assert summary_line(done.stdout, "episodes") == "5 (5 scored, 0 infra failures, 0 errors)"
    assert summary_line(done.stdout, "mean steps") == "3.00"  # the sql environment's three examples
    records = list(iter_records(store))  # the server stopped cleanly: everything was written
    assert len(records) == 5 and all(len(r["rewards"]) == 3 for r in records)
    assert sorted(r["seed"] for r in records) == [0, 1, 2, 3, 4]  # episodes run two at a time: any order


def test_rollout_captures_the_model_tokens_and_the_export_carries_them_exactly(tmp_path: Path) -> None:
    scripted = ScriptedModel(tokens=True)
    store = f"sqlite:///{tmp_path / 'capture.db'}"
    with serve_app(scripted.app) as url:  # the rollout starts a sim server recording into the store it writes to
        done = rollout(
            "sql", "--policy", "openai", "--model", "m", "--base-url", f"{url}/v1", "--capture-tokens",
            "--episodes", "3", "--concurrency", "2", "--seed", "10", "--no-progress", OPENENV_TRAJECTORIES=store,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"recorded 9 model turns of 3 episodes (9 with their tokens) into {store}" in done.stderr
    assert "prompt ids from the answer" in done.stderr  # the pre-flight check saw where the tokens are
    assert all(r["logprobs"] is True and r["return_token_ids"] is True for r in scripted.requests)
    exported = subprocess.run(
        [*CLI, "trajectories", "export", "--url", store], capture_output=True, text=True, timeout=60, check=True
    )
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert sorted(r["seed"] for r in records) == [10, 11, 12]  # two at a time: any order
    answered = {json.dumps(c["prompt_ids"]): c for c in scripted.captured}
    for record in records:
        turns = record["turns"]
        assert [t["finish_reason"] for t in turns] == ["tool_calls"] * 3 and {t["model"] for t in turns} == {"scripted"}
        assert record["end_reason"] == "done" and len(record["model_turns"]) == 3
        for turn in turns:  # each call's ids and logprobs, byte for byte as the model server sent them
            sent = answered[json.dumps(turn["prompt_ids"])]
            assert json.dumps(turn["completion_ids"]) == json.dumps(sent["completion_ids"])
            assert json.dumps(turn["logprobs"]) == json.dumps(sent["logprobs"])
        tokens = record["tokens"]  # the episode as one sequence: every turn's prompt extends the last one
        assert tokens["prompt_ids"] == turns[0]["prompt_ids"]
        whole = turns[-1]["prompt_ids"] + turns[-1]["completion_ids"]
        assert tokens["prompt_ids"] + tokens["completion_ids"] == whole
        mask, logprobs = tokens["completion_mask"], tokens["completion_logprobs"]
        assert len(mask) == len(logprobs) == len(tokens["completion_ids"])
        model_tokens = [t for t, m in zip(tokens["completion_ids"], mask, strict=True) if m == 1]
        assert model_tokens == [token for turn in turns for token in turn["completion_ids"]]
        assert [lp for lp, m in zip(logprobs, mask, strict=True) if m == 1] == [
            lp for turn in turns for lp in turn["logprobs"]
        ]
        environment_text = bytes(
            t - 1000 for t, m in zip(tokens["completion_ids"], mask, strict=True) if t >= 1000 and not m
        )
        assert b"No tool 'drop_everything'" in environment_text and b"categories" in environment_text


def test_capture_from_an_endpoint_that_reports_no_tokens_is_refused_before_any_episode(
    sql_server: LiveServer, model: tuple[str, ScriptedModel], tmp_path: Path
) -> None:
    base_url, scripted = model
    before = len(scripted.requests)
    store = f"sqlite:///{tmp_path / 'capture.db'}"
    done = rollout(
        sql_server.url, "--policy", "openai", "--model", "m", "--base-url", base_url, "--capture-tokens",
        "--episodes", "2", "--seed", "300", "--no-progress", OPENENV_TRAJECTORIES=store,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "The model endpoint failed its pre-flight check" in done.stderr
    assert "No logprobs.content[].logprob in the answer: the chat endpoint" in done.stderr
    assert len(scripted.requests) == before  # not one episode was played


def test_rollout_cli_explains_bad_input() -> None:
    done = rollout("nosuch")
    assert done.returncode == 2 and "No server 'nosuch'; installed servers:" in done.stderr
    done = rollout("http://127.0.0.1:9", "--policy", "nonsense")
    assert done.returncode == 2 and "not 'scripted', 'openai' or 'module:callable'" in done.stderr
    done = rollout("http://127.0.0.1:9", "--policy", "openai")
    assert done.returncode == 2 and "--policy openai needs --base-url" in done.stderr
    done = rollout("http://127.0.0.1:9")
    assert done.returncode == 2 and "Cannot reach the MCP endpoint" in done.stderr and "Traceback" not in done.stderr
    done = rollout("http://127.0.0.1:9", "--capture-tokens")
    assert (
        done.returncode == 2 and "--capture-tokens records a model's tokens: use it with --policy openai" in done.stderr
    )
    done = rollout(
        "http://127.0.0.1:9", "--policy", "openai", "--model", "m", "--base-url", "http://x/v1", "--capture-tokens"
    )
    assert done.returncode == 2 and "OPENENV_TRAJECTORIES=off" in done.stderr  # as the tests run
