"""Trajectories: every sim step recorded off the hot path, nothing lost at a clean stop, chat-format export."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import create_engine, text

from openenv_mcp import ConfigError, EnvClient, Environment, Grade, Settings, Task, TaskSet, Toolbox
from openenv_mcp.environment.tools import BoundCall, Image
from openenv_mcp.models import Action, BatchStep, Observation
from openenv_mcp.runtime import Runtime, build_runtime
from openenv_mcp.servers.sql import environment
from openenv_mcp.trajectories import (
    EpisodeFilter,
    TrajectoryRecorder,
    Turn,
    TurnRecorder,
    iter_records,
    journal,
    record_trajectories,
)
from openenv_mcp.trajectories.store import TrajectoryStore
from tests.support import free_port, scratch_database, wait_http
from tests.support.sums import Pad, SumsSettings

CLI = [sys.executable, "-m", "openenv_mcp.cli"]
COUNT_CUSTOMERS = {"sql": "SELECT COUNT(*) FROM customers"}  # the gold answer of sql-001


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'trajectories.db'}"


def sim_runtime(url: str, **settings: Any) -> tuple[Runtime, TrajectoryRecorder]:
    runtime = build_runtime(environment, Settings(mode="sim", trajectories=url, **settings))
    recorder = record_trajectories(runtime)
    assert recorder is not None
    return runtime, recorder


def rows(url: str, query: str) -> list[dict[str, Any]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(text(query))]
    finally:
        engine.dispose()


@pytest.mark.anyio
async def test_every_step_and_episode_is_recorded(store_url: str) -> None:
    runtime, _ = sim_runtime(store_url)
    async with runtime.run():
        first = await runtime.reset(task_id="sql-001", seed=5)
        await runtime.call("list_tables", {}, first.episode_id)
        await runtime.call("run_query", {"sql": "DELETE FROM customers"}, first.episode_id)
        await runtime.call("submit_answer", COUNT_CUSTOMERS, first.episode_id)
        await runtime.close_episode(first.episode_id)
        second = await runtime.reset(split="test", seed=2)
        await runtime.call("describe_table", {"table": "orders"}, second.episode_id)
        await runtime.call("list_tables", {}, None)  # the default episode, opened without a reset

    episodes = {e["episode_id"]: e for e in rows(store_url, "SELECT * FROM trajectory_episodes")}
    assert set(episodes) == {first.episode_id, second.episode_id, "default"}
    one = episodes[first.episode_id]
    assert (one["task_id"], one["split"], one["seed"], one["step_count"]) == ("sql-001", "train", 5, 3)
    assert (one["total_reward"], one["done"], one["dropped_steps"]) == (1.0, True, 0)
    assert one["prompt"].startswith("How many customers") and one["server"] == "sql"
    assert one["created_at"] <= one["closed_at"]
    two = episodes[second.episode_id]
    assert (two["split"], two["seed"], two["step_count"], two["done"]) == ("test", 2, 1, False)
    assert two["closed_at"] is not None  # closed when the server stopped

    steps = rows(store_url, f"SELECT * FROM trajectory_steps WHERE trajectory_id = '{one['id']}' ORDER BY step")
    assert [(s["step"], s["tool"], s["reward"], bool(s["done"])) for s in steps] == [
        (1, "list_tables", 0.0, False),
        (2, "run_query", 0.0, False),
        (3, "submit_answer", 1.0, True),
    ]
    assert json.loads(steps[1]["arguments"]) == {"sql": "DELETE FROM customers"}
    assert bool(steps[1]["is_error"]) and "read-only" in json.loads(steps[1]["content"])[0]["text"]
    assert json.loads(steps[2]["arguments"]) == COUNT_CUSTOMERS  # parameters left at their default are omitted
    assert json.loads(steps[2]["structured_content"])["rows"] == [[60]]
    assert all(s["tool_seconds"] > 0 and s["at"] >= one["created_at"] for s in steps)


class TableName(str):
    """A caller's own string type (a trainer passing its objects in process): not one of Python's plain types."""


@pytest.mark.anyio
async def test_a_step_whose_values_are_not_plain_python_types_is_recorded_as_their_json(store_url: str) -> None:
    runtime, _ = sim_runtime(store_url)
    async with runtime.run():
        episode = (await runtime.reset(task_id="sql-001")).episode_id
        await runtime.call("describe_table", {"table": TableName("orders")}, episode)  # the same batch as the next
        await runtime.call("describe_table", {"table": "customers"}, episode)
    steps = rows(store_url, "SELECT arguments, content, structured_content FROM trajectory_steps ORDER BY step")
    assert [json.loads(s["arguments"]) for s in steps] == [{"table": "orders"}, {"table": "customers"}]
    assert all(json.loads(s["content"])[0]["text"] == s["structured_content"] for s in steps)


def picture_environment() -> Environment[Pad, Task]:
    """Two tools: one returns a picture and its metadata (an image block, then the metadata's JSON), the other
    numbers whose JSON text differs by encoder (``1e-05``, ``1e-5``)."""
    box: Toolbox[Pad] = Toolbox("pictures")

    @box.tool(read_only=True)
    async def snap(pad: Pad) -> Image[dict[str, float]]:
        """Take a picture."""
        return Image(data=b"\x89PNG", mime_type="image/png", metadata={"exposure": 1e-05})

    @box.tool(read_only=True)
    async def measure(pad: Pad) -> list[float]:
        """Measure something small."""
        return [1e-05, 2.5, 1e21]

    async def grade(task: Task, pad: Pad, call: BoundCall, observation: Observation) -> Grade:
        return Grade()

    return Environment(
        name="pictures",
        description="A picture and small numbers.",
        tools=box,
        tasks=lambda: TaskSet([Task(id="p", split="train", prompt="Take a picture.")]),
        settings=SumsSettings,
        sim_backend=lambda task, seed, settings: _pad(),
        prod_backend=lambda settings: _pad(),
        grade=grade,
    )


async def _pad() -> Pad:
    return Pad()


@pytest.mark.anyio
async def test_structured_content_is_stored_as_its_json_whatever_the_content_blocks(store_url: str) -> None:
    # A one-text-block result goes to the writer as its text alone (the text is the structured content's JSON);
    # a picture's result (an image block, then the text) carries its structured content itself.
    runtime = build_runtime(picture_environment(), Settings(mode="sim", trajectories=store_url))
    assert record_trajectories(runtime) is not None
    async with runtime.run():
        episode = (await runtime.reset()).episode_id
        picture = await runtime.call("snap", {}, episode)
        numbers = await runtime.call("measure", {}, episode)
    steps = rows(store_url, "SELECT content, structured_content FROM trajectory_steps ORDER BY step")
    assert (
        [json.loads(s["structured_content"]) for s in steps]
        == [
            picture.observation.structured_content,
            numbers.observation.structured_content,
        ]
        == [{"exposure": 1e-05}, {"result": [1e-05, 2.5, 1e21]}]
    )
    image, text = json.loads(steps[0]["content"])
    assert image["type"] == "image" and json.loads(text["text"]) == {"exposure": 1e-05}
    assert [block["text"] for block in json.loads(steps[1]["content"])] == [numbers.observation.text]


class DatabaseLock:
    """Another connection holding the SQLite file's write lock: the writer's transactions wait until it is released."""

    def __init__(self, url: str) -> None:
        self.connection = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        self.connection.execute("BEGIN EXCLUSIVE")

        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.connection.execute("ROLLBACK")
            self.connection.close()


@pytest.mark.anyio
async def test_a_step_never_waits_for_the_database(store_url: str) -> None:
    runtime, recorder = sim_runtime(store_url)
    recorder.batch_size = 1  # every step goes to the writer at once
    async with runtime.run():
        episode = (await runtime.reset(task_id="sql-001")).episode_id
        lock = DatabaseLock(store_url)
        try:
            with anyio.fail_after(5):  # the database is stuck, yet every step returns at once
                for _ in range(10):
                    await runtime.call("list_tables", {}, episode)
            await anyio.sleep(0.2)
            assert recorder.pending == 10
        finally:
            lock.release()
    assert rows(store_url, "SELECT COUNT(*) AS n FROM trajectory_steps") == [{"n": 10}]


@contextlib.asynccontextmanager
async def full_queue(store_url: str) -> AsyncIterator[tuple[Runtime, TrajectoryRecorder, str, DatabaseLock]]:
    """A serving runtime whose recorder's queue (4 steps) is full: an episode stepped 4 times while another
    connection holds the store's write lock, so the writer is stuck until the test releases the lock (released at
    the end if it did not, before the runtime stops)."""
    runtime, recorder = sim_runtime(store_url, trajectories_queue=4)
    async with runtime.run():
        episode = (await runtime.reset(task_id="sql-001")).episode_id
        lock = DatabaseLock(store_url)
        try:
            for _ in range(4):
                await runtime.call("list_tables", {}, episode)
            yield runtime, recorder, episode, lock
        finally:
            lock.release()


@pytest.mark.anyio
async def test_a_full_queue_makes_steps_wait_for_the_writer_and_loses_none(store_url: str) -> None:
    async with full_queue(store_url) as (runtime, recorder, episode, lock):
        finished: list[int] = []

        async def fifth() -> None:
            outcome = await runtime.call("list_tables", {}, episode)
            finished.append(outcome.episode.step_count)  # type: ignore[union-attr]

        async with anyio.create_task_group() as steps:
            steps.start_soon(fifth)
            await anyio.sleep(0.3)  # the writer is stuck: the step cannot have been recorded, so it must still wait
            assert finished == [] and recorder.pending == 4
            lock.release()
            with anyio.fail_after(20):
                while not finished:
                    await anyio.sleep(0.01)
    assert finished == [5]
    assert 'openenv_trajectory_steps_dropped_total{reason="queue_full"}' not in runtime.metrics.render().decode()
    assert rows(store_url, "SELECT step FROM trajectory_steps ORDER BY step") == [{"step": n} for n in range(1, 6)]


@pytest.mark.anyio
async def test_steps_of_one_episode_waiting_for_the_writer_together_are_each_recorded_under_their_own_number(
    store_url: str,
) -> None:
    # a batch carrying two steps of one episode while the writer is behind: each waits for room, and each is
    # recorded as the step it was (not both as the episode's latest), so the store takes both
    async with full_queue(store_url) as (runtime, recorder, episode, lock):
        action = Action(tool="list_tables", arguments={})
        async with anyio.create_task_group() as batch:
            batch.start_soon(runtime.step_batch, [BatchStep(episode_id=episode, action=action)] * 2)
            await anyio.sleep(0.3)
            assert recorder.pending == 4
            lock.release()
    assert rows(store_url, "SELECT step FROM trajectory_steps ORDER BY step") == [{"step": n} for n in range(1, 7)]
    assert 'reason="write_failed"' not in runtime.metrics.render().decode()


@pytest.mark.anyio
async def test_a_full_queue_drops_steps_counts_them_and_marks_the_episode(store_url: str) -> None:
    runtime, recorder = sim_runtime(store_url, trajectories_queue=4, trajectories_wait=0)
    async with runtime.run():
        lock = DatabaseLock(store_url)
        try:
            kept = (await runtime.reset(task_id="sql-001")).episode_id
            for _ in range(4):
                await runtime.call("list_tables", {}, kept)
            lossy = (await runtime.reset(task_id="sql-002")).episode_id
            for _ in range(3):
                await runtime.call("list_tables", {}, lossy)
            assert recorder.pending == 4
            metrics = runtime.metrics.render().decode()
            assert 'openenv_trajectory_steps_dropped_total{reason="queue_full"} 3.0' in metrics
            assert "openenv_trajectory_queue_steps 4.0" in metrics
        finally:
            lock.release()

    by_id = {e["episode_id"]: e for e in rows(store_url, "SELECT * FROM trajectory_episodes")}
    assert (by_id[kept]["dropped_steps"], by_id[lossy]["dropped_steps"]) == (0, 3)
    assert [r["episode_id"] for r in iter_records(store_url)] == [kept]  # the lossy episode is left out
    assert len(list(iter_records(store_url, EpisodeFilter(include_incomplete=True)))) == 2


@pytest.mark.anyio
async def test_stop_writes_everything_still_queued(store_url: str) -> None:
    runtime, recorder = sim_runtime(store_url)
    recorder.flush_interval = 3600  # nothing is written before stop unless a batch fills
    recorder.batch_size = 10**9
    async with runtime.run():
        for seed in range(40):
            episode = (await runtime.reset(seed=seed)).episode_id
            for _ in range(20):
                await runtime.call("list_tables", {}, episode)
        assert rows(store_url, "SELECT COUNT(*) AS n FROM trajectory_steps") == [{"n": 0}]
    assert rows(store_url, "SELECT COUNT(*) AS n FROM trajectory_steps") == [{"n": 800}]
    assert rows(store_url, "SELECT COUNT(*) AS n FROM trajectory_episodes WHERE done AND closed_at IS NOT NULL") == [
        {"n": 40}
    ]


async def drained(recorder: TrajectoryRecorder) -> None:
    with anyio.fail_after(20):
        while recorder.pending:
            await anyio.sleep(0.01)


@pytest.mark.anyio
async def test_a_refused_batch_is_retried_then_counted_as_lost(
    store_url: str, capfd: pytest.CaptureFixture[str]
) -> None:
    runtime, recorder = sim_runtime(store_url)
    recorder.retry_delay = 0.0
    recorder.batch_size = 1  # every step goes to the writer at once
    async with runtime.run():
        episode = (await runtime.reset(task_id="sql-001")).episode_id
        await runtime.call("list_tables", {}, episode)
        await drained(recorder)
        refusing = sqlite3.connect(store_url.removeprefix("sqlite:///"))
        with refusing:  # the database now refuses every step
            refusing.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON trajectory_steps "
                "BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END"
            )
        await runtime.call("list_tables", {}, episode)
        await drained(recorder)  # refused three times, then answered for as lost
        with refusing:
            refusing.execute("DROP TRIGGER refuse")
        refusing.close()
        await runtime.call("list_tables", {}, episode)
    metrics = runtime.metrics.render().decode()
    assert 'reason="write_failed"} 1.0' in metrics and "openenv_trajectory_steps_written_total 2.0" in metrics
    assert rows(store_url, "SELECT step FROM trajectory_steps ORDER BY step") == [{"step": 1}, {"step": 3}]
    assert "disk I/O error (tried 3 times); 1 steps lost" in capfd.readouterr().err  # the writer's log


@pytest.mark.anyio
async def test_the_writer_is_a_process_of_its_own_that_stop_ends(store_url: str) -> None:
    runtime, recorder = sim_runtime(store_url)
    async with runtime.run():
        pid = recorder.writer_pid
        assert pid is not None and pid != os.getpid()
        assert "openenv_mcp.trajectories.writer" in Path(f"/proc/{pid}/cmdline").read_text()
        episode = (await runtime.reset(task_id="sql-001")).episode_id
        await runtime.call("list_tables", {}, episode)
    assert recorder.writer_pid is None and not Path(f"/proc/{pid}").exists()  # exited and reaped
    assert rows(store_url, "SELECT COUNT(*) AS n FROM trajectory_steps") == [{"n": 1}]


@pytest.mark.anyio
async def test_a_writer_that_dies_is_started_again_on_the_journal_and_nothing_is_lost(store_url: str) -> None:
    runtime, recorder = sim_runtime(store_url)
    async with runtime.run():
        first = recorder.writer_pid
        assert first is not None
        episode = (await runtime.reset(task_id="sql-001")).episode_id
        for _ in range(3):
            await runtime.call("list_tables", {}, episode)
        with anyio.fail_after(20):  # written, and where they end in the journal stored with them
            while recorder.pending:
                await anyio.sleep(0.05)
        os.kill(first, signal.SIGSTOP)
        for _ in range(10):
            await runtime.call("describe_table", {"table": "orders"}, episode)
        await anyio.sleep(recorder.flush_interval + 0.3)  # journaled, not written
        assert recorder.pending == 10
        os.kill(first, signal.SIGKILL)
        for _ in range(5):  # while another writer starts
            await runtime.call("list_tables", {}, episode)
        with anyio.fail_after(30):
            while recorder.pending or recorder.writer_pid in (None, first):
                await anyio.sleep(0.05)
    steps = rows(store_url, "SELECT step FROM trajectory_steps ORDER BY step")
    assert [s["step"] for s in steps] == list(range(1, 19))  # each once: the first three were not written again
    assert 'reason="write_failed"}' not in runtime.metrics.render().decode()
    assert "openenv_trajectory_steps_written_total 18.0" in runtime.metrics.render().decode()


@pytest.mark.anyio
async def test_a_writer_that_keeps_dying_is_counted_and_recording_stops_without_stalling_steps(store_url: str) -> None:
    runtime, recorder = sim_runtime(store_url, trajectories_queue=4)
    recorder.restarts = 0
    async with runtime.run():
        assert recorder.writer_pid is not None
        os.kill(recorder.writer_pid, signal.SIGKILL)
        episode = (await runtime.reset(task_id="sql-001")).episode_id
        with anyio.fail_after(10):  # more steps than the queue holds: none waits on a writer that is gone
            for _ in range(8):
                await runtime.call("list_tables", {}, episode)
    assert 'reason="write_failed"}' in runtime.metrics.render().decode()


def test_recording_is_off_in_prod_or_when_asked(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert TrajectoryRecorder.for_runtime(build_runtime(environment, Settings(mode="sim", trajectories="off"))) is None
    monkeypatch.setenv("SQL_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    assert TrajectoryRecorder.for_runtime(build_runtime(environment, Settings(mode="prod"))) is None
    monkeypatch.setenv("OPENENV_TRAJECTORIES", store_url)
    assert Settings().trajectories == store_url


@pytest.mark.anyio
async def test_an_unusable_store_url_names_the_setting(tmp_path: Path) -> None:
    runtime, _ = sim_runtime("nonsense")  # the writer process opens the store: it says so before serving
    with pytest.raises(ConfigError, match="OPENENV_TRAJECTORIES is not a usable SQLAlchemy URL"):
        async with runtime.run():
            pytest.fail("the runtime served")
    runtime, _ = sim_runtime(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    with pytest.raises(ConfigError, match=r"Cannot open the trajectory store .* OPENENV_TRAJECTORIES=off"):
        async with runtime.run():
            pytest.fail("the runtime served")


@pytest.mark.prod
@pytest.mark.anyio
async def test_trajectories_are_recorded_into_postgresql() -> None:
    with scratch_database() as url:
        runtime, _ = sim_runtime(url)
        async with runtime.run():
            episode = (await runtime.reset(task_id="sql-001", seed=3)).episode_id
            await runtime.call("list_tables", {}, episode)
            await runtime.call("submit_answer", COUNT_CUSTOMERS, episode)
        [record] = iter_records(url)
        assert (record["reward"], record["rewards"], record["seed"]) == (1.0, [0.0, 1.0], 3)
        assert json.loads(record["messages"][-2]["tool_calls"][0]["function"]["arguments"]) == COUNT_CUSTOMERS


# export ------------------------------------------------------------------------------------------


@pytest.fixture
def recorded(store_url: str) -> Iterator[str]:
    """A store with four episodes: sql-001 solved, sql-002 failed, a test-split episode, and one without a step."""

    async def record() -> None:
        runtime, _ = sim_runtime(store_url)
        async with runtime.run():
            solved = (await runtime.reset(task_id="sql-001", seed=1)).episode_id
            await runtime.call("list_tables", {}, solved)
            await runtime.call("run_query", {"sql": "SELECT COUNT(*) FROM customers"}, solved)
            await runtime.call("submit_answer", COUNT_CUSTOMERS, solved)
            failed = (await runtime.reset(task_id="sql-002", seed=2)).episode_id
            await runtime.call("submit_answer", {"rows": [["nothing", 1]]}, failed)
            tested = (await runtime.reset(split="test", seed=3)).episode_id
            await runtime.call("list_tables", {}, tested)
            await runtime.reset(seed=4)  # no step: exported all the same (an episode whose model never acted is data)

    anyio.run(record)
    yield store_url


def export(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "trajectories", "export", "--format", "jsonl", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        check=False,
    )


def test_export_writes_chat_records_with_tool_calls_and_rewards(recorded: str) -> None:
    done = export("--url", recorded)
    assert done.returncode == 0, done.stderr
    assert "exported 4 episodes" in done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    solved = records[0]
    assert solved["task_id"] == "sql-001" and solved["split"] == "train" and solved["seed"] == 1
    assert solved["server"] == "sql" and solved["done"] is True
    assert (solved["reward"], solved["rewards"]) == (1.0, [0.0, 0.0, 1.0])
    roles = [m["role"] for m in solved["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert solved["messages"][0]["content"] == environment.description
    assert solved["messages"][1]["content"].startswith("How many customers are there in total?")
    call = solved["messages"][6]
    assert call["content"] == "" and call["tool_calls"][0]["type"] == "function"
    assert call["tool_calls"][0]["function"]["name"] == "submit_answer"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == COUNT_CUSTOMERS
    result = solved["messages"][7]
    assert result["tool_call_id"] == call["tool_calls"][0]["id"] and json.loads(result["content"])["rows"] == [[60]]
    names = [tool["function"]["name"] for tool in solved["tools"]]
    assert names == ["list_tables", "describe_table", "run_query", "submit_answer"]
    run_query = solved["tools"][2]
    assert run_query["type"] == "function" and run_query["function"]["parameters"]["required"] == ["sql"]
    assert records[1]["task_id"] == "sql-002" and records[1]["reward"] < 1.0
    idle = records[3]  # no step: the prompt and nothing after it, reward 0
    assert ([m["role"] for m in idle["messages"]], idle["rewards"], idle["reward"]) == (["system", "user"], [], 0.0)


def test_export_filters_by_split_reward_server_and_done(recorded: str, tmp_path: Path) -> None:
    def task_ids(*args: str) -> list[str]:
        out = tmp_path / "out.jsonl"
        done = export("--url", recorded, "--output", str(out), *args)
        assert done.returncode == 0, done.stderr
        return [json.loads(line)["task_id"] for line in out.read_text().splitlines()]

    everything = task_ids()
    assert len(everything) == 4
    idle = everything[3]
    assert task_ids("--min-steps", "1") == everything[:3]
    assert task_ids("--split", "train") == ["sql-001", "sql-002", idle]
    assert task_ids("--min-reward", "1") == ["sql-001"]
    assert task_ids("--done-only") == ["sql-001", "sql-002"]
    assert task_ids("--server", "sql") == everything
    assert task_ids("--server", "email") == []
    assert len(task_ids("--split", "test")) == 1 and environment.tasks().get(idle).split == "train"


def test_export_reads_the_store_servers_record_into(recorded: str) -> None:
    done = export(OPENENV_TRAJECTORIES=recorded)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 4


def test_export_of_a_missing_store_says_so_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.db"
    done = export("--url", f"sqlite:///{missing}")
    assert done.returncode == 2 and "No trajectory store" in done.stderr and "Traceback" not in done.stderr
    assert not missing.exists()
    done = export(OPENENV_TRAJECTORIES="off")
    assert done.returncode == 2 and "recording is off" in done.stderr


def test_exported_records_load_with_datasets_and_round_trip(recorded: str, tmp_path: Path) -> None:
    import datasets  # heavy (pyarrow, pandas): imported by this test only

    datasets.disable_progress_bars()
    out = tmp_path / "episodes.jsonl"
    assert export("--url", recorded, "--output", str(out)).returncode == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    loaded = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == 4
    assert [dict(row) for row in loaded] == written


# the server as users run it ------------------------------------------------------------------------


def test_serve_records_every_step_and_loses_nothing_on_sigterm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    port = free_port()
    process = subprocess.Popen(
        [*CLI, "serve", "sql", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OPENENV_TRAJECTORIES": url, "MODE": "sim"},
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        with EnvClient(f"http://127.0.0.1:{port}") as env:
            for seed in range(5):
                env.reset(seed=seed)
                env.step("list_tables")
                env.step("describe_table", {"table": "orders"})
                env.step("submit_answer", COUNT_CUSTOMERS)
            env.reset(seed=99)
            env.step("list_tables")  # still open when the server stops
        assert "openenv_trajectory_steps_written_total" in httpx.get(f"http://127.0.0.1:{port}/metrics").text
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode in (0, -signal.SIGTERM), stderr
    records = list(iter_records(url))
    assert len(records) == 6
    assert [len(r["rewards"]) for r in records] == [3, 3, 3, 3, 3, 1]
    assert all(r["done"] for r in records[:5]) and not records[5]["done"]


def writer_of(server_pid: int) -> int:
    """The trajectory writer process a server started."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat, cmdline = (entry / "stat").read_text(), (entry / "cmdline").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == server_pid and "trajectories.writer" in cmdline:
                return int(entry.name)
    raise AssertionError(f"no trajectory writer under process {server_pid}")


