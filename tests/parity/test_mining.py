"""Production traffic to sim tasks: a prod server records an external MCP client's sessions, ``openenv-mcp tasks
mine`` turns them into tasks (rejecting those whose replay differs), and a sim server serves them to reward 1.0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from openenv_mcp import EnvClient
from openenv_mcp.servers.sql import environment
from tests.support import free_port, live_server, wait_ready

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "openenv_mcp.cli"]

SESSIONS = [
    [  # becomes a task
        ("list_tables", {}),
        ("run_query", {"sql": "SELECT COUNT(*) FROM customers"}),
        ("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"}),
    ],
    [("run_query", {"sql": "SELECT random() AS r"}), ("submit_answer", {"sql": "SELECT random() AS r"})],
    [  # redacted when recorded, so its replay cannot match
        ("run_query", {"sql": "SELECT email FROM customers ORDER BY customer_id LIMIT 1"}),
        ("submit_answer", {"sql": "SELECT email FROM customers ORDER BY customer_id LIMIT 1"}),
    ],
    [("list_tables", {})],  # never answers
]


async def drive(mcp_url: str) -> None:
    for calls in SESSIONS:
        async with Client(mcp_url, mode="legacy") as client:  # a session of its own (the 2025 era)
            for tool, arguments in calls:
                assert not (await client.call_tool(tool, arguments)).is_error


@pytest.mark.prod
def test_a_recorded_prod_session_becomes_a_sim_task_scored_1(pg_url: str, tmp_path: Path) -> None:
    recording, tasks = tmp_path / "sessions.jsonl", tmp_path / "mined.jsonl"
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SQL_DATABASE_URL": pg_url,
        "OPENENV_RECORD_SESSIONS": str(recording),
        "OPENENV_RECORD_REDACT": "tests.support.redaction:hide_emails",
    }
    server = subprocess.Popen(
        [*CLI, "serve", "sql", "--mode", "prod", "--port", str(port)], env=env, stderr=subprocess.DEVNULL
    )
    try:
        assert wait_ready(f"http://127.0.0.1:{port}").status_code == 200
        anyio.run(drive, f"http://127.0.0.1:{port}/mcp")
    finally:
        server.terminate()
        server.wait(timeout=30)
    records = [json.loads(line) for line in recording.read_text().splitlines()]
    assert [r["tool"] for r in records] == [tool for calls in SESSIONS for tool, _ in calls]
    assert len({r["session"] for r in records}) == 4 and None not in {r["session"] for r in records}
    assert records[5]["structured_content"]["rows"] == [["<email>"]]  # redacted before it was written

    mined = subprocess.run(
        [*CLI, "tasks", "mine", str(recording), "--out", str(tasks), "--prompt", "How many customers do we have?"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert mined.returncode == 0, mined.stderr
    report = mined.stdout.splitlines()
    assert report[0].startswith("mined mined-sql-") and "3 reference calls, replayed to 1.0" in report[0]
    assert "step 1 (run_query) answers differently in the sim" in report[1]  # random() is not what prod drew
    assert "step 1 (run_query) answers differently in the sim" in report[2] and "<email>" in report[2]
    assert "no accepted submit_answer" in report[3]
    assert report[4].startswith("1 of 4 sessions made tasks")
    (line,) = tasks.read_text().splitlines()
    task, reference = json.loads(line)["task"], json.loads(line)["reference"]
    assert (task["gold_sql"], task["family"], task["prompt"]) == (
        "SELECT COUNT(*) FROM customers", "mined", "How many customers do we have?"
    )  # fmt: skip

    with live_server(environment, mode="sim", extra_tasks=tasks) as sim, EnvClient(sim.url) as client:
        first = client.reset(task_id=task["id"])
        assert first.observation.text.startswith("How many customers do we have?")
        results = [client.step(tool, arguments) for tool, arguments in reference]
    assert (results[-1].reward, results[-1].done) == (1.0, True)
