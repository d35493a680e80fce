"""The typed clients: results are typed, server errors become the package's exceptions."""

from __future__ import annotations

import pytest

from openenv_mcp import (
    AsyncEnvClient,
    EnvClient,
    EpisodeFinished,
    EpisodeNotFound,
    InvalidToolArguments,
    ResetNeeded,
    StepResult,
    ToolNotFound,
)
from tests.support import LiveServer


def test_sync_client_runs_an_episode(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        first = env.reset(task_id="sql-001")
        assert isinstance(first, StepResult) and "customer" in first.observation.text
        result = env.step("run_query", {"sql": "SELECT COUNT(*) FROM customers"})
        assert result.observation.structured_content == {
            "columns": ["count"],
            "rows": [[60]],
            "row_count": 1,
            "truncated": False,
            "note": None,
        }
        final = env.step("submit_answer", {"rows": [[60]]})
        assert (final.reward, final.done) == (1.0, True)
        state = env.state()
        assert (state.step_count, state.total_reward, state.done) == (2, 1.0, True)
        with pytest.raises(EpisodeFinished, match="POST /reset"):
            env.step("list_tables")
        episode = env.episode_id
    assert episode is not None
    with EnvClient(sim_server.url) as other, pytest.raises(EpisodeNotFound):
        other.state(episode_id=episode)  # the context manager closed it


def test_sync_client_raises_typed_errors(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        with pytest.raises(ResetNeeded, match="reset"):
            env.step("list_tables")
        env.reset(seed=2)
        with pytest.raises(ToolNotFound, match="available"):
            env.step("nope")
        with pytest.raises(InvalidToolArguments, match="sql"):
            env.step("run_query", {"sql": ["x"]})
        assert env.tasks(split="test").splits["test"] >= 5


@pytest.mark.anyio
async def test_async_client_runs_episodes_concurrently(sim_server: LiveServer) -> None:
    import anyio

    rewards: list[float] = []

    async def one(task: str, sql: str) -> None:
        async with AsyncEnvClient(sim_server.url) as env:
            await env.reset(task_id=task)
            rewards.append((await env.step("submit_answer", {"sql": sql})).reward)

    async with anyio.create_task_group() as group:
        group.start_soon(one, "sql-001", "SELECT COUNT(*) FROM customers")
        group.start_soon(one, "sql-001", "SELECT 0")
    assert sorted(rewards) == [0.0, 1.0]


def test_step_batch_through_the_client(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as one, EnvClient(sim_server.url) as two:
        a = one.reset(task_id="sql-001").episode_id
        b = two.reset(seed=5).episode_id
        items = one.step_batch([(a, "submit_answer", {"rows": [[60]]}), (b, "list_tables", None), (b, "nope", {})])
    assert [item.ok for item in items] == [True, True, False]
    assert items[0].result is not None and items[0].result.reward == 1.0
    assert items[2].error is not None and items[2].error.code == "tool_not_found"


@pytest.mark.anyio
async def test_both_clients_list_tasks_by_split_difficulty_and_text_a_page_at_a_time(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        page = env.tasks(split="test", difficulty="hard", offset=5, limit=10)
        words = env.tasks(query="never placed an order", limit=3)
    assert len(page.tasks) == 10 and page.offset == 5 and page.total > 15
    assert {(t.split, t.difficulty) for t in page.tasks} == {("test", "hard")}
    assert page.splits["test"] > page.total and set(page.difficulties) == {"easy", "medium", "hard"}
    assert words.tasks and all("never placed an order" in t.prompt.casefold() for t in words.tasks)
    async with AsyncEnvClient(sim_server.url) as env:
        again = await env.tasks(split="test", difficulty="hard", offset=5, limit=10)
        whole = await env.tasks(split="test", difficulty="hard")
    assert again == page and whole.tasks[5:15] == page.tasks and len(whole.tasks) == whole.total == page.total


def test_a_step_sent_again_with_its_id_is_answered_not_applied_twice(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(task_id="sql-001")
        first = env.step("submit_answer", {"rows": [[60]]}, step_id="s-1")
        again = env.step("submit_answer", {"rows": [[60]]}, step_id="s-1")  # its answer was lost: sent again
        assert again == first and (first.reward, first.done) == (1.0, True)
        state = env.state()
        assert (state.step_count, state.total_reward) == (1, 1.0)  # once, not twice (a second would be refused)
        with pytest.raises(EpisodeFinished):
            env.step("submit_answer", {"rows": [[60]]}, step_id="s-2")  # a new step id is a new step


def test_a_batch_sent_again_with_its_step_ids_is_answered_not_applied_twice(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as one, EnvClient(sim_server.url) as two:
        a, b = one.reset(task_id="sql-001").episode_id, two.reset(task_id="sql-001").episode_id
        batch = [
            (a, "run_query", {"sql": "SELECT COUNT(*) FROM customers"}, "a-1"),
            (b, "list_tables", None, "b-1"),
            (b, "run_query", {"sql": 5}, "b-2"),  # refused: it did not count, so sent again it runs again
        ]
        first = one.step_batch(batch)
        again = one.step_batch(batch)  # its answer was lost: the same batch, the same ids
        assert [item.ok for item in first] == [item.ok for item in again] == [True, True, False]
        assert [item.result for item in again[:2]] == [item.result for item in first[:2]]
        assert again[2].error is not None and again[2].error.code == "invalid_arguments"
        assert (one.state(episode_id=a).step_count, one.state(episode_id=b).step_count) == (1, 1)
        fresh = one.step_batch([(a, "list_tables", None, "a-2"), (b, "list_tables", None)])  # a new id, no id: run
        assert [item.result.info["step_count"] for item in fresh if item.result is not None] == [2, 2]


def test_a_failed_step_is_forgotten_so_sending_it_again_runs_it(sim_server: LiveServer) -> None:
    with EnvClient(sim_server.url) as env:
        env.reset(task_id="sql-001")
        for _ in range(2):
            with pytest.raises(InvalidToolArguments):
                env.step("run_query", {"sql": 5}, step_id="bad")
        assert env.step("run_query", {"sql": "SELECT 1"}, step_id="good").info["step_count"] == 1
