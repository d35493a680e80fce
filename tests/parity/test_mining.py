"""Production traffic to sim tasks: a prod server records an external MCP client's sessions, ``openenv-mcp tasks
mine`` turns them into tasks (rejecting those whose replay differs), and a sim server serves them to reward 1.0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from openenv_mcp import EnvClient
from openenv_mcp.servers.sql import environment
from tests.support import free_port, live_server, memory_upstream, wait_ready

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


Call = tuple[str, dict[str, Any]]


def record(name: str, path: Path, sessions: Sequence[Sequence[Call]], **environ: str) -> None:
    """Play ``sessions`` (each in an MCP session of its own) on ``openenv-mcp serve NAME --mode prod`` recording
    them into ``path``; the server is stopped (and its recording flushed) after."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENENV_RECORD_SESSIONS": str(path), **environ}
    server = subprocess.Popen(
        [*CLI, "serve", name, "--mode", "prod", "--port", str(port)], env=env, stderr=subprocess.DEVNULL
    )
    try:
        assert wait_ready(f"http://127.0.0.1:{port}").status_code == 200
        anyio.run(drive, f"http://127.0.0.1:{port}/mcp", sessions)
    finally:
        server.terminate()
        server.wait(timeout=30)


async def drive(mcp_url: str, sessions: Sequence[Sequence[Call]]) -> None:
    for calls in sessions:
        async with Client(mcp_url, mode="legacy") as client:  # a session of its own (the 2025 era)
            for tool, arguments in calls:
                assert not (await client.call_tool(tool, arguments)).is_error, tool


