"""The harnesses in front of a real llama.cpp server with a real small model (Qwen2.5-Coder-0.5B-Instruct, from
the package index): each pinned CLI plays an sql task through the command line and the capture proxy, and every
turn the episode exports is checked against the server, token by token: its prompt ids are the server's own
tokenisation of their text, and its first sampled ids, fed back one at a time, are each among the server's
likeliest at their place with the log-probability recorded for them.

It runs when asked (``OPENENV_HARNESS_REAL_MODEL=1``, or a comma list of harnesses: a pass of all nine takes most
of an hour, past the suite's budget) where a llama.cpp build exists (``tests/support/llama.py`` says where it looks;
``python scripts/llama_server.py`` builds one), and skips, saying which, otherwise. The harnesses' prompts are up
to 20k tokens, so the server gets a 32k context. A turn costs 10 s to minutes on two cores (a first prompt of 20k
tokens), and the small model often writes its calls in a form no harness reads and goes on: each harness has 15
minutes (``OPENENV_HARNESS_TIMEOUT`` seconds if set; then it ends ``harness_timeout``, its turns checked all the
same), replies of 96 tokens at most and, for smolagents, 4 steps. Being run on its own, the server has both cores
(``OPENENV_LLAMA_THREADS`` if set): at 300 s and one thread, Codex's, Claude Code's and opencode's first prompts
(8-20k tokens) had not finished on a loaded machine.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from collections.abc import Iterator

import httpx
import pytest

from openenv_mcp.cli import main
from openenv_mcp.harnesses import HARNESSES
from openenv_mcp.servers.sql import environment
from tests.support import live_server
from tests.support.harnesses import exported, installed, left_running
from tests.support.llama import llama_server, llama_server_binary, small_model

BINARY = llama_server_binary()
CHOSEN = os.environ.get("OPENENV_HARNESS_REAL_MODEL", "")  # "1": every harness; else a comma list of names
TIME_LIMIT = int(os.environ.get("OPENENV_HARNESS_TIMEOUT", "900"))  # seconds a harness has for its episode
THREADS = int(os.environ.get("OPENENV_LLAMA_THREADS", "2"))
RESCORED = 8  # the first sampled ids of each turn that are scored again, one request each
pytestmark = [
    pytest.mark.skipif(
        not CHOSEN,
        reason="a pass of the nine harnesses on the real model takes most of an hour, past the suite's budget: set "
        "OPENENV_HARNESS_REAL_MODEL=1 (or a list, =cline,continue) to run it",
    ),
    pytest.mark.skipif(
        BINARY is None,
        reason="no llama.cpp build here (python scripts/llama_server.py builds llama-server from the pinned source, "
        "or set OPENENV_LLAMA_SERVER)",
    ),
    pytest.mark.timeout(TIME_LIMIT + 1800),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """The llama.cpp server's URL, a recording sql server's URL, and their shared store."""
    assert BINARY is not None
    directory = tmp_path_factory.mktemp("real")
    store = f"sqlite:///{directory / 'runs.db'}"
    with (
        llama_server(BINARY, small_model(), context=32768, threads=THREADS, log=directory / "llama.log") as upstream,
        live_server(environment, record=True, mode="sim", trajectories=store) as server,
    ):
        yield upstream, server.url, store


@pytest.mark.parametrize("name", sorted(HARNESSES) if CHOSEN in ("", "1") else CHOSEN.split(","))
def test_each_harness_plays_on_the_real_model_and_its_turns_are_the_servers_tokens(
    served: tuple[str, str, str], name: str
) -> None:
    installed(name)
    upstream, env_url, store = served
    before = set(exported(store))
    command = ["rollout", env_url, "--policy", "harness", "--harness", name, "--base-url", upstream]
    command += ["--model", "qwen", "--store", store, "-n", "1", "--no-progress", "--max-tokens", "96"]
    command += ["--harness-timeout", str(TIME_LIMIT), "--timeout", str(TIME_LIMIT), "--max-turns", "4"]
    output = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        main(command)
    seconds = time.perf_counter() - started
    printed = output.getvalue()
    records = [record for key, record in exported(store).items() if key not in before]
    assert len(records) == 1, printed
    (record,) = records
    turns = record.get("turns", [])  # none when the harness never finished a turn in its time
    assert turns, printed
    with httpx.Client(base_url=upstream, timeout=900) as server:
        for number, turn in enumerate(turns, start=1):
            prompt, completion, logprobs = turn["prompt_ids"], turn["completion_ids"], turn["logprobs"]
            assert len(logprobs) == len(completion) > 0 and all(value <= 0 for value in logprobs)
            text = server.post("/detokenize", json={"tokens": prompt}).json()["content"]
            again = server.post("/tokenize", json={"content": text, "add_special": False, "parse_special": True})
            assert again.json()["tokens"] == prompt  # the prompt is the server's own tokenisation of its text
            for at in range(min(len(completion), RESCORED)):  # teacher-forced: each sampled id, scored again
                body = {"prompt": prompt + completion[:at], "n_predict": 1, "n_probs": 40, "temperature": 0}
                body["cache_prompt"] = True
                ranked = server.post("/completion", json=body).json()["completion_probabilities"][0]["top_logprobs"]
                scored = {entry["id"]: entry["logprob"] for entry in ranked}
                assert completion[at] in scored, f"turn {number}, token {at}: not among the server's 40 likeliest"
                # the same ids evaluated from a cached prefix rather than whole differ by up to 0.1 here
                assert abs(scored[completion[at]] - logprobs[at]) < 0.15, (at, scored[completion[at]], logprobs[at])
    left = left_running(name)
    ended = next(line for line in printed.splitlines() if line.startswith("ended"))
    print(f"\n{name}: {seconds:.0f} s, {len(turns)} turns, steps {len(record['rewards'])}, {ended}, left {left}")
    assert left == []
    assert json.dumps(record["rewards"])  # the steps, possibly none: a 0.5B model may answer without a call
