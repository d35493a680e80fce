"""What ``rollout`` and ``eval`` share (``openenv_mcp/cli/runs.py``), as users run them: a run that is stopped
leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

CLI = [sys.executable, "-m", "openenv_mcp.cli"]

# Plays one step, says where it plays, then waits to be stopped.
STALLS = """
import asyncio
from pathlib import Path


async def policy(episode):
    await episode.step("list_tables", {})
    Path("playing.tmp").write_text(episode.server.url)
    Path("playing.tmp").rename("playing")
    await asyncio.sleep(600)
"""


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"  # a zombie has stopped serving too
    except FileNotFoundError:
        return True


def _within(seconds: float, condition: object) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/healthz", timeout=1)
    except httpx.TransportError:
        return False
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; a SIGKILL is survived only on Linux")
@pytest.mark.parametrize(
    ("command", "stop"), [("eval", signal.SIGTERM), ("rollout", signal.SIGINT), ("eval", signal.SIGKILL)]
)
def test_a_stopped_run_leaves_no_server_it_started_running(tmp_path: Path, command: str, stop: signal.Signals) -> None:
    (tmp_path / "stalls.py").write_text(STALLS)
    log = tmp_path / "stderr.txt"
    with log.open("wb") as stderr:
        run = subprocess.Popen(
            [*CLI, command, "sql", "--policy", "stalls:policy", "--no-progress"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
    try:
        playing = tmp_path / "playing"
        assert _within(60, lambda: playing.exists() or run.poll() is not None) and run.poll() is None, log.read_text()
        url = playing.read_text()
        servers = _children(run.pid)
        assert len(servers) == 1 and _answers(url)
        run.send_signal(stop)
        assert _within(10, lambda: not _answers(url)), f"the server at {url} still answers after {stop.name}"
        assert _within(10, lambda: _gone(servers[0])), f"the server's process is still there after {stop.name}"
        assert run.wait(10) == (128 + stop if stop != signal.SIGKILL else -stop), log.read_text()
        if stop != signal.SIGKILL:
            assert f"stopped by {stop.name}" in log.read_text()
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()