def mine(*args: str) -> subprocess.CompletedProcess[str]:
    """``openenv-mcp tasks mine ARGS``."""
    return subprocess.run(
        [*CLI, "tasks", "mine", *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip


@pytest.mark.prod
def test_a_recorded_prod_session_becomes_a_sim_task_scored_1(pg_url: str, tmp_path: Path) -> None:
    recording, tasks = tmp_path / "sessions.jsonl", tmp_path / "mined.jsonl"
    redact = "tests.support.redaction:hide_emails"
    record("sql", recording, SESSIONS, SQL_DATABASE_URL=pg_url, OPENENV_RECORD_REDACT=redact)
    records = [json.loads(line) for line in recording.read_text().splitlines()]
    assert [r["tool"] for r in records] == [tool for calls in SESSIONS for tool, _ in calls]
    assert len({r["session"] for r in records}) == 4 and None not in {r["session"] for r in records}
    assert records[5]["structured_content"]["rows"] == [["<email>"]]  # redacted before it was written

    mined = mine(str(recording), "--out", str(tasks), "--prompt", "How many customers do we have?")
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


MEMORY_EARLIER = [  # an earlier session: what the upstream holds when the mined one opens
    ("create_entities", {"entities": [
        {"name": "Ada Park", "entityType": "person", "observations": ["writes code"]},
        {"name": "Lumen Labs", "entityType": "organization", "observations": []},
    ]}),
    ("create_relations", {"relations": [{"from": "Ada Park", "to": "Lumen Labs", "relationType": "works_at"}]}),
]  # fmt: skip
MEMORY_SESSION = [  # reads what is there, then changes it: its task starts from the graph above
    ("open_nodes", {"names": ["Ada Park"]}),
    ("add_observations", {"observations": [{"entityName": "Ada Park", "contents": ["speaks Finnish"]}]}),
    ("delete_observations", {"deletions": [{"entityName": "Ada Park", "observations": ["writes code"]}]}),
    ("create_entities", {"entities": [{"name": "Oslo", "entityType": "city", "observations": []}]}),
    ("create_relations", {"relations": [{"from": "Lumen Labs", "to": "Oslo", "relationType": "located_in"}]}),
    ("read_graph", {}),
]
MEMORY_READS = [("search_nodes", {"query": "Ada"})]  # changes nothing: no task


@pytest.mark.prod
def test_a_recorded_memory_session_becomes_a_task_that_starts_from_the_graph_prod_held(tmp_path: Path) -> None:
    from memory_env import environment as memory

    recording, tasks = tmp_path / "sessions.jsonl", tmp_path / "mined.jsonl"
    upstream = {"MEMORY_UPSTREAM_COMMAND": memory_upstream(), "MEMORY_FILE_PATH": str(tmp_path / "graph.jsonl")}
    record("memory", recording, [MEMORY_EARLIER, MEMORY_SESSION, MEMORY_READS], **upstream)
    records = [json.loads(line) for line in recording.read_text().splitlines()]
    openings = [r for r in records if r.get("opening")]
    assert [r["tool"] for r in openings] == ["read_graph"] * 3  # one per session, before its first call
    assert openings[0]["structured_content"] == {"entities": [], "relations": []}
    held = openings[1]["structured_content"]
    assert [e["name"] for e in held["entities"]] == ["Ada Park", "Lumen Labs"] and len(held["relations"]) == 1

    prompt = "Ada now speaks Finnish and no longer writes code; Lumen Labs is in Oslo."
    mined = mine(str(recording), "--out", str(tasks), "--server", "memory", "--prompt", prompt)
    assert mined.returncode == 0, mined.stdout + mined.stderr
    report = mined.stdout.splitlines()
    assert report[0].startswith("mined mined-memory-") and "2 reference calls, replayed to 1.0" in report[0]
    assert report[1].startswith("mined mined-memory-") and "5 reference calls, replayed to 1.0" in report[1]
    assert "left the graph as it found it" in report[2]
    assert report[3].startswith("2 of 3 sessions made tasks")
    line = json.loads(tasks.read_text().splitlines()[1])
    task, reference = line["task"], line["reference"]
    assert (task["entities"], task["relations"], task["exact"]) == (held["entities"], held["relations"], True)
    assert {"kind": "no_observation", "name": "Ada Park", "contains": "writes code"} in task["goals"]
    assert {"kind": "relation", "from": "Lumen Labs", "to": "Oslo", "type": "located_in"} in task["goals"]
    assert reference == [[tool, arguments] for tool, arguments in MEMORY_SESSION[:5]]  # read_graph came after done

    with live_server(memory, mode="sim", extra_tasks=tasks) as sim, EnvClient(sim.url) as client:
        client.reset(task_id=task["id"], seed=3)
        assert client.step("read_graph").observation.structured_content == held  # prod's graph, nothing added
        client.reset(task_id=task["id"], seed=3)
        results = [client.step(tool, arguments) for tool, arguments in reference]
        assert [r.done for r in results] == [False] * 4 + [True]
        assert client.state().total_reward == 1.0


def test_an_environment_that_cannot_be_mined_says_why_and_exits_1(tmp_path: Path) -> None:
    recording = tmp_path / "sessions.jsonl"
    recording.write_text(json.dumps({"server": "search", "session": "s", "tool": "collection_info", "arguments": {}}))
    done = mine(str(recording), "--out", str(tmp_path / "out.jsonl"), "--prompt", "p")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines()[0] == (
        "rejected search session s (1 calls): search cannot be mined: a search task is graded by its gold answer, "
        "which a recording does not hold: it holds the answer the agent submitted, and prod grades nothing, so "
        "nothing says whether that answer was right"
    )
    named = mine(str(recording), "--out", str(tmp_path / "out.jsonl"), "--prompt", "p", "--server", "coding")
    assert named.returncode == 1 and named.stderr == ""
    assert named.stdout == (
        "coding cannot be mined: a coding task is graded by hidden tests written for its problem; a recording holds "
        "the code a session ran and what it printed, not a problem statement nor the tests that would grade an "
        "answer\n"
    )


@pytest.mark.prod
def test_a_recorded_email_session_becomes_a_task_on_the_shipped_mailbox_graded_on_what_it_sent(
    tmp_path: Path,
) -> None:
    from openenv_mcp.servers.email import environment as email
    from tests.support.email import dovecot, smtp_server

    assert email.solve is not None
    hand_written = [task for task in email.tasks() if getattr(task, "scenario", None) is None]
    kinds = {e.kind: task for task in hand_written for e in task.expect if len(task.expect) == 1}
    calls = [call for kind in ("reply", "forward", "new") for call in email.solve(kinds[kind])]  # all three kinds
    recording, tasks = tmp_path / "sessions.jsonl", tmp_path / "mined.jsonl"
    with dovecot() as imap, smtp_server() as smtp:
        record(
            "email", recording, [calls, [("list_folders", {})]],
            EMAIL_FROM_ADDRESS="alex.morgan@northwind.example", EMAIL_FROM_NAME="Alex Morgan",
            EMAIL_SMTP_HOST=smtp.host, EMAIL_SMTP_PORT=str(smtp.port), EMAIL_SMTP_SECURITY="none",
            EMAIL_IMAP_HOST=imap.host, EMAIL_IMAP_PORT=str(imap.port), EMAIL_IMAP_SECURITY="none",
            EMAIL_IMAP_USERNAME=imap.user, EMAIL_IMAP_PASSWORD=imap.password, EMAIL_TIMEOUT="5",
        )  # fmt: skip
        assert len(smtp.received) == 3  # the three messages really went out
    mined = mine(str(recording), "--out", str(tasks), "--prompt", "Answer, pass on and announce.")
    assert mined.returncode == 0, mined.stdout + mined.stderr
    report = mined.stdout.splitlines()
    assert report[0].startswith("mined mined-email-") and f"{len(calls)} reference calls, replayed to 1.0" in report[0]
    assert "no message was sent" in report[1]
    line = json.loads(tasks.read_text())
    assert [e["kind"] for e in line["task"]["expect"]] == ["reply", "forward", "new"]
    assert all(e["facts"] == [] for e in line["task"]["expect"])  # a recording does not say which facts counted
    with live_server(email, mode="sim", extra_tasks=tasks) as sim, EnvClient(sim.url) as client:
        first = client.reset(task_id=line["task"]["id"])
        assert first.observation.text.startswith("Answer, pass on and announce.")
        results = [client.step(tool, arguments) for tool, arguments in line["reference"]]
    assert results[-1].done and sum(r.reward for r in results) == pytest.approx(1.0)
