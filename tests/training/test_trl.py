"""TRL: the environment_factory class over real servers, and a real GRPOTrainer run on it.

The adapter itself needs no TRL (it only builds a class), so its behaviour on bad input is tested here in the
project's venv. What TRL makes of the class is tested with TRL itself, in a venv of its own, ``.venv/trl``
(torch 2.13.0 CPU build, trl, transformers, datasets: about 1.1 GB, see tests/interop/trl-requirements.txt),
made on first use and reused while that file is unchanged: the schemas TRL renders for the model, and two
optimizer steps of ``GRPOTrainer`` with ``examples/trl_grpo.py`` against a sim server started here.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.client import EnvClient
from openenv_mcp.environment.catalog import load_environment, server_names
from openenv_mcp.errors import (
    BackendUnavailable,
    ConfigError,
    EpisodeError,
    EpisodeFinished,
    ResetNeeded,
    ToolFailed,
    ToolNotFound,
)
from openenv_mcp.models import TaskInfo
from openenv_mcp.rewards.curriculum import Curriculum
from openenv_mcp.servers.sql import environment as sql
from openenv_mcp.training.trl import ToolEnvironment, environment_factory, reward_function, task_rows, trl_schema
from tests.support import LiveServer, free_port, live_server, peer_venv
from tests.support.worlds import COUNTER_WORKER, command, write_tasks

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "tests" / "interop" / "trl-requirements.txt"
VENV = ROOT / ".venv" / "trl"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "WANDB_MODE": "disabled", "NO_PROXY": "127.0.0.1",
           "OMP_NUM_THREADS": "1"}  # fmt: skip
installs_trl = pytest.mark.timeout(900)  # the first use installs TRL and torch (3-4 min here)


@pytest.fixture(scope="module")
def sql_server() -> Iterator[LiveServer]:
    with live_server(sql, mode="sim", max_episodes=64) as server:
        yield server


@pytest.fixture
def SqlEnv(sql_server: LiveServer) -> Iterator[type[ToolEnvironment]]:
    cls = environment_factory(sql_server.url, timeout=10)
    yield cls
    cls.close_all()


# the class, without TRL ------------------------------------------------------------------------------------


def test_the_class_has_the_servers_tools_as_methods_and_nothing_else_public(SqlEnv: type[ToolEnvironment]) -> None:
    public = sorted(name for name in vars(SqlEnv) if callable(vars(SqlEnv)[name]) and not name.startswith("_"))
    assert public == sorted(t.name for t in sql.tools)  # TRL offers every public function but reset as a tool
    assert SqlEnv.__name__ == "SqlEnv" and SqlEnv.server == "sql"


def test_reset_opens_the_rows_task_and_calls_are_steps_of_it(
    SqlEnv: type[ToolEnvironment], sql_server: LiveServer
) -> None:
    env = SqlEnv()
    prompt = env.reset(prompt=[{"role": "user", "content": ""}], task_id="sql-001", split="train", seed=3)
    assert prompt.startswith("How many customers are there in total?")
    state = sql_server.runtime.episode(env.episode_id or "")
    assert (state.task.id, state.seed) == ("sql-001", 3)
    assert '"customers"' in env.list_tables()  # type: ignore[attr-defined]
    assert (env.steps, env.reward, env.done) == (1, 0.0, False)
    env.submit_answer(sql="SELECT COUNT(*) FROM customers")  # type: ignore[attr-defined]
    assert (env.steps, env.reward, env.done) == (2, 1.0, True)
    assert env.get_reward() == 1.0 and reward_function([env]) == [1.0]
    first = env.episode_id
    env.reset(task_id="sql-002")
    assert first not in sql_server.runtime.episodes  # a reset closes the previous episode
    assert (env.steps, env.reward, env.done) == (0, 0.0, False)


def test_refused_calls_raise_with_the_servers_message(SqlEnv: type[ToolEnvironment]) -> None:
    env = SqlEnv()
    env.reset(task_id="sql-001")
    with pytest.raises(ToolFailed, match="no such table"):
        env.run_query(sql="SELECT * FROM nowhere")  # type: ignore[attr-defined]
    with pytest.raises(ToolNotFound, match=r"drop_everything.*available"):
        env._call("drop_everything", {})
    with pytest.raises(Exception, match="sql") as invalid:
        env.run_query(sql="")  # type: ignore[attr-defined]
    assert invalid.type.__name__ == "InvalidToolArguments"
    env.submit_answer(sql="SELECT 1")  # type: ignore[attr-defined]
    with pytest.raises(EpisodeFinished, match=r"is over.*answer without tools"):
        env.list_tables()  # type: ignore[attr-defined]
    assert env.steps == 2  # refused calls are not steps


def test_an_unknown_task_id_names_the_server_and_the_task(SqlEnv: type[ToolEnvironment]) -> None:
    env = SqlEnv()
    with pytest.raises(EpisodeError, match=r"server 'sql' at http://127.0.0.1:.*'sql-999'.*GET /tasks lists"):
        env.reset(task_id="sql-999")
    with pytest.raises(ResetNeeded, match=r"server 'sql'.*reset"):
        env.list_tables()  # type: ignore[attr-defined]
    assert env.episode_id is None


def test_a_server_that_is_down_is_a_clear_error_not_a_hang() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(BackendUnavailable, match=f"{url}.*start it"):
        environment_factory(url, timeout=2)
    with pytest.raises(BackendUnavailable, match=f"{url}.*start it"):
        task_rows(url, timeout=2)


def test_a_server_that_goes_away_mid_episode_is_a_clear_error() -> None:
    with live_server(sql, mode="sim") as server:
        cls = environment_factory(server.url, timeout=2)
        env = cls()
        env.reset(task_id="sql-001")
    with pytest.raises(BackendUnavailable, match=r"server 'sql' at .*timeout 2 s.*openenv-mcp serve sql"):
        env.list_tables()  # type: ignore[attr-defined]
    with pytest.raises(BackendUnavailable, match="start it"):
        env.reset(task_id="sql-001")


def test_dropped_instances_and_close_all_leave_no_episode_open(
    SqlEnv: type[ToolEnvironment], sql_server: LiveServer
) -> None:
    before = len(sql_server.runtime.episodes)
    dropped = SqlEnv()
    dropped.reset(task_id="sql-001")
    kept = [SqlEnv() for _ in range(3)]
    for env in kept:
        env.reset(task_id="sql-002")
    assert len(sql_server.runtime.episodes) == before + 4
    del dropped
    gc.collect()
    assert len(sql_server.runtime.episodes) == before + 3
    assert SqlEnv.close_all() == 3
    assert len(sql_server.runtime.episodes) == before


def test_task_rows_are_one_per_task_and_seed_with_the_reset_columns(sql_server: LiveServer) -> None:
    rows = task_rows(sql_server.url, split="train", seeds=[0, 1])
    train = [t.id for t in sql.tasks() if t.split == "train"]
    assert [r["task_id"] for r in rows] == train + train
    assert {r["seed"] for r in rows} == {0, 1} and {r["split"] for r in rows} == {"train"}
    assert rows[0]["prompt"] == [{"role": "system", "content": sql.description}, {"role": "user", "content": ""}]


def test_rows_with_a_prefix_give_each_generation_a_fork_of_one_root(
    SqlEnv: type[ToolEnvironment], sql_server: LiveServer
) -> None:
    prefix = [{"tool": "list_tables", "arguments": {}}]
    [row] = task_rows(sql_server.url, tasks=[task_info(sql_server, "sql-001")], seeds=[4], prefix=prefix, group_size=3)
    assert [m["role"] for m in row["prompt"]] == ["system", "user", "assistant", "tool"]
    assert row["prompt"][1]["content"].startswith("How many customers")
    assert row["prompt"][2]["tool_calls"][0]["function"] == {"name": "list_tables", "arguments": {}}
    assert '"customers"' in row["prompt"][3]["content"] and row["prompt"][3]["name"] == "list_tables"
    assert (row["task_id"], row["seed"], row["group_size"], json.loads(row["prefix"])) == ("sql-001", 4, 3, prefix)
    before = len(sql_server.runtime.episodes)
    assert before == 0  # the prefix played to write the prompt left nothing open

    group = [SqlEnv() for _ in range(3)]  # as TRL does: one instance per generation, each reset with the row
    assert [env.reset(**row) for env in group] == [None] * 3  # the prompt holds the task and the prefix already
    episodes = [sql_server.runtime.episode(env.episode_id or "") for env in group]
    [root] = {episode.forked_from for episode in episodes}  # one root...
    assert root is not None and root not in sql_server.runtime.episodes  # ...closed once forked
    assert len(sql_server.runtime.episodes) == 3  # the members, nothing else
    assert {(e.task.id, e.seed, e.step_count, e.total_reward, e.done) for e in episodes} == {
        ("sql-001", 4, 1, 0.0, False)
    }
    assert {(env.steps, env.reward, env.done) for env in group} == {(1, 0.0, False)}
    group[0].submit_answer(sql="SELECT COUNT(*) FROM customers")  # type: ignore[attr-defined]
    group[1].run_query(sql="SELECT 1")  # type: ignore[attr-defined]
    assert [(env.steps, env.reward, env.done) for env in group] == [(2, 1.0, True), (2, 0.0, False), (1, 0.0, False)]

    again = SqlEnv()  # the row's next use (the next step, the next epoch): a new group from a new root
    again.reset(**row)
    assert sql_server.runtime.episode(again.episode_id or "").forked_from not in (None, root)
    assert len(sql_server.runtime.episodes) == 3 + 3  # its member, and two waiting for the next two generations
    assert SqlEnv.close_all() == 4 + 2
    assert len(sql_server.runtime.episodes) == 0


def test_a_prefix_row_that_cannot_work_says_what_to_fix(SqlEnv: type[ToolEnvironment], sql_server: LiveServer) -> None:
    env = SqlEnv()
    [row] = task_rows(
        sql_server.url, tasks=[task_info(sql_server, "sql-001")], prefix=[("list_tables", {})], group_size=2
    )
    with pytest.raises(ConfigError, match="needs 'group_size'"):
        env.reset(**{**row, "group_size": None})
    with pytest.raises(ConfigError, match=r"'prompt' ending with the prefix's chat.*task_rows\(prefix=...\)"):
        env.reset(**{**row, "prompt": [{"role": "user", "content": ""}]})
    with pytest.raises(ToolNotFound, match=r"server 'sql'.*Action 0 \(drop_everything\) of the shared prefix"):
        env.reset(**{**row, "prefix": '[{"tool": "drop_everything"}]', "group": "bad"})
    with pytest.raises(ConfigError, match="needs group_size"):
        task_rows(sql_server.url, prefix=[("list_tables", {})])
    assert len(sql_server.runtime.episodes) == 0


def test_task_rows_can_hold_a_curriculums_draws(sql_server: LiveServer) -> None:
    with EnvClient(sql_server.url) as client:
        curriculum = Curriculum(client.tasks(split="train").tasks, seed=3)
    for task_id in ["sql-001", "sql-001", "sql-001"]:  # sql-001 is solved every time: too easy, drawn less
        curriculum.record(task_id, 1.0)
    drawn = [curriculum.sample("train") for _ in range(40)]
    rows = task_rows(sql_server.url, tasks=drawn, seeds=[0])
    assert [r["task_id"] for r in rows] == [t.id for t in drawn]
    assert sum(r["task_id"] == "sql-001" for r in rows) < 40 / len({t.id for t in curriculum.tasks})


def task_info(server: LiveServer, task_id: str) -> TaskInfo:
    with EnvClient(server.url) as client:
        [task] = [task for task in client.tasks().tasks if task.id == task_id]
        return task


# with TRL itself -----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def trl_python() -> Path:
    """The Python of ``.venv/trl``: TRL, torch (CPU) and our package (editable), installed once per requirements."""
    return peer_venv(VENV, REQUIREMENTS, "TRL (pip install -r tests/interop/trl-requirements.txt)")


SCHEMAS = """
import json, sys
from transformers.utils import get_json_schema
from openenv_mcp.models import TaskInfo
from openenv_mcp.training.trl import environment_factory
out = {}
for url in sys.argv[1:]:
    cls = environment_factory(url)
    env = cls()
    out[cls.server] = {name: get_json_schema(getattr(env, name))["function"]
                       for name in vars(cls) if callable(vars(cls)[name]) and not name.startswith("_")}
