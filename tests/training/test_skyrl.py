"""SkyRL: our BaseTextEnv made through skyrl-gym's own registry (by env class, per row) and stepped as its
generator steps environments, against a sim server started here.

skyrl-gym lives in a venv of its own, ``.venv/skyrl`` (see tests/interop/skyrl-requirements.txt), made on first
use and reused while that file is unchanged; examples/skyrl_rows.py is what runs there.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from servers.sql import environment as sql
from tests.support import LiveServer, live_server, require_service

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "tests" / "interop" / "skyrl-requirements.txt"
VENV = ROOT / ".venv" / "skyrl"
installs_skyrl = pytest.mark.timeout(600)  # the first use installs skyrl-gym (about 1-2 min here)


@pytest.fixture(scope="session")
def skyrl_python() -> Path:
    python = VENV / "bin" / "python"
    digest = hashlib.sha1(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    stamp = VENV / f".installed-{digest}"
    if not stamp.exists():
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
        quiet: dict[str, Any] = {"check": True, "capture_output": True, "text": True}
        try:
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], **quiet, timeout=120)
            subprocess.run([*pip, "-e", str(ROOT), "-r", str(REQUIREMENTS)], **quiet, timeout=500)
        except subprocess.CalledProcessError as exc:
            require_service("skyrl-gym (pip install skyrl-gym)", RuntimeError(exc.stderr[-2000:]))
        except subprocess.TimeoutExpired as exc:
            require_service("skyrl-gym (pip install skyrl-gym)", exc)
        stamp.touch()
    return python


class _Rewards:
    """Each episode's total reward on the server when it is closed."""

    def __init__(self) -> None:
        self.closed: dict[str, float] = {}

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def on_reset(self, episode: Any, observation: Any) -> None: ...

    def on_step(self, episode: Any, call: Any, outcome: Any, seconds: float) -> None: ...

    def on_close(self, episode: Any) -> None:
        self.closed[episode.id] = episode.total_reward


@pytest.fixture(scope="module")
def played(skyrl_python: Path) -> Iterator[tuple[list[dict[str, Any]], _Rewards, LiveServer]]:
    rewards = _Rewards()
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
def test_rows_select_the_env_by_class_and_play_their_task(played: tuple[list[dict[str, Any]], _Rewards, Any]) -> None:
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
        assert sum(step["reward"] for step in row["steps"]) == rewards.closed[row["episode_id"]]


@installs_skyrl
def test_refused_and_malformed_calls_are_answered_and_an_answer_ends_the_episode(
    played: tuple[list[dict[str, Any]], _Rewards, Any],
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
