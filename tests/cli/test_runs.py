"""What ``rollout`` and ``eval`` share (``openenv_mcp/cli/runs.py``), as users run them: a run that is stopped
leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support import free_port, open_episodes, wait_ready

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


def _replica(port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as stderr:
        return subprocess.Popen(
            [*CLI, "serve", "sql", "--mode", "sim", "--port", str(port), "--log-level", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def _trials(out: Path) -> dict[tuple[str, int], dict[str, object]]:
    lines = (out / "trials.jsonl").read_text().splitlines()[1:] if (out / "trials.jsonl").exists() else []
    return {(t["task_id"], t["index"]): t for t in map(json.loads, lines)}


def test_an_eval_survives_the_death_of_one_of_its_two_replicas(tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    replicas = [_replica(port, tmp_path / f"replica-{port}.log") for port in ports]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    run: subprocess.Popen[bytes] | None = None
    try:
        for url in urls:
            wait_ready(url, timeout=60)
        args = ["eval", "--policy", "scripted", "--sample", "50", "-k", "2", "-c", "8", "--no-progress"]
        reference = subprocess.run(
            [*CLI, *args[:1], urls[0], *args[1:], "--out", str(tmp_path / "reference")],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert reference.returncode == 0, reference.stderr
        expected = _trials(tmp_path / "reference")
        assert len(expected) == 100

        out = tmp_path / "run"
        log = tmp_path / "eval.log"
        with log.open("wb") as stderr:
            run = subprocess.Popen([*CLI, *args[:1], *urls, *args[1:], "--out", str(out)], stderr=stderr)
        assert _within(120, lambda: len(_trials(out)) >= 20 or run.poll() is not None) and run.poll() is None
        # stopped while it holds episodes (on a fast machine an eval runs in seconds: a moment may find none open)
        assert _within(60, lambda: open_episodes(urls[1]) >= 2 or run.poll() is not None), "replica 2 holds nothing"
        replicas[1].send_signal(signal.SIGSTOP)  # its episodes hang mid-step
        assert run.poll() is None
        assert _within(120, lambda: len(_trials(out)) >= 30 or run.poll() is not None) and run.poll() is None
        replicas[1].kill()  # SIGKILL: its episodes die with it, in the middle of their steps
        replicas[1].wait()
        replicas[1] = _replica(ports[1], tmp_path / f"replica-{ports[1]}.log")  # restarted on the same port
        assert run.wait(180) == 0, log.read_text()
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        for replica in replicas:
            replica.kill()
            replica.wait()
    said = log.read_text()
    assert "resumed: " in said and " episodes rebuilt after their replica stopped answering" in said, said
    found = _trials(out)
    assert found.keys() == expected.keys()
    for key, trial in found.items():  # the same reward and steps as undisturbed: nothing applied twice or lost
        assert (trial["reward"], trial["steps"], trial["error"]) == (
            expected[key]["reward"],
            expected[key]["steps"],
            None,
        ), key
    overall = json.loads((out / "results.json").read_text())["overall"]
    assert (overall["trials"], overall["infra_failures"], overall["errors"]) == (100, 0, 0)
