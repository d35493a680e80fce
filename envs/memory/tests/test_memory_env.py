"""Tests of memory: conformance, a sim episode through the trainer door, prod on a real SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from mcp import Client
from memory_env import environment

from openenv_mcp import EnvClient
from openenv_mcp.authoring.testing import serving
from openenv_mcp.authoring.validate import validate_environment


def test_the_environment_passes_the_conformance_check() -> None:
    report = validate_environment(environment)
    assert report.ok, report.render()


def test_a_sim_episode_is_solved_and_rewarded() -> None:
    with serving(environment) as url, EnvClient(url) as env:
        first = env.reset(task_id="meeting-create", seed=3)
        assert "meeting" in first.observation.text
        result = env.step("write_note", {"title": "meeting", "body": "Review on Tuesday at 10"})
        assert (result.reward, result.done) == (1.0, True)
        assert env.state().total_reward == 1.0


def test_a_wrong_answer_earns_nothing() -> None:
    with serving(environment) as url, EnvClient(url) as env:
        env.reset(task_id="meeting-create", seed=3)
        result = env.step("write_note", {"title": "meeting", "body": "some day"})
        assert (result.reward, result.done) == (0.0, False)


def test_prod_reads_and_writes_a_real_sqlite_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database = tmp_path / "notes.db"
    monkeypatch.setenv("MEMORY_DATABASE", str(database))

    async def session(url: str) -> tuple[object, object]:
        async with Client(f"{url}/mcp") as client:
            written = await client.call_tool("write_note", {"title": "hello", "body": "from prod"})
            read = await client.call_tool("read_note", {"title": "hello"})
            return written.structured_content, read.structured_content

    with serving(environment, mode="prod") as url:
        written, read = anyio.run(session, url)
    assert written == read == {"title": "hello", "body": "from prod", "tags": []}
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT title, body FROM notes").fetchall() == [("hello", "from prod")]
