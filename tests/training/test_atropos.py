"""Atropos: our BaseEnv plays sql episodes through an OpenAI-compatible model and feeds the real Atropos API.

The model is scripted (an OpenAI-compatible endpoint started here); the protocol is real: the env is
``python -m openenv_mcp.training.atropos`` in Atropos' own CLI, it registers with ``run-api`` from atroposlib,
calls the model through Atropos' server manager, and its scored groups are read back as a trainer
reads them (``POST /register``, ``GET /batch``).

Atropos lives in a venv of its own, ``.venv/atropos``, made here on first use (see
tests/interop/atropos-requirements.txt for what goes in and why): atroposlib and its dependencies
(transformers, wandb, openai, ...) are far too heavy for the project's venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from openenv_mcp.environment.tasks import stratified_sample
from openenv_mcp.servers.sql import environment
from openenv_mcp.servers.sql.tasks import SqlTask
from openenv_mcp.trajectories import openai_tools
from tests.support import LiveServer, even_task, free_port, live_server, peer_venv, serve_app
from tests.support.model import reply

ROOT = Path(__file__).resolve().parents[2]
INTEROP = ROOT / "tests" / "interop"
REQUIREMENTS = INTEROP / "atropos-requirements.txt"
TOKENIZER = INTEROP / "atropos_tokenizer.py"
VENV = ROOT / ".venv" / "atropos"
ATROPOSLIB = "atroposlib==0.4.0"  # installed with --no-deps: its imports are in REQUIREMENTS
TASKS = environment.tasks()
BY_PROMPT = {task.prompt: task for task in TASKS}
WRONG = "SELECT 1 WHERE 1 = 0"  # no rows: earns 0 on every task
GROUP_SIZE = 4
installs_atropos = pytest.mark.timeout(900)  # the first use installs Atropos (35-65 s here)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "WANDB_MODE": "disabled", "NO_PROXY": "127.0.0.1"}


even = even_task
EVAL_TASKS = 12  # the evaluation plays a sample of the 289 test tasks, every difficulty in it


def rewards_of_a_group(task_id: str) -> list[float]:
    """What the four variants of the scripted model earn on a task, sorted."""
    return sorted([1.0 if even(task_id) else 0.0, 0.0, 1.0, 0.0])


# an OpenAI-compatible endpoint with a scripted model ---------------------------------------------------


class GroupModel:
    """``POST /v1/chat/completions``, scripted so that the episodes of a group differ, as sampling makes them.

    The k-th conversation opened on a task plays variant k % 4 (kept in its tool call ids):
    0 lists the tables, then submits the gold query on even-numbered tasks and a wrong one on odd;
    1 submits a wrong query; 2 calls a tool that does not exist, then submits the gold query;
    3 answers in words. Any other prompt (Atropos' health check says "hi") gets a word.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.opened: Counter[str] = Counter()
        self.app = FastAPI()

        @self.app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            body = await request.json()
            messages = body["messages"]
            task = BY_PROMPT.get(next((m["content"] for m in messages if m["role"] == "user"), ""))
            if not isinstance(task, SqlTask):
                return reply({"role": "assistant", "content": "ok"})
            self.requests.append({"authorization": request.headers.get("authorization"), **body})
            turns = [m for m in messages if m["role"] == "assistant"]
            if turns:
                variant = int(turns[0]["tool_calls"][0]["id"].split("_")[1])
            else:
                variant, self.opened[task.id] = self.opened[task.id] % 4, self.opened[task.id] + 1
            return reply(self.turn(task, variant, len(turns)))

    @staticmethod
    def turn(task: SqlTask, variant: int, turn: int) -> dict[str, Any]:
        def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            function = {"name": name, "arguments": json.dumps(arguments)}
            tool_calls = [{"id": f"call_{variant}_{turn}", "type": "function", "function": function}]
            return {"role": "assistant", "content": None, "tool_calls": tool_calls}

        script: dict[int, list[dict[str, Any]]] = {
            0: [call("list_tables", {}), call("submit_answer", {"sql": task.gold_sql if even(task.id) else WRONG})],
            1: [call("submit_answer", {"sql": WRONG})],
            2: [call("drop_everything", {}), call("submit_answer", {"sql": task.gold_sql})],
            3: [],
        }
        steps = script[variant]
        return steps[turn] if turn < len(steps) else {"role": "assistant", "content": "I have answered."}


class PrefixModel:
    """``POST /v1/chat/completions`` for shared-prefix groups: it plays the prefix, then four continuations.

    A conversation without assistant turns is the root's: it lists the tables (the prefix). One that opens
    with the prefix (a tool call ``prefix_1``) is a member's: the k-th opened on a task plays variant k % 4,
    kept in its own tool call ids: 0 submits the gold query; 1 a wrong one; 2 runs a query, then submits
    the gold one; 3 answers in words. A group's scores are therefore [0, 0, 1, 1] whatever the task.
    """

    def __init__(self) -> None:
        self.roots = 0
        self.opened: Counter[str] = Counter()
        self.app = FastAPI()

        @self.app.post("/v1/chat/completions")
        async def complete(request: Request) -> JSONResponse:
            messages = (await request.json())["messages"]
            task = BY_PROMPT.get(next((m["content"] for m in messages if m["role"] == "user"), ""))
            if not isinstance(task, SqlTask):
                return reply({"role": "assistant", "content": "ok"})
            turns = [m for m in messages if m["role"] == "assistant"]
            if not turns:
                self.roots += 1
                return reply(self.call("call_root", "list_tables", {}))
            own = [m for m in turns if not m["tool_calls"][0]["id"].startswith("prefix_")] if turns else []
            if own:
                variant = int(own[0]["tool_calls"][0]["id"].split("_")[1])
            else:
                variant, self.opened[task.id] = self.opened[task.id] % 4, self.opened[task.id] + 1
            script = {
                0: [("submit_answer", {"sql": task.gold_sql})],
                1: [("submit_answer", {"sql": WRONG})],
                2: [("run_query", {"sql": "SELECT 1"}), ("submit_answer", {"sql": task.gold_sql})],
                3: [],
            }[variant]
            if len(own) < len(script):
                return reply(self.call(f"call_{variant}_{len(own)}", *script[len(own)]))
            return reply({"role": "assistant", "content": f"I have answered ({variant})."})

    @staticmethod
    def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        function = {"name": name, "arguments": json.dumps(arguments)}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        }


