"""docs/training.md and its examples run as shown: every bash and python snippet, the record, the summary."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from openenv_mcp import Settings
from openenv_mcp.rollout import EpisodeResult, Summary
from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.sql import environment
from openenv_mcp.trajectories import iter_records, record_trajectories
from tests.support import LiveServer, live_server, serve_app
from tests.support.model import ScriptedModel

REPO = Path(__file__).parent.parent
DOC = (REPO / "docs" / "training.md").read_text()
SERVER, MODEL = "http://127.0.0.1:8000", "http://127.0.0.1:8001/v1"


def snippets(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, flags=re.DOTALL)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim") as running:
        yield running


@pytest.fixture(scope="module")
def model() -> Iterator[str]:
    with serve_app(ScriptedModel().app) as url:
        yield f"{url}/v1"


def run_shown(command: list[str], script: str, server: LiveServer, model: str, cwd: Path) -> str:
    script = script.replace(SERVER, server.url).replace(MODEL, model).replace(" examples/", f" {REPO}/examples/")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENENV_", "OPENAI_"))}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(REPO))
    done = subprocess.run([*command, script], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.mark.parametrize("index", range(len(snippets("bash"))))
def test_bash_snippets_run_and_print_what_they_show(index: int, server: LiveServer, model: str, tmp_path: Path) -> None:
    block = snippets("bash")[index]
    commands = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
    out = run_shown(["bash", "-euo", "pipefail", "-c"], commands, server, model, tmp_path)
    for line in block.splitlines():
        if line.startswith("# "):
            assert line[2:] in out, f"{line[2:]!r} not in the output of:\n{commands}\n{out}"


@pytest.mark.parametrize("index", range(len(snippets("python"))))
def test_python_snippets_run_and_print_what_they_show(
    index: int, server: LiveServer, model: str, tmp_path: Path
) -> None:
    block = snippets("python")[index]
    out = run_shown([sys.executable, "-c"], block, server, model, tmp_path)
    for shown in re.findall(r"^print\(.*\)  # (.*)$", block, flags=re.MULTILINE):
        assert shown in out


def test_the_documented_record_is_what_export_writes(tmp_path: Path) -> None:
    [shown] = [json.loads(block) for block in snippets("json")]
    url = f"sqlite:///{tmp_path / 'record.db'}"

    async def record() -> None:
        runtime = build_runtime(environment, Settings(mode="sim", trajectories=url))
        record_trajectories(runtime)
        async with runtime.run():
            episode = (await runtime.reset(task_id="sql-001", seed=1)).episode_id
            await runtime.call("list_tables", {}, episode)
            await runtime.call("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"}, episode)

    anyio.run(record)
    [written] = iter_records(url)
    assert written["tools"][0] == shown["tools"][0] and len(written["tools"]) == 4
    written.update(tools=written["tools"][:1], episode_id=shown["episode_id"], id=shown["id"])
    assert written == shown


def test_the_documented_summary_has_the_real_lines() -> None:
    [shown] = snippets("text")
    real = Summary([EpisodeResult(seed=0, steps=1, latencies=[0.001])], seconds=1.0).render()
    assert [line[:14] for line in shown.splitlines()] == [line[:14] for line in real.splitlines()]


def test_gym_agent_example_runs_episodes(server: LiveServer) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "gym_agent.py"), server.url, "--episodes", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("terminated True  truncated False") == 3
    assert "seed 0  task sql-g1-category-share-b5dad0: What percentage of all revenue" in done.stdout