print(json.dumps(out))
"""


@installs_trl
def test_the_schema_trl_shows_the_model_is_each_tools_input_schema(
    trl_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKER_COMMAND", command(COUNTER_WORKER))  # the worker server wraps a world it is given
    monkeypatch.setenv("WORKER_TASKS", str(write_tasks(tmp_path)))
    environments = {name: load_environment(name) for name in server_names()}
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(live_server(env, mode="sim")) for name, env in environments.items()}
        done = subprocess.run(
            [str(trl_python), "-c", SCHEMAS, *(s.url for s in servers.values())],
            capture_output=True, text=True, timeout=300, env={**os.environ, **OFFLINE}, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rendered = json.loads(done.stdout)
    assert sorted(rendered) == sorted(environments)  # every shipped server
    for name, env in environments.items():
        assert sorted(rendered[name]) == sorted(t.name for t in env.tools)
        for tool in env.tools:
            seen = rendered[name][tool.name]
            seen.pop("return", None)  # the return type: the model never writes it, templates leave it out
            mcp = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
            assert seen == trl_schema(mcp), f"{name}.{tool.name}"
            properties = tool.input_schema.get("properties", {})
            assert seen["parameters"]["properties"].keys() == properties.keys()
            assert set(seen["parameters"].get("required", [])) == set(tool.input_schema.get("required", []))
            for prop, value in properties.items():  # the words the model reads are the tool's own (or its title/name)
                words = value.get("description") or value.get("title") or prop
                assert seen["parameters"]["properties"][prop]["description"] == " ".join(words.split())


class _Recorder:
    """Every episode the server opens (in order, with its source and state if a fork), every step, and each
    episode's reward (and steps) when it is closed."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.forked: dict[str, tuple[str, int, float]] = {}
        self.tools: list[str] = []
        self.closed: dict[str, float] = {}
        self.steps: dict[str, int] = {}

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def on_reset(self, episode: Any, observation: Any) -> None:
        self.opened.append(episode.id)
        if episode.forked_from is not None:
            self.forked[episode.id] = (episode.forked_from, episode.step_count, episode.total_reward)

    def on_step(self, episode: Any, call: Any, outcome: Any, seconds: float) -> None:
        self.tools.append(call.tool.name)

    def on_close(self, episode: Any) -> None:
        self.closed[episode.id] = episode.total_reward
        self.steps[episode.id] = episode.step_count


