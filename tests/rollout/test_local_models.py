"""A local model as users run one (llama.cpp, vLLM, SGLang, Ollama): every format its calls come in is played,
every episode says why it ended, failures name the endpoint and the limit, and token capture reads each server's
shape (tests/support/local_model.py answers as those servers do)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from openenv_mcp.errors import ConfigError
from openenv_mcp.rollout import ChatModel, OpenAIPolicy, Sampling, run_rollouts
from openenv_mcp.servers.sql import environment
from openenv_mcp.trajectories import Turn, TurnRecorder, iter_records
from tests.support import LiveServer, live_server, serve_app
from tests.support.local_model import CONTEXT_ERROR, LocalModel
from tests.support.model import TASKS

pytestmark = pytest.mark.anyio
CLI = [sys.executable, "-m", "openenv_mcp.cli"]
SEED = 4  # any task: the local model always ends by submitting the gold query
PROMPT = TASKS.pick(task_id=None, split=None, seed=SEED).prompt
CAPTURE = Sampling(capture_tokens=True)


@pytest.fixture(scope="module")
def local() -> Iterator[tuple[str, LocalModel]]:
    model = LocalModel(tokens="llama")
    with serve_app(model.app) as url:
        yield f"{url}/v1", model
        model.release()


class Kept:
    """A turn sink that keeps what it is sent."""

    def __init__(self) -> None:
        self.episodes: list[tuple[str, str, list[Turn]]] = []

    async def __call__(self, server: str, episode_id: str, turns: Sequence[Turn]) -> None:
        self.episodes.append((server, episode_id, list(turns)))


# style: reward, steps, end reason, (model turns, replies without a call, calls read from the text, refused calls)
EXPECTED = {
    "tool_calls": (1.0, 2, "done", (2, 0, 0, 0)),
    "fence": (1.0, 2, "done", (2, 0, 2, 0)),
    "json": (1.0, 2, "done", (2, 0, 2, 0)),
    "echo": (1.0, 2, "done", (3, 0, 3, 1)),
    "plan": (1.0, 2, "done", (1, 0, 2, 0)),
    "hermes": (1.0, 2, "done", (2, 0, 2, 0)),
    "prose": (0.0, 0, "text_only", (2, 2, 0, 0)),
    "length": (0.0, 0, "length", (1, 1, 0, 0)),
    "context": (0.0, 1, "context_full", (2, 0, 1, 0)),
}


async def test_every_format_a_local_model_writes_is_played_and_every_episode_says_why_it_ended(
    sim_server: LiveServer, local: tuple[str, LocalModel]
) -> None:
    base_url, model = local
    for style, (reward, steps, reason, side) in EXPECTED.items():
        kept = Kept()
        async with OpenAIPolicy(ChatModel(base_url=base_url, model=style), sink=kept) as policy:
            [result] = (await run_rollouts(sim_server.url, policy, episodes=1, seed=SEED)).results
        found = (result.model.turns, result.model.text_replies, result.model.parsed_calls, result.model.refused_calls)
        assert (result.reward, result.steps, result.end_reason, found, result.error) == (
            reward, steps, reason, side, None
        ), style  # fmt: skip
        assert result.seconds >= result.env_seconds + result.model.seconds * 0.99 > 0
        [(server, episode_id, turns)] = kept.episodes
        assert (server, episode_id, len(turns)) == ("sql", result.episode_id, side[0])
        assert [t.end_reason for t in turns] == [None] * (len(turns) - 1) + [reason]
        sent = [r for r in model.requests if r["model"] == style and r["messages"][1]["content"] == PROMPT]
        if style == "fence":  # the conversation goes on as a server-side parser leaves it: text, then the call
            reply, answer = sent[-1]["messages"][2:4]
            assert reply["content"] == "I will call list_tables now." and reply["tool_calls"] == [
                {"id": "call_1_1", "type": "function", "function": {"name": "list_tables", "arguments": "{}"}}
            ]
            assert answer["tool_call_id"] == "call_1_1" and "customers" in answer["content"]
            assert turns[0].calls[0] | {"answer": None} == {
                "id": "call_1_1", "name": "list_tables", "arguments": "{}", "source": "json", "step": 1,
                "answer": None, "note": None,
            }  # fmt: skip
        if style == "echo":  # a schema standing for no arguments is read as {}; one standing for values is refused
            assert turns[0].calls[0]["note"] == "schema_echo" and turns[0].calls[0]["step"] == 1
            refused = turns[1].calls[0]
            assert refused["step"] is None and "its JSON schema, not values" in refused["answer"]
            assert sent[-1]["messages"][5]["content"] == refused["answer"]
        if style == "prose":  # a reply without a call is never the final answer unremarked
            assert sent[-1]["messages"][-1]["role"] == "user"
            assert turns[0].reminder == sent[-1]["messages"][-1]["content"]
            assert turns[0].reminder.startswith("Your reply called no tool, so nothing happened in the environment.")
            assert "<tool_call>" in turns[0].reminder and "list_tables, describe_table" in turns[0].reminder
            assert result.model.last_text == "The shop has 60 customers, so the answer is 60."
        if style == "length":
            assert turns[0].finish_reason == "length" and turns[0].parse == {
                "parser": "hermes", "problems": [turns[0].parse["problems"][0]]
            }  # fmt: skip
        if style == "context":
            assert turns[-1].error == (
                f"The model's context is full: {base_url}/chat/completions answered 400: "
                f"{CONTEXT_ERROR['error']['message']}"
            )
    assert len(sim_server.runtime.episodes) == 0


async def test_a_slow_model_fails_its_episode_naming_the_endpoint_and_the_limit(
    sim_server: LiveServer, local: tuple[str, LocalModel]
) -> None:
    base_url, _ = local
    async with OpenAIPolicy(ChatModel(base_url=base_url, model="slow", timeout=0.5)) as policy:
        [result] = (await run_rollouts(sim_server.url, policy, episodes=1, seed=SEED)).results
    assert result.end_reason == "model_error" and result.error == (
        f"PolicyError: The chat endpoint {base_url}/chat/completions did not answer within 0.5 s (--timeout); "
        "give it longer, or fewer tokens to write (--max-tokens)"
    )


@pytest.mark.parametrize("shape", ["llama", "sglang"])
async def test_token_capture_reads_llama_cpp_and_sglang_exactly(sim_server: LiveServer, shape: str) -> None:
    model = LocalModel(tokens=shape)
    kept = Kept()
    with serve_app(model.app) as url:
        async with OpenAIPolicy(ChatModel(base_url=f"{url}/v1", model="hermes"), sampling=CAPTURE, sink=kept) as policy:
            found = await policy.check([])
            summary = await run_rollouts(sim_server.url, policy, episodes=1, seed=SEED)
    where = "its /apply-template and /tokenize" if shape == "llama" else "the answer"
    assert found.endswith(f"prompt ids from {where}")
    assert summary.results[0].end_reason == "done"
    [(_, _, turns)] = kept.episodes
    served = model.served[1:]  # the first answer was the pre-flight's
    assert [(t.prompt_ids, t.completion_ids, t.logprobs) for t in turns] == [
        (s["prompt_ids"], s["completion_ids"], s["logprobs"]) for s in served
    ]
    assert turns[0].prompt_ids[0] == 1  # the BOS the chat route adds, which /tokenize adds when asked to


async def test_a_server_that_reports_no_token_ids_is_refused_at_the_pre_flight(sim_server: LiveServer) -> None:
    model = LocalModel(tokens=None)
    with serve_app(model.app) as url:
        async with OpenAIPolicy(ChatModel(base_url=f"{url}/v1", model="hermes"), sampling=CAPTURE) as policy:
            with pytest.raises(ConfigError, match="No completion token ids in the answer's choice"):
                await policy.check([])
    assert len(model.requests) == 1


def eval_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "eval", *args, "--no-progress"], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_eval_plays_calls_written_as_text_names_the_model_and_refuses_another_model_in_the_same_out(
    sim_server: LiveServer, local: tuple[str, LocalModel], tmp_path: Path
) -> None:
    base_url, _ = local
    tasks = ("--task", "sql-024", "--task", "sql-025", "-k", "1")
    done = eval_cli(tmp_path, sim_server.url, "--policy", "openai", "--base-url", base_url, "--model", "fence", *tasks)
    assert done.returncode == 0, done.stderr
    assert f"model endpoint {base_url}/chat/completions answered in" in done.stderr  # the pre-flight
    out = tmp_path / "eval-results"
    lines = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    assert lines[0]["run"] | {"tasks": None} == {
        "server": "sql", "split": "test", "k": 1, "policy": "openai", "model": "fence", "base_url": base_url,
        "temperature": None, "max_tokens": None, "max_turns": None, "tool_choice": "auto", "tool_parser": "auto",
        "reminders": 1, "seed": 0, "threshold": 1.0, "tasks": None,
    }  # fmt: skip
    for trial in lines[1:]:
        assert (trial["reward"], trial["steps"], trial["end_reason"], trial["parsed_calls"]) == (1.0, 2, "done", 2)
        assert trial["seconds"] > trial["env_seconds"] > 0 and trial["model_seconds"] > 0
    results = json.loads((out / "results.json").read_text())
    assert results["run"]["model"] == "fence" and results["overall"]["end_reasons"] == {"done": 2}
    page = (out / "report.html").read_text()
    assert "<tr><th>model</th><td>fence</td></tr>" in page and "<tr><th>tool parser</th><td>auto</td></tr>" in page

    other = eval_cli(tmp_path, sim_server.url, "--policy", "openai", "--base-url", base_url, "--model", "prose", *tasks)
    assert other.returncode == 2 and "holds another evaluation (model 'fence' there, 'prose' now)" in other.stderr
    again = eval_cli(
        tmp_path, sim_server.url, "--policy", "openai", "--base-url", base_url, "--model", "prose", *tasks,
        "--restart",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["overall"]["end_reasons"] == {"text_only": 2} and results["overall"]["mean_reward"] == 0.0
    assert "ended: text_only 2" in again.stdout


async def test_the_export_is_the_conversation_the_model_had_and_keeps_episodes_without_steps(
    local: tuple[str, LocalModel], tmp_path: Path
) -> None:
    base_url, _ = local
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with live_server(environment, record=True, mode="sim", trajectories=store) as server:
        async with TurnRecorder(store) as recorder:
            for style in ("echo", "prose"):
                async with OpenAIPolicy(ChatModel(base_url=base_url, model=style), sink=recorder) as policy:
                    await run_rollouts(server.url, policy, episodes=1, seed=SEED)
    echo, prose = iter_records(store)
    roles = [m["role"] for m in echo["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    first, refusal = echo["messages"][2], echo["messages"][5]
    assert first["content"] == "I will call list_tables now." and first["tool_calls"][0]["id"] == "call_1_1"
    assert refusal["tool_call_id"] == "call_2_1" and "its JSON schema, not values" in refusal["content"]
    assert echo["rewards"] == [0.0, 1.0] and echo["end_reason"] == "done"
    assert [t["calls"][0]["step"] for t in echo["model_turns"]] == [1, None, 2]
    assert "turns" not in echo  # no tokens were asked for
    assert prose["rewards"] == [] and prose["end_reason"] == "text_only"  # no step, and exported all the same
    assert [m["role"] for m in prose["messages"]] == ["system", "user", "assistant", "user", "assistant"]
    assert prose["messages"][2]["content"] == "The shop has 60 customers, so the answer is 60."
