"""The Gymnasium wrapper against a live server: check_env, the 5-tuple, invalid actions, limits, seeds."""

from __future__ import annotations

import json
from collections.abc import Iterator

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from openenv_mcp import ResetNeeded
from openenv_mcp.servers.sql import environment
from openenv_mcp.training.gym import ENV_ID, AnyText, ToolEnv, parse_action
from tests.support import LiveServer, live_server

COUNT_CUSTOMERS = {"tool": "submit_answer", "arguments": {"sql": "SELECT COUNT(*) FROM customers"}}


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_steps=4) as running:
        yield running


@pytest.fixture
def env(server: LiveServer) -> Iterator[ToolEnv]:
    made = ToolEnv(server.url)
    yield made
    made.close()


def test_check_env_passes_on_the_registered_env(server: LiveServer) -> None:
    made = gymnasium.make(ENV_ID, base_url=server.url)
    try:
        check_env(made.unwrapped)  # any warning it raises fails this test (pytest turns warnings into errors)
    finally:
        made.close()
    assert len(server.runtime.episodes) == 0  # every episode the checker opened was closed


def test_an_episode_as_a_five_tuple(env: ToolEnv) -> None:
    observation, info = env.reset(seed=1, options={"task_id": "sql-001"})
    assert observation.startswith("How many customers are there in total?")
    assert (info["task_id"], info["split"], info["seed"], info["max_steps"], info["step_count"]) == (
        "sql-001",
        "train",
        1,
        4,
        0,
    )
    assert observation in env.observation_space
    observation, reward, terminated, truncated, info = env.step('{"tool": "list_tables"}')
    assert "customers" in json.loads(observation)["result"]
    assert (reward, terminated, truncated, info["step_count"], info["invalid_action"]) == (0.0, False, False, 1, False)
    observation, reward, terminated, truncated, info = env.step(json.dumps(COUNT_CUSTOMERS))
    assert (reward, terminated, truncated, info["total_reward"]) == (1.0, True, False, 1.0)
    assert info["structured_content"]["rows"] == [[60]]
    with pytest.raises(ResetNeeded, match="call reset"):
        env.step('{"tool": "list_tables"}')


def test_a_dict_action_is_accepted(env: ToolEnv) -> None:
    env.reset(options={"task_id": "sql-001"})
    _, reward, terminated, _, _ = env.step(COUNT_CUSTOMERS)
    assert (reward, terminated) == (1.0, True)


def test_invalid_actions_are_error_observations_that_count_toward_the_limit(env: ToolEnv) -> None:
    env.reset(seed=3)
    observation, reward, terminated, truncated, info = env.step("submit it")
    assert observation.startswith("Not JSON") and '{"tool": NAME, "arguments": {...}}' in observation
    assert (reward, terminated, truncated, info["is_error"], info["invalid_action"]) == (0.0, False, False, True, True)
    observation, *_ = env.step('{"tool": "drop_table", "arguments": {}}')
    assert observation.startswith("No tool 'drop_table' on server 'sql'; available:")
    observation, *_ = env.step('{"tool": "run_query", "arguments": {"sql": 7}}')
    assert observation.startswith("Invalid arguments for tool 'run_query'")
    observation, reward, terminated, truncated, info = env.step('["list_tables"]')
    assert (terminated, truncated, info["step_count"]) == (False, True, 0)  # 4 actions, none reached the server


def test_the_step_limit_truncates(env: ToolEnv) -> None:
    env.reset(seed=4)
    for _ in range(3):
        assert env.step('{"tool": "list_tables"}')[2:4] == (False, False)
    _, _, terminated, truncated, info = env.step('{"tool": "list_tables"}')
    assert (terminated, truncated, info["step_count"]) == (False, True, 4)


def test_seeded_resets_are_reproducible(env: ToolEnv) -> None:
    first, info = env.reset(seed=11)
    assert info["seed"] == 11  # the server seed is the one given
    then = [env.reset()[1]["seed"] for _ in range(3)]
    assert env.reset(seed=11)[0] == first
    assert [env.reset()[1]["seed"] for _ in range(3)] == then


def test_long_observations_are_cut_to_the_space(server: LiveServer) -> None:
    env = ToolEnv(server.url, max_observation_length=60)
    try:
        observation, info = env.reset(seed=0)
        assert 55 <= len(observation) <= 60 and observation.endswith("more characters]") and info["observation_cut"]
        assert info["structured_content"]["prompt"].startswith(observation.split("\n[cut:")[0])
        assert observation in env.observation_space
    finally:
        env.close()


def test_reset_and_close_free_the_server_episodes(server: LiveServer) -> None:
    before = len(server.runtime.episodes)
    env = ToolEnv(server.url)
    env.reset(seed=1)
    env.reset(seed=2)
    assert len(server.runtime.episodes) == before + 1
    env.close()
    env.close()
    assert len(server.runtime.episodes) == before


def test_step_before_reset_is_rejected(env: ToolEnv) -> None:
    with pytest.raises(ResetNeeded):
        env.step('{"tool": "list_tables"}')


def test_any_text_holds_free_text_of_the_right_length() -> None:
    space = AnyText(5)
    assert "é\n{}" in space and "" in space and "toolong" not in space and 5 not in space
    assert all(len(space.sample()) <= 5 for _ in range(20))


def test_parse_action_names_what_is_expected() -> None:
    assert parse_action('{"tool": "t"}') == ("t", {})
    assert parse_action({"tool": "t", "arguments": {"a": 1}}) == ("t", {"a": 1})
    for bad in ['{"arguments": {}}', '{"tool": "t", "arguments": [1]}', "[]", "{"]:
        with pytest.raises(Exception, match=r'\{"tool": NAME'):
            parse_action(bad)
