"""Load and leaks: many concurrent episodes over real sockets, then nothing left behind.

- 1,000 concurrent episodes on a sim SQL server in a process of its own (so its RSS and file handles can be
  read from ``/proc``), stepped over HTTP, then closed: zero errors, and memory and file handles back near
  their baseline; a second identical round must not grow them (a leak would).
  Scaled to fit CI: the issue asks for 1,000 episodes x 100 steps; here 1,000 episodes are open at once
  (full scale in concurrency and memory) and take 20 steps each (1 by ``POST /step``, 19 in
  ``POST /step_batch`` rounds of 1,000), twice: 40,000 steps. ``docs/reliability.md`` has the figures.
- A runaway query in one episode does not stall the others (nor ``/healthz``).
- Idle reaping frees abandoned episodes; the cap answers 503 cleanly at every door, and recovers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from websockets.sync.client import connect

from openenv_mcp.servers.sql import environment as sql_environment
from tests.support import LiveServer, free_port, live_server, open_episodes, record, wait_for, wait_http

EPISODES = 1_000
STEPS_ONE_BY_ONE = 1
STEPS_BATCHED = 19
CONNECTIONS = 32
QUERIES = [
    "SELECT COUNT(*) FROM orders",
    "SELECT name FROM regions ORDER BY region_id",
    "SELECT status, COUNT(*) FROM orders GROUP BY status ORDER BY status",
    "SELECT c.last_name, COUNT(o.order_id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.customer_id "
    "GROUP BY c.customer_id ORDER BY 2 DESC, 1 LIMIT 5",
]
MIB = 1024 * 1024


# a server in a process of its own -------------------------------------------------------------------------


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def rss(self) -> int:
        """Resident memory, in bytes."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        assert match is not None
        return int(match.group(1)) * 1024

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def open_episodes(self) -> int:
        return open_episodes(self.url)


@contextlib.contextmanager
def served(name: str, **env: str) -> Iterator[ServerProcess]:
    """``openenv-mcp serve NAME`` on a free port of 127.0.0.1, stopped (bounded) afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "openenv_mcp.cli", "serve", name, "--port", str(port), "--log-level", "warning"]
    with tempfile.TemporaryDirectory(prefix="openenv-load-") as tmp:
        log = Path(tmp) / "server.log"
        with log.open("wb") as out:
            process = subprocess.Popen(command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)
        server = ServerProcess(f"http://127.0.0.1:{port}", process, log)
        try:
            wait_http(f"{server.url}/healthz", timeout=30)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
            assert process.returncode in (0, -15), log.read_text(errors="replace")[-3000:]


def rss_at_most(server: ServerProcess, limit: int) -> bool:
    return server.rss() <= limit


class PeakRss:
    """The highest RSS seen while the block runs (sampled every 20 ms by a thread)."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.peak = server.rss()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, self.server.rss())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=10)


@dataclass
class Round:
    seconds: float
    steps: int
    errors: list[str]


async def run_round(url: str, episodes: int, seed: int) -> Round:
    """Open ``episodes`` at once, step each one by one then in batches, check every answer, close them all."""
    errors: list[str] = []
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    gate = asyncio.Semaphore(CONNECTIONS)
    started = time.perf_counter()
    steps = 0

    def check(what: str, answer: httpx.Response) -> Any:
        if answer.status_code != 200:
            errors.append(f"{what}: {answer.status_code} {answer.text[:200]}")
            return None
        return answer.json()

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:

        async def reset(i: int) -> str:
            async with gate:
                body = check("reset", await http.post("/reset", json={"seed": seed + i}))
            return str(body["episode_id"]) if body else ""

        ids = await asyncio.gather(*(reset(i) for i in range(episodes)))
        assert all(ids), errors[:5]

        async def step(i: int, episode: str, n: int) -> None:
            action = {"tool": "run_query", "arguments": {"sql": QUERIES[(i + n) % len(QUERIES)]}}
            async with gate:
                answer = await http.post("/step", headers={"X-Episode-Id": episode}, json={"action": action})
            body = check("step", answer)
            if body is not None and body["observation"]["is_error"]:
                errors.append(f"step: {body['observation']['content'][0]['text']}")

        for n in range(STEPS_ONE_BY_ONE):
            await asyncio.gather(*(step(i, episode, n) for i, episode in enumerate(ids)))
            steps += len(ids)
        for n in range(STEPS_BATCHED):
            batch = [
                {"episode_id": e, "action": {"tool": "run_query", "arguments": {"sql": QUERIES[(i + n) % 4]}}}
                for i, e in enumerate(ids)
            ]
            body = check("step_batch", await http.post("/step_batch", json={"steps": batch}))
            for item in body["results"] if body else []:
                if not item["ok"] or item["result"]["observation"]["is_error"]:
                    errors.append(f"batched step: {json.dumps(item)[:200]}")
            steps += len(batch)

        state = check("state", await http.get("/state", headers={"X-Episode-Id": ids[-1]}))
        if state is not None and state["step_count"] != STEPS_ONE_BY_ONE + STEPS_BATCHED:
            errors.append(f"state: {state}")

        async def close(episode: str) -> None:
            async with gate:
                check("close", await http.delete(f"/episodes/{episode}"))

        await asyncio.gather(*(close(episode) for episode in ids))
    return Round(time.perf_counter() - started, steps, errors)