class Opened:
    """The server's observer: each episode opened (its source and state then) and each one closed."""

    def __init__(self) -> None:
        self.opened: dict[str, tuple[str | None, int, float]] = {}
        self.closed: set[str] = set()

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def on_reset(self, episode: Any, observation: Any) -> None:
        self.opened[episode.id] = (episode.forked_from, episode.step_count, episode.total_reward)

    def on_step(self, episode: Any, call: Any, outcome: Any, seconds: float) -> None: ...

    def on_close(self, episode: Any) -> None:
        self.closed.add(episode.id)


@pytest.fixture
def model() -> Iterator[tuple[str, GroupModel]]:
    scripted = GroupModel()
    with serve_app(scripted.app) as url:
        yield f"{url}/v1", scripted


@pytest.fixture(scope="module")
def sql_server() -> Iterator[LiveServer]:
    with live_server(environment, mode="sim", max_episodes=64) as server:
        yield server


# the Atropos side --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def atropos_python() -> Path:
    """The Python of ``.venv/atropos``: atroposlib and our package (editable), installed once per requirements."""
    return peer_venv(VENV, REQUIREMENTS, f"Atropos (pip install {ATROPOSLIB})", no_deps=ATROPOSLIB)


@pytest.fixture(scope="module")
def tokenizer(atropos_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tokenizer")
    done = subprocess.run(
        [str(atropos_python), str(TOKENIZER), str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **OFFLINE},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return folder


def env_config(tmp_path: Path, *, server: str, model: str, api: str, tokenizer: Path, **env: Any) -> Path:
    """The YAML config of ``python -m openenv_mcp.training.atropos`` (Atropos' CLI takes ``--config``)."""
    config = {
        "env": {
            "server_url": server,
            "rollout_server_url": api,
            "tokenizer_name": str(tokenizer),
            "group_size": GROUP_SIZE,
            "use_wandb": False,
            "max_token_length": 1024,
            **env,
        },
        "openai": {"base_url": model, "model_name": "scripted", "api_key": "sk-test"},
    }
    path = tmp_path / "atropos.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_env(python: Path, env: list[str], command: str, config: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start an Atropos env (``env``: ``["-m", "openenv_mcp.training.atropos"]`` or a script) with a subcommand."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(python), *env, command, "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **OFFLINE},
            cwd=ROOT,
        )


@pytest.fixture
def api(atropos_python: Path, tmp_path: Path) -> Iterator[str]:
    """Atropos' API server (``run-api`` from atroposlib) on a free port."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "run-api.log").open("wb")
    process = subprocess.Popen(
        [str(VENV / "bin" / "run-api"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **OFFLINE},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "run-api.log").read_text()
            try:
                if httpx.get(f"{url}/status", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "run-api did not answer within 60 s"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def read_batches(trainer: httpx.Client, env: subprocess.Popen[bytes], log: Path, count: int) -> list[Any]:
    """``count`` batches from Atropos' API, as a trainer reads them (bounded)."""
    batches: list[Any] = []
    deadline = time.monotonic() + 120
    while len(batches) < count:
        exited = env.poll() is not None  # it may stop before the trainer has read all it sent
        batch = trainer.get("/batch").json()["batch"]
        if batch is not None:
            batches.append(batch)
            continue
        assert not exited, f"the env stopped with {len(batches)} batches sent:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"{len(batches)} batches from the env in 120 s:\n{log.read_text()[-4000:]}"
        time.sleep(0.2)
    return batches


def register(api: str, tmp_path: Path, request: pytest.FixtureRequest) -> httpx.Client:
    """Register as a trainer with Atropos' API (two groups per batch) and take the first, empty, batch."""
    trainer = httpx.Client(base_url=api, timeout=10)
    request.addfinalizer(trainer.close)
    registration = {
        "wandb_group": "test", "wandb_project": "openenv-mcp", "batch_size": 2 * GROUP_SIZE,
        "max_token_len": 1 << 16, "checkpoint_dir": str(tmp_path / "checkpoints"),
        "save_checkpoint_interval": -1, "starting_step": 0, "num_steps": 10,
    }  # fmt: skip
    assert "uuid" in trainer.post("/register", json=registration).json()
    assert trainer.get("/batch").json() == {"batch": None}  # the trainer has started: envs may register
    return trainer


def stop(process: subprocess.Popen[bytes], log: Path, *, timeout: float) -> int:
    """Wait for ``process`` (bounded); kill it if it overstays. Its exit code."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"the Atropos env did not finish within {timeout:g} s:\n{log.read_text()[-4000:]}")


# ---------------------------------------------------------------------------------------------------------


@installs_atropos
def test_scored_groups_reach_the_api_with_the_environment_rewards(
    atropos_python: Path,
    tokenizer: Path,
    api: str,
    sql_server: LiveServer,
    model: tuple[str, GroupModel],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    model_url, scripted = model
    trainer = register(api, tmp_path, request)
    # total_steps 1: the env stops once the trainer has taken two batches or two more wait in the queue
    config = env_config(tmp_path, server=sql_server.url, model=model_url, api=api, tokenizer=tokenizer, total_steps=1)
    log = tmp_path / "env.log"
    env = run_env(atropos_python, ["-m", "openenv_mcp.training.atropos"], "serve", config, log)
    batches = read_batches(trainer, env, log, 2)
    assert stop(env, log, timeout=60) == 0, log.read_text()[-4000:]

    groups = [group for batch in batches for group in batch]
    assert len(groups) == 4 and sum(len(g["tokens"]) for g in groups) == 4 * GROUP_SIZE
    train_order = [t.id for t in TASKS if t.split == "train"]
    assert len({g["messages"][0][1]["content"] for g in groups}) == 4  # each item is another task
    for group in groups:
        assert group["env_id"] == 0
        assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == len(group["messages"]) == 4
        prompts = {next(m["content"] for m in messages if m["role"] == "user") for messages in group["messages"]}
        [task] = [BY_PROMPT[p] for p in prompts]  # one task per group: items cycle the train split
        assert task.id in train_order
        assert sorted(group["scores"]) == rewards_of_a_group(task.id)  # the environment's rewards
        for tokens, masks, messages in zip(group["tokens"], group["masks"], group["messages"], strict=True):
            assert [m["role"] for m in messages[:2]] == ["system", "user"]
            assert messages[0]["content"] == environment.description
            text = bytes(t for t in tokens if t < 256).decode()  # the test's tokenizer: token i < 256 is byte i
            assert task.prompt in text and '"name": "run_query"' in text  # the prompt, and the tools offered
            learnt = bytes(m for m in masks if 0 <= m < 256).decode()
            assistant = [m for m in messages if m["role"] == "assistant"]
            assert len(masks) == len(tokens) and masks[0] == -100
            for message in assistant:  # every assistant turn is learnt, and nothing else
                for tool_call in message.get("tool_calls") or []:
                    assert f'"name": "{tool_call["function"]["name"]}"' in learnt
                assert (message["content"] or "") in learnt
            assert task.prompt not in learnt and "[[" not in learnt

    assert len(sql_server.runtime.episodes) == 0  # every episode was closed, cut short or not
    first = scripted.requests[0]
    assert first["authorization"] == "Bearer sk-test" and first["model"] == "scripted"
    assert first["tools"] == openai_tools(
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in environment.tools
    )
    assert first["temperature"] == 1.0 and first["max_tokens"] == 1024


@installs_atropos
def test_groups_from_a_shared_prefix_are_forks_that_compare_continuations(
    atropos_python: Path, tokenizer: Path, api: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    scripted = PrefixModel()
    observer = Opened()
    trainer = register(api, tmp_path, request)
    with live_server(environment, mode="sim", max_episodes=64) as server:
        server.runtime.observe(observer)
        with serve_app(scripted.app) as model_url:
            config = env_config(
                tmp_path, server=server.url, model=f"{model_url}/v1", api=api, tokenizer=tokenizer, total_steps=1,
                prefix_steps=1,
            )  # fmt: skip
            log = tmp_path / "env.log"
            env = run_env(atropos_python, ["-m", "openenv_mcp.training.atropos"], "serve", config, log)
            batches = read_batches(trainer, env, log, 2)
            assert stop(env, log, timeout=60) == 0, log.read_text()[-4000:]
        assert len(server.runtime.episodes) == 0  # roots and members: all closed

    groups = [group for batch in batches for group in batch]
    assert len(groups) == 4
    for group in groups:
        assert sorted(group["scores"]) == [0.0, 0.0, 1.0, 1.0]  # the continuations' rewards, each its own
        transcripts = group["messages"]
        prefix = transcripts[0][:4]  # system, the task, the prefix's tool call and its answer
        assert [m["role"] for m in prefix] == ["system", "user", "assistant", "tool"]
        assert prefix[2]["tool_calls"][0]["function"]["name"] == "list_tables"
        assert all(messages[:4] == prefix for messages in transcripts)  # one shared state...
        assert len({json.dumps(messages[4]) for messages in transcripts}) == 4  # ...then four continuations
        for tokens, masks in zip(group["tokens"], group["masks"], strict=True):
            text = bytes(t for t in tokens if t < 256).decode()
            learnt = bytes(m for m in masks if 0 <= m < 256).decode()
            assert '"name": "list_tables"' in text and '"name": "list_tables"' not in learnt  # the prefix: context
    # one root per group; each opened at step 0 and closed; group_size forks of it, each opened after its 1 step
    roots = [e for e, (source, _, _) in observer.opened.items() if source is None]
    forks = [(source, steps, reward) for source, steps, reward in observer.opened.values() if source is not None]
    assert len(roots) == scripted.roots >= 4 and set(observer.opened) == observer.closed
    assert sorted(forks) == sorted((root, 1, 0.0) for root in roots for _ in range(GROUP_SIZE))


@installs_atropos
def test_the_example_evaluates_each_task_of_a_sample_of_the_test_split_once(
    atropos_python: Path,
    tokenizer: Path,
    sql_server: LiveServer,
    model: tuple[str, GroupModel],
    tmp_path: Path,
) -> None:
    model_url, scripted = model
    evals = tmp_path / "evals"
    config = env_config(
        tmp_path, server=sql_server.url, model=model_url, api="http://127.0.0.1:9", tokenizer=tokenizer,
        data_dir_to_save_evals=str(evals), seed=7, eval_tasks=EVAL_TASKS,
    )  # fmt: skip
    log = tmp_path / "env.log"
    example = run_env(atropos_python, [str(ROOT / "examples" / "atropos_env.py")], "evaluate", config, log)
    assert stop(example, log, timeout=120) == 0, log.read_text()[-4000:]

    sample = stratified_sample(TASKS.select(split="test"), EVAL_TASKS, seed=7, key=lambda t: t.difficulty or "-")
    test_ids = [t.id for t in sample]
    assert {t.difficulty for t in sample} == {"easy", "medium", "hard"}
    metrics = json.loads((evals / "metrics.json").read_text())["results"]["all"]
    expected = sum(1 for t in test_ids if even(t)) / len(test_ids)  # each task's first conversation: variant 0
    assert metrics["eval/mean_reward"] == pytest.approx(expected)
    assert metrics["eval/success_rate"] == pytest.approx(expected)
    assert (metrics["eval/episodes"], metrics["eval/errors"]) == (len(test_ids), 0)
    samples = [json.loads(line) for line in (evals / "samples.jsonl").read_text().splitlines()]
    assert sorted(s["task_id"] for s in samples) == sorted(test_ids)
    assert {s["seed"] for s in samples} == {7}
    assert all(s["reward"] == (1.0 if even(s["task_id"]) else 0.0) and s["done"] for s in samples)
    assert {r["temperature"] for r in scripted.requests} == {0.0}
    assert len(sql_server.runtime.episodes) == 0


def test_only_the_atropos_module_imports_atroposlib() -> None:
    sources = [*(ROOT / "openenv_mcp").rglob("*.py"), *(ROOT / "servers").rglob("*.py")]
    importers = sorted(str(p.relative_to(ROOT)) for p in sources if "atroposlib" in p.read_text())
    assert importers == ["openenv_mcp/training/atropos.py"]  # the project's venv need not hold it