def scheduling_policy(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[38])


def wait_gone(pid: int, seconds: float = 30) -> None:
    """Until ``pid`` has exited (a zombie left to the reaper counts)."""
    deadline = time.monotonic() + seconds
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z":
                return
        except OSError:  # reaped between the two looks
            return
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), f"process {pid} is still running"


def test_a_killed_server_leaves_no_writer_behind_and_what_it_sent_is_stored(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    port = free_port()
    process = subprocess.Popen(
        [*CLI, "serve", "sql", "--port", str(port)],
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OPENENV_TRAJECTORIES": url, "MODE": "sim"},
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        writer = writer_of(process.pid)
        with EnvClient(f"http://127.0.0.1:{port}") as env:
            env.reset(seed=1)
            for _ in range(3):
                env.step("list_tables")
        deadline = time.monotonic() + 20  # sent every half second, then written
        while rows(url, "SELECT COUNT(*) AS n FROM trajectory_steps") != [{"n": 3}] and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        process.kill()  # no shutdown at all: the writer's input ends
        process.wait(timeout=30)
    wait_gone(writer, 20)  # the writer did not outlive its server
    assert rows(url, "SELECT COUNT(*) AS n FROM trajectory_steps") == [{"n": 3}]


def test_a_server_killed_while_its_writer_is_behind_loses_nothing_its_journal_holds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    journals = tmp_path / "data" / "openenv-mcp" / "journal"
    port = free_port()
    process = subprocess.Popen(
        [*CLI, "serve", "sql", "--port", str(port)],
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OPENENV_TRAJECTORIES": url, "OPENENV_DATA_HOME": str(tmp_path / "data"), "MODE": "sim"},
    )
    writer = None
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        writer = writer_of(process.pid)
        assert scheduling_policy(writer) == os.SCHED_IDLE  # the server's steps go first
        os.kill(writer, signal.SIGSTOP)  # a writer far behind: it takes nothing from the journal
        with EnvClient(f"http://127.0.0.1:{port}") as env:
            for seed in range(20):
                env.reset(seed=seed)
                env.step("list_tables")
                env.step("describe_table", {"table": "orders"})
        time.sleep(1.5)  # past the flush interval: every step is in the journal
        segments = list(journals.glob("trajectory-journal-*/segment-*"))
        assert segments and sum(s.stat().st_size for s in segments) > 20_000
        assert rows(url, "SELECT COUNT(*) AS n FROM trajectory_steps") == [{"n": 0}]
    finally:
        process.kill()  # no shutdown at all, with 40 steps still to write
        process.wait(timeout=30)
        if writer is not None:
            os.kill(writer, signal.SIGCONT)
    assert writer is not None
    wait_gone(writer)
    assert rows(url, "SELECT COUNT(*) AS n FROM trajectory_steps") == [{"n": 40}]
    assert list(journals.iterdir()) == []  # read, written and deleted


def test_a_journal_whose_server_and_writer_both_died_is_taken_up_by_the_next_server(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    journals = tmp_path / "data" / "openenv-mcp" / "journal"
    env = {**os.environ, "OPENENV_TRAJECTORIES": url, "OPENENV_DATA_HOME": str(tmp_path / "data"), "MODE": "sim"}

    def serve(port: int) -> subprocess.Popen[bytes]:
        process = subprocess.Popen([*CLI, "serve", "sql", "--port", str(port)], stderr=subprocess.DEVNULL, env=env)
        wait_http(f"http://127.0.0.1:{port}/healthz")
        return process

    def count() -> int:
        return int(rows(url, "SELECT COUNT(*) AS n FROM trajectory_steps")[0]["n"])

    port = free_port()
    process = serve(port)
    writer = None
    try:
        writer = writer_of(process.pid)
        with EnvClient(f"http://127.0.0.1:{port}") as client:
            client.reset(seed=0)
            for _ in range(5):
                client.step("list_tables")
            deadline = time.monotonic() + 20
            while count() < 5 and time.monotonic() < deadline:  # written: the journal's segment still holds them
                time.sleep(0.1)
            os.kill(writer, signal.SIGSTOP)
            for seed in range(1, 11):
                client.reset(seed=seed)
                client.step("describe_table", {"table": "orders"})
                client.step("list_tables")
        time.sleep(1.5)  # past the flush interval: every step is in the journal
    finally:
        process.kill()
        if writer is not None:
            os.kill(writer, signal.SIGKILL)  # both gone, 20 steps journaled and not written
        process.wait(timeout=30)
    assert writer is not None
    wait_gone(writer)
    [left] = list(journals.iterdir())
    assert count() == 5 and list(left.glob("segment-*"))

    port = free_port()
    process = serve(port)  # the next server on the same store takes the journal up
    try:
        deadline = time.monotonic() + 30
        while count() < 25 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left.exists()
    finally:
        process.terminate()
        process.wait(timeout=30)
    steps = rows(url, "SELECT trajectory_id, step FROM trajectory_steps")
    assert len(steps) == len({(s["trajectory_id"], s["step"]) for s in steps}) == 25  # each step once
    assert list(journals.iterdir()) == []


@pytest.mark.anyio
async def test_the_journal_moves_to_a_new_segment_and_the_writer_deletes_what_it_has_read(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "SEGMENT_BYTES", 4096)
    runtime, recorder = sim_runtime(store_url)
    recorder.batch_size = 1  # a frame per step
    async with runtime.run():
        writer = recorder.writer_pid
        assert writer is not None and recorder._journal is not None
        folder = recorder._journal.directory
        os.kill(writer, signal.SIGSTOP)
        try:
            for _ in range(2):
                episode = (await runtime.reset(task_id="sql-001")).episode_id
                for _ in range(15):
                    await runtime.call("describe_table", {"table": "orders"}, episode)
            assert len(list(folder.glob("segment-*"))) >= 5
        finally:
            os.kill(writer, signal.SIGCONT)
        with anyio.fail_after(20):
            while recorder.pending:
                await anyio.sleep(0.05)
        assert [p.name for p in folder.glob("segment-*")] == [f"segment-{recorder._journal.number:06d}"]
    assert rows(store_url, "SELECT COUNT(*) AS n FROM trajectory_steps") == [{"n": 30}]
    assert not folder.exists()


def test_captured_turns_join_their_episode_in_a_store_made_before_turns_existed(recorded: str) -> None:
    engine = create_engine(recorded)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE trajectory_turns"))  # as a file written by an older version
    engine.dispose()
    before = list(iter_records(recorded))
    assert len(before) == 4 and not any("turns" in r or "tokens" in r for r in before)
    solved, failed = before[0]["episode_id"], before[1]["episode_id"]
    exact = [
        Turn(prompt_ids=[7, 8], completion_ids=[9, 10], logprobs=[-0.1, -1e-07], model="m", finish_reason="tool_calls"),
        Turn(prompt_ids=[7, 8, 9, 10, 11], completion_ids=[12], logprobs=[-9999.0], model="m", finish_reason="stop"),
    ]
    rewritten = [  # a template that drops the first turn's text from the second prompt
        Turn(prompt_ids=[7, 8], completion_ids=[9], logprobs=[-0.5], model="m"),
        Turn(prompt_ids=[7, 8, 11], completion_ids=[12], logprobs=[-0.25], model="m"),
    ]

    async def capture() -> None:
        async with TurnRecorder(recorded) as recorder:  # opening it adds the table
            await recorder("sql", solved, exact)
            await recorder("sql", failed, rewritten)
            await recorder("email", solved, exact[:1])  # another server's episode with the same id: not joined

    anyio.run(capture)
    after = {r["episode_id"]: r for r in iter_records(recorded)}
    assert [t["logprobs"] for t in after[solved]["turns"]] == [[-0.1, -1e-07], [-9999.0]]
    assert after[solved]["turns"][1] == {
        "prompt_ids": [7, 8, 9, 10, 11], "completion_ids": [12], "logprobs": [-9999.0], "model": "m",
        "finish_reason": "stop",
    }  # fmt: skip
    assert after[solved]["tokens"] == {
        "prompt_ids": [7, 8],
        "completion_ids": [9, 10, 11, 12],
        "completion_mask": [1, 1, 0, 1],
        "completion_logprobs": [-0.1, -1e-07, 0.0, -9999.0],
    }
    assert len(after[failed]["turns"]) == 2 and after[failed]["tokens"] is None
    assert "turns" not in after[before[2]["episode_id"]]


def test_store_creates_its_tables_once(store_url: str) -> None:
    store = TrajectoryStore(store_url)
    store.create()
    store.create()
    assert store.save_toolset(server="s", description="d", tools=[]) == store.save_toolset(
        server="s", description="d", tools=[]
    )
    store.close()


def _serve_with_default_store(tmp_path: Path, data_home: Path) -> tuple[Path, str]:
    """``openenv-mcp serve sql`` started from an empty directory with OPENENV_TRAJECTORIES unset."""
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if k != "OPENENV_TRAJECTORIES"}
    process = subprocess.Popen(
        [*CLI, "serve", "sql", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=workdir,
        env={**environ, "XDG_DATA_HOME": str(data_home), "MODE": "sim"},
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        with EnvClient(f"http://127.0.0.1:{port}") as env:
            env.reset(seed=1)
            assert not env.step("list_tables").observation.is_error
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode in (0, -signal.SIGTERM), stderr
    return workdir, stderr


def test_the_default_store_lives_in_the_user_data_directory_not_the_working_one(tmp_path: Path) -> None:
    workdir, stderr = _serve_with_default_store(tmp_path, tmp_path / "data")
    store = tmp_path / "data" / "openenv-mcp" / "trajectories.db"
    assert f"Recording trajectories to sqlite:///{store}" in stderr
    assert list(workdir.iterdir()) == []
    assert [len(r["rewards"]) for r in iter_records(f"sqlite:///{store}")] == [1]


def test_an_unwritable_default_location_is_a_warning_and_the_server_still_serves(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the data directory would go\n")
    workdir, stderr = _serve_with_default_store(tmp_path, blocker / "data")
    assert "Recording no trajectories" in stderr and "OPENENV_TRAJECTORIES" in stderr
    assert list(workdir.iterdir()) == []


def test_the_journal_hands_its_backlog_to_the_writer_a_few_batches_and_megabytes_at_a_time(tmp_path: Path) -> None:
    """A transaction takes the frames waiting, up to a count and a size (the first whatever its size): a backlog
    of batches of thousands of steps is not turned into rows all at once."""
    folder = tmp_path / "journal"
    folder.mkdir()
    appender = journal.JournalAppender(folder, "sqlite:///x.db")
    ends = [appender.append(bytes([n]) * 1000) for n in range(7)]
    appender.close()
    reader = journal.JournalReader(folder)
    taken = []
    while frames := reader.frames(5, 2500):
        taken.append([frame[0] for _, frame in frames])
        assert frames[-1][0] == ends[sum(map(len, taken)) - 1]  # each frame with where it ends
    assert taken == [[0, 1, 2], [3, 4, 5], [6]]  # 3,000 bytes reach the budget
    reader.close()
    assert reader.frames(5, 10) == []
    big = tmp_path / "big"
    big.mkdir()
    appender = journal.JournalAppender(big, "sqlite:///x.db")
    for n in range(3):
        appender.append(bytes([n]) * 5000)
    appender.close()
    reader = journal.JournalReader(big)
    assert [len(reader.frames(5, 2500)) for _ in range(4)] == [1, 1, 1, 0]  # a frame larger than the budget goes alone
    reader.close()
