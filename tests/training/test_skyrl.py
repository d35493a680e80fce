"""SkyRL: our BaseTextEnv made through skyrl-gym's own registry (by env class, per row) and stepped as its
generator steps environments, against a sim server started here.

skyrl-gym lives in a venv of its own, ``.venv/skyrl`` (see tests/interop/skyrl-requirements.txt), made on first
use and reused while that file is unchanged; examples/skyrl_rows.py is what runs there.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.servers.sql import environment as sql
from tests.support import ClosedEpisodes, LiveServer, live_server, peer_venv

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "tests" / "interop" / "skyrl-requirements.txt"
VENV = ROOT / ".venv" / "skyrl"
installs_skyrl = pytest.mark.timeout(600)  # the first use installs skyrl-gym (about 1-2 min here)


@pytest.fixture(scope="session")
def skyrl_python() -> Path:
    return peer_venv(VENV, REQUIREMENTS, "skyrl-gym (pip install skyrl-gym)", timeout=500)


@pytest.fixture(scope="module")
def played(skyrl_python: Path) -> Iterator[tuple[list[dict[str, Any]], ClosedEpisodes, LiveServer]]:
    rewards = ClosedEpisodes()
    with live_server(sql, mode="sim") as server:
        server.runtime.observe(rewards)
        done = subprocess.run(
            [str(skyrl_python), str(ROOT / "examples" / "skyrl_rows.py"), server.url],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-4000:]
        assert len(server.runtime.episodes) == 0  # close() closed every episode
        yield json.loads(done.stdout), rewards, server


@installs_skyrl
def test_rows_select_the_env_by_class_and_play_their_task(
    played: tuple[list[dict[str, Any]], ClosedEpisodes, Any],
) -> None:
    rows, rewards, _ = played
    solved, unknown, malformed, _down = rows
    prompts = {t.id: t.prompt for t in sql.tasks()}
    assert [r["info"]["task_id"] for r in (solved, unknown, malformed)] == ["sql-001", "sql-002", "sql-001"]
    assert solved["info"]["seed"] == 1
    for row in (solved, unknown, malformed):
        assert row["conversation"][-1] == {"role": "user", "content": prompts[row["info"]["task_id"]]}
    listed, submitted = solved["steps"]
    assert '"customers"' in listed["observations"][0]["content"] and listed["observations"][0]["role"] == "tool"
    assert (listed["reward"], listed["done"]) == (0.0, False)
    assert (submitted["reward"], submitted["done"], submitted["observations"]) == (1.0, True, [])
    assert submitted["metadata"]["total_reward"] == 1.0
    for row in (solved, unknown, malformed):  # the rewards SkyRL saw are the server's
        assert sum(step["reward"] for step in row["steps"]) == rewards.rewards[row["episode_id"]]


@installs_skyrl
def test_refused_and_malformed_calls_are_answered_and_an_answer_ends_the_episode(
    played: tuple[list[dict[str, Any]], ClosedEpisodes, Any],
) -> None:
    rows, _, _ = played
    _, unknown, malformed, down = rows
    refused, answered = unknown["steps"]
    assert refused["observations"][0]["content"].startswith("No tool 'drop_everything' on server 'sql'; available")
    assert (refused["reward"], refused["done"]) == (0.0, False)
    assert (answered["done"], answered["metadata"]["tool_calls"]) == (True, 0)  # words, no call: the end
    assert malformed["steps"][0]["observations"][0]["content"].startswith("Not JSON")
    assert malformed["steps"][1]["reward"] == 1.0
    assert down["down"].startswith("BackendUnavailable: Cannot reach the openenv-mcp server at http://127.0.0.1:9")


def test_only_the_skyrl_module_imports_skyrl_gym() -> None:
    sources = [*(ROOT / "openenv_mcp").rglob("*.py"), *(ROOT / "servers").rglob("*.py")]
    importers = sorted(str(p.relative_to(ROOT)) for p in sources if "import skyrl_gym" in p.read_text()
                       or "from skyrl_gym" in p.read_text())  # fmt: skip
    assert importers == ["openenv_mcp/training/skyrl.py"]
