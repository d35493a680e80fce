"""The command line as users run it: list, serve (HTTP and its start-up errors)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from openenv_mcp.environment.catalog import server_names
from tests.support import free_port, wait_http, wait_ready

CLI = [sys.executable, "-m", "openenv_mcp.cli"]


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **env}, check=False
    )


def test_list_prints_the_shipped_servers() -> None:
    done = run("list")
    assert done.returncode == 0
    listed = [line.split()[0] for line in done.stdout.splitlines() if line and not line.startswith(" ")]
    assert listed == server_names() and "sql" in listed
    assert "run_query" in done.stdout


def test_serve_unknown_server_names_the_installed_ones() -> None:
    done = run("serve", "nope")
    assert done.returncode == 2
    assert f"No server 'nope'; installed servers: {', '.join(server_names())}" in done.stderr


def test_prod_without_database_url_stops_and_names_the_variable() -> None:
    env = {k: v for k, v in os.environ.items() if k != "SQL_DATABASE_URL"}
    done = subprocess.run([*CLI, "serve", "sql", "--mode", "prod"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2
    assert "set SQL_DATABASE_URL" in done.stderr and "Traceback" not in done.stderr


def test_bad_flag_values_are_reported_without_a_traceback() -> None:
    done = run("serve", "sql", "--port", "-1")
    assert done.returncode == 2 and "PORT is invalid" in done.stderr and "Traceback" not in done.stderr


def test_serve_answers_health_and_stops_on_sigterm() -> None:
    port = free_port()
    env = {**os.environ, "MODE": "prod"}  # the --mode flag wins over MODE
    process = subprocess.Popen(
        [*CLI, "serve", "sql", "--mode", "sim", "--port", str(port)], stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert wait_http(f"http://127.0.0.1:{port}/healthz").json() == {"status": "ok", "mode": "sim", "server": "sql"}
        assert httpx.post(f"http://127.0.0.1:{port}/reset", json={"seed": 1}).status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    # uvicorn shuts down gracefully, then re-raises the signal it caught
    assert process.returncode in (0, -signal.SIGTERM), stderr
    assert "Application shutdown complete" in stderr


def _maps(pid: int) -> str:
    with open(f"/proc/{pid}/maps", encoding="utf-8") as maps:
        return maps.read()


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="utf-8") as children:
        return [int(child) for child in children.read().split()]


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads the processes' memory maps (Linux /proc)")
def test_a_recording_sim_server_starts_without_sqlalchemy_which_its_writer_loads(tmp_path: Path) -> None:
    """Start-up speed (issue 27): the sim SQL backend is sqlite3 alone, and the trajectory writer (a process of its
    own) opens the store, so the server never maps SQLAlchemy's compiled modules; the writer does (the check works).
    """
    port, store = free_port(), tmp_path / "trajectories.db"
    env = {**os.environ, "OPENENV_TRAJECTORIES": f"sqlite:///{store}"}
    process = subprocess.Popen([*CLI, "serve", "sql", "--port", str(port)], stderr=subprocess.DEVNULL, env=env)
    try:
        wait_ready(f"http://127.0.0.1:{port}", timeout=60)
        episode = httpx.post(f"http://127.0.0.1:{port}/reset", json={"seed": 1}).json()["episode_id"]
        step = {"action": {"tool": "list_tables", "arguments": {}}}
        assert httpx.post(f"http://127.0.0.1:{port}/step", json=step, headers={"X-Episode-Id": episode}).is_success
        [writer] = _children(process.pid)
        assert "/sqlalchemy/" not in _maps(process.pid)
        assert "/sqlalchemy/" in _maps(writer)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    with sqlite3.connect(store) as db:  # the writer made the tables and stored the step
        assert db.execute("SELECT tool FROM trajectory_steps").fetchall() == [("list_tables",)]