@installs_trl
def test_grpo_trains_two_steps_on_the_servers_rewards(trl_python: Path, tmp_path: Path) -> None:
    """Two rows of sql-001, one plain and one after a shared prefix (list_tables): one optimizer step each."""
    recorder = _Recorder()
    report = tmp_path / "report.json"
    example = [str(ROOT / "examples" / "trl_grpo.py"), "--tasks", "sql-001", "--prefix", '[{"tool": "list_tables"}]']
    with live_server(sql, mode="sim", max_episodes=64) as server:
        server.runtime.observe(recorder)
        done = subprocess.run(
            [str(trl_python), *example, "--server", server.url, "--report", str(report)],
            capture_output=True, text=True, timeout=600, env={**os.environ, **OFFLINE}, cwd=ROOT, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-4000:]
        assert len(server.runtime.episodes) == 0  # nothing left open on the server
    facts = json.loads(report.read_text())
    assert facts["global_step"] == 2 and facts["class"] == "SqlEnv"
    assert recorder.tools and set(recorder.tools) <= {"list_tables", "submit_answer"}  # the model's calls reached it
    batch = facts["batch"]
    assert set(recorder.closed) == set(recorder.opened)  # every episode closed: roots, members, plain ones
    forks: dict[str, list[str]] = {}
    for episode, (root, _, _) in recorder.forked.items():
        forks.setdefault(root, []).append(episode)
    # task_rows played the prefix once to write the row's prompt (a root and one fork); TRL's prefix step forked
    # one root once per generation, each member after the prefix's one step with its reward so far
    [(_, made), (root, members)] = sorted(forks.items(), key=lambda item: len(item[1]))
    assert len(made) == 1 and len(members) == batch
    assert {recorder.forked[m][1:] for m in members} == {(1, 0.0)} and recorder.steps[root] == 1
    assert len({(recorder.steps[m], recorder.closed[m]) for m in members}) > 1  # then each went its own way
    # TRL's probe instance opens no episode; each optimizer step plays one batch of episodes, in order
    rollouts = [e for e in recorder.opened if e not in forks and e not in made]
    assert len(rollouts) == 2 * batch and members in (rollouts[:batch], rollouts[batch:])
    logged = [entry for entry in facts["log_history"] if "rewards/SqlEnv/mean" in entry]
    assert len(logged) == 2
    for step, entry in enumerate(logged):
        rewards = [recorder.closed[e] for e in rollouts[step * batch : (step + 1) * batch]]
        assert float(entry["rewards/SqlEnv/mean"]) == pytest.approx(sum(rewards) / batch, abs=1e-6)
        assert float(entry["reward"]) == pytest.approx(sum(rewards) / batch, abs=1e-6)
    assert "step 2: reward" in done.stdout