@pytest.mark.timeout(300)  # about 40 s here, with other test runs sharing the two cores
def test_a_thousand_concurrent_episodes_run_without_error_and_leave_nothing_behind(
    request: pytest.FixtureRequest,
) -> None:
    settings = {
        "OPENENV_MAX_EPISODES": str(EPISODES),  # exactly enough: the cap must not refuse any of them
        "OPENENV_MAX_STEPS": "1000",
        "OPENENV_REAP_INTERVAL": "0.5",  # the sweep that hands freed memory back to the OS
        "OPENENV_IDLE_TIMEOUT": "600",
    }
    with served("sql", **settings) as server:
        warm = anyio.run(run_round, server.url, 50, 10_000)  # first-use caches and imports are not a leak
        assert not warm.errors, warm.errors[:5]
        # Nor is the MCP SDK, which loads in the background once the server serves: /mcp answers once it has.
        assert httpx.get(f"{server.url}/mcp", timeout=60).status_code < 500
        baseline_rss, baseline_fds = server.rss(), server.fds()
        afters: list[int] = []
        for n in range(2):
            with PeakRss(server) as peak:
                done = anyio.run(run_round, server.url, EPISODES, n * EPISODES)
            assert not done.errors, f"{len(done.errors)} errors, e.g. {done.errors[:5]}"
            assert done.steps == EPISODES * (STEPS_ONE_BY_ONE + STEPS_BATCHED)
            assert server.open_episodes() == 0
            # Back near the baseline: at least two thirds of what the round added given back to the OS, or all but
            # the interpreter's own floor: the Python heap keeps 26-30 MiB after the first round of 1,000 episodes
            # (measured with the SQL episodes at 58 KB and at 12 KB of SQLite each); the second round, below, must
            # not add to it, which is what catches a leak.
            allowed = baseline_rss + max(40 * MIB, (peak.peak - baseline_rss) // 3)
            wait_for(
                functools.partial(rss_at_most, server, allowed), f"RSS back under {allowed / MIB:.0f} MiB", timeout=15
            )
            wait_for(lambda: server.fds() <= baseline_fds + 2, f"file handles back to {baseline_fds}", timeout=15)
            afters.append(server.rss())
            record(request, f"round{n + 1}_seconds", round(done.seconds, 1))
            record(request, f"round{n + 1}_steps", done.steps)
            record(request, f"round{n + 1}_peak_mib", round(peak.peak / MIB, 1))
            record(request, f"round{n + 1}_after_mib", round(afters[-1] / MIB, 1))
        record(request, "baseline_mib", round(baseline_rss / MIB, 1))
        record(request, "baseline_fds", baseline_fds)
        assert afters[1] <= afters[0] + 8 * MIB, f"a second identical round grew RSS: {afters}"


# one slow episode among many ---------------------------------------------------------------------------------

RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT COUNT(*) FROM c"


def test_a_runaway_query_does_not_stall_the_other_episodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQL_STATEMENT_TIMEOUT_MS", "4000")
    with live_server(sql_environment, mode="sim") as server, httpx.Client(base_url=server.url, timeout=30) as http:
        slow_id, other_id = (http.post("/reset", json={"seed": i}).json()["episode_id"] for i in (1, 2))
        slow = server.runtime.episodes.get(slow_id)
        answers: list[httpx.Response] = []

        def runaway() -> None:
            action = {"tool": "run_query", "arguments": {"sql": RUNAWAY}}
            answers.append(httpx.post(f"{server.url}/step", headers={"X-Episode-Id": slow_id}, json={"action": action}))

        thread = threading.Thread(target=runaway)
        thread.start()
        try:
            wait_for(slow.lock.locked, "the runaway query to start", timeout=15)
            assert http.get("/healthz").status_code == 200
            other = http.post(
                "/step",
                headers={"X-Episode-Id": other_id},
                json={"action": {"tool": "run_query", "arguments": {"sql": "SELECT COUNT(*) FROM orders"}}},
            )
            assert other.status_code == 200 and other.json()["observation"]["structured_content"]["rows"] == [[300]]
            assert slow.lock.locked(), "the runaway query ended before the others were served: nothing was shown"
        finally:
            thread.join(timeout=30)
        [answer] = answers
        observation = answer.json()["observation"]
        assert observation["is_error"] and "Query cancelled after 4000 ms" in observation["content"][0]["text"]


# idle reaping and the cap -----------------------------------------------------------------------------------


def test_idle_reaping_frees_abandoned_episodes(request: pytest.FixtureRequest) -> None:
    with live_server(sql_environment, mode="sim", idle_timeout=1.0, reap_interval=0.2) as server:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            ids = [http.post("/reset", json={"seed": i}).json()["episode_id"] for i in range(50)]
            for episode in ids[:25]:  # half of them did something before their client vanished
                step = {"action": {"tool": "list_tables", "arguments": {}}}
                assert http.post("/step", headers={"X-Episode-Id": episode}, json=step).status_code == 200
            assert len(server.runtime.episodes) == 50
            took = wait_for(lambda: len(server.runtime.episodes) == 0, "the reaper to close all 50", timeout=15)
            gone = http.get("/state", headers={"X-Episode-Id": ids[0]})
            assert gone.status_code == 404 and "reaped after 1 s idle" in gone.json()["error"]["message"]
            assert http.post("/reset", json={"seed": 1}).status_code == 200  # and the server serves on
        record(request, "reaped_within_seconds", round(took, 2))


def test_the_cap_answers_503_cleanly_at_every_door_and_recovers(sim_server_capped: LiveServer) -> None:
    server = sim_server_capped
    cap = server.runtime.episodes.capacity

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            return list(await asyncio.gather(*(http.post("/reset", json={"seed": i}) for i in range(2 * cap))))

    answers = anyio.run(burst)
    opened = [a.json()["episode_id"] for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code != 200]
    assert len(opened) == cap and len(refused) == cap  # exact, even when they all arrive at once
    for answer in refused:
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "capacity_exceeded"
        assert "OPENENV_MAX_EPISODES" in answer.json()["error"]["message"]

    with httpx.Client(base_url=server.url, timeout=30) as http:
        ors = http.post("/create", headers={"X-Session-ID": "s"}, json={"split": "train", "index": 0})
        assert ors.status_code == 503 and ors.json()["error"]["code"] == "capacity_exceeded" and ors.json()["detail"]
        with connect(server.url.replace("http://", "ws://") + "/ws", open_timeout=10) as socket:
            socket.send(json.dumps({"op": "reset"}))
            full = json.loads(socket.recv(timeout=10))
        assert not full["ok"] and full["status"] == 503 and full["error"]["code"] == "capacity_exceeded"
        assert mcp_default_episode_error(server) == "capacity_exceeded"  # a call without X-Episode-Id needs a slot
        assert http.get("/readyz").status_code == 200  # full is not unready: the open episodes serve on
        step = {"action": {"tool": "list_tables", "arguments": {}}}
        assert http.post("/step", headers={"X-Episode-Id": opened[0]}, json=step).status_code == 200

        assert http.delete(f"/episodes/{opened[0]}").status_code == 200
        again = http.post("/reset", json={"seed": 1})
        assert again.status_code == 200, again.text
        assert http.post("/reset", json={"seed": 2}).status_code == 503  # full again, and still exact
        for episode in [*opened[1:], again.json()["episode_id"]]:
            assert http.delete(f"/episodes/{episode}").status_code == 200
    assert len(server.runtime.episodes) == 0


def mcp_default_episode_error(server: LiveServer) -> str | None:
    from mcp import Client

    async def call() -> str | None:
        async with Client(server.mcp_url) as client:
            result = await client.call_tool("list_tables", {})
        assert result.is_error and "OPENENV_MAX_EPISODES" in result.content[0].text  # type: ignore[union-attr]
        return (result.meta or {}).get("openenv-mcp/error")

    return anyio.run(call)


@pytest.fixture
def sim_server_capped() -> Iterator[LiveServer]:
    with live_server(sql_environment, mode="sim", max_episodes=16) as server:
        yield server
