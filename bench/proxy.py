"""What the capture proxy adds to a model turn: ``python -m bench.proxy [--rounds 6] [--turns 8] [--upstream URL]``.

One conversation of ``--turns`` turns (sql's system prompt and five tools; each turn's reply and a tool result go
back into the history, as a harness's grows; played once through the proxy first) is replayed twice per round,
interleaved (order reversed every other round):
through the proxy (``/ep/ID/v1/chat/completions``, which renders, tokenizes, generates from ids, parses and
records each turn into SQLite) and **directly** against the inference server, the baseline:

- against the token-level stand-in (the default: ``tests/support/token_model.py``, its own process), the direct
  call is ``POST /completion`` with the very prompt ids the proxy sent, so the difference is the proxy's own work;
- against a real ``llama-server`` (``--upstream URL``, started with ``--jinja``), the direct call is its own
  ``/v1/chat/completions`` with the same messages and tools (greedy, the same token limit), which templates and
  tokenizes inside the server.

It reports the median added latency per turn (proxy minus direct, ms) and its ratio, and the proxy process's CPU
per turn and per token (prompt + completion tokens it handled), read from ``/proc``. Results go to
``bench/results/proxy.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.servers import _cpu_seconds
from openenv_mcp.proxy import CaptureProxy, EngineOptions
from openenv_mcp.trajectories.store import TrajectoryStore

RESULTS = Path(__file__).resolve().parent / "results"
SYSTEM = "You are connected to a shop's SQL database. Use the tools to answer; submit_answer with the final query."
TOOL_NAMES = ("list_tables", "describe_table", "run_query", "sample_rows", "submit_answer")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name.replace('_', ' ')} tool of the sql environment.",
            "parameters": {"type": "object", "properties": {"sql": {"type": "string"}}, "additionalProperties": False},
        },
    }
    for name in TOOL_NAMES
]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within 60 s")


def _episode(store: str, episode_id: str) -> None:
    """An episode row for the proxy to record into (what a recording server's reset writes)."""
    opened = TrajectoryStore(store)
    opened.create()
    toolset = opened.save_toolset(server="sql", description=SYSTEM, tools=[])
    row = {"id": episode_id, "episode_id": episode_id, "server": "sql", "toolset_id": toolset, "task_id": "bench"}
    row.update(split="test", seed=0, prompt="bench", max_steps=100, created_at=time.time())
    row.update(step_count=0, total_reward=0.0, done=False, dropped_steps=0)
    opened.write(opened=[row])
    opened.close()


def _played(client: httpx.Client, url: str, turns: int, max_tokens: int) -> list[list[dict[str, Any]]]:
    """Play ``turns`` turns through ``url`` as a harness does (each reply and a tool result go back into the
    history); the conversation before each turn, to replay on both sides."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "How many?"}]
    before = []
    for turn in range(turns):
        before.append(list(messages))
        reply = _chat(client, url, messages, max_tokens)["choices"][0]["message"]
        messages.append({key: value for key, value in reply.items() if value is not None})
        for call in reply.get("tool_calls") or []:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"row {turn}: " + "x" * 200})
        if not reply.get("tool_calls"):
            messages.append({"role": "user", "content": "Go on with the tools."})
    return before


def _chat(client: httpx.Client, url: str, messages: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
    body = {"model": "m", "messages": messages, "tools": TOOLS, "temperature": 0, "max_tokens": max_tokens}
    answer = client.post(url, json=body)
    answer.raise_for_status()
    return dict(answer.json())


def run(args: argparse.Namespace) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    store = f"sqlite:///{scratch / 'runs.db'}"
    standin = None
    upstream = args.upstream
    if upstream is None:
        port = _free_port()
        standin = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "tests.support.token_model:standin_app",
                "--port",
                str(port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        upstream = f"http://127.0.0.1:{port}"
        _wait(f"{upstream}/props")
    try:
        options = EngineOptions(max_tokens=args.max_tokens)
        with CaptureProxy(upstream, store=store, options=options, subprocess=True, timeout=600) as proxy:
            return _measure(args, proxy, store, upstream, standin is not None)
    finally:
        if standin is not None:
            standin.terminate()
            standin.wait(timeout=20)


def _measure(args: argparse.Namespace, proxy: CaptureProxy, store: str, upstream: str, standin: bool) -> dict[str, Any]:
    if proxy.process is None:
        raise RuntimeError("the proxy runs as its own process here")
    pid = proxy.process.pid
    added: list[float] = []
    ratios: list[float] = []
    cpu = 0.0
    tokens = 0
    turns = 0
    with httpx.Client(timeout=600) as client:
        _episode(store, f"warm-{os.getpid()}")  # warms both sides; its prompts are the direct side's ids
        warm = f"{proxy.base_url(f'warm-{os.getpid()}')}/chat/completions"
        histories = _played(client, warm, args.turns, args.max_tokens)
        prompts = [row["prompt_ids"] for row in proxy.turns(f"warm-{os.getpid()}")]
        for round_number in range(args.rounds):
            episode = f"bench-{os.getpid()}-{round_number}"
            _episode(store, episode)
            seconds = {"proxy": 0.0, "direct": 0.0}
            for side in ("proxy", "direct") if round_number % 2 else ("direct", "proxy"):
                before = _cpu_seconds(pid)
                for index, messages in enumerate(histories):
                    started = time.perf_counter()
                    if side == "proxy":
                        _chat(client, f"{proxy.base_url(episode)}/chat/completions", messages, args.max_tokens)
                    elif standin:
                        body = {"prompt": prompts[index], "n_predict": args.max_tokens, "n_probs": 1}
                        client.post(f"{upstream}/completion", json={**body, "return_tokens": True}).raise_for_status()
                    else:
                        _chat(client, f"{upstream}/v1/chat/completions", messages, args.max_tokens)
                    seconds[side] += time.perf_counter() - started
                if side == "proxy":
                    cpu += _cpu_seconds(pid) - before
            rows = proxy.turns(episode)
            tokens += sum(len(row["prompt_ids"]) + len(row["completion_ids"]) for row in rows)
            turns += len(rows)
            added.append((seconds["proxy"] - seconds["direct"]) / len(histories) * 1000)
            ratios.append(seconds["proxy"] / seconds["direct"])
    return {
        "upstream": "stand-in (POST /completion with the ids)" if standin else f"llama-server {upstream}",
        "rounds": args.rounds,
        "turns_per_round": args.turns,
        "added_ms_per_turn": statistics.median(added),
        "ratio_proxy_to_direct": statistics.median(ratios),
        "proxy_cpu_ms_per_turn": cpu / turns * 1000,
        "proxy_cpu_us_per_token": cpu / tokens * 1e6,
        "tokens_per_turn": tokens / turns,
        "segments": sorted({row["segment"] for row in proxy.turns(episode)}),
        "raw": {"added_ms": added, "ratios": ratios},
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.proxy", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--upstream", help="a real llama-server's URL (default: the stand-in, in its own process)")
    args = parser.parse_args()
    result = run(args)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "proxy.json").write_text(json.dumps(result, indent=2))
    r = result
    print(f"{r['upstream']}: {r['turns_per_round']} turns x {r['rounds']} rounds, {r['tokens_per_turn']:.0f} tok/turn")
    print(f"  added latency  {r['added_ms_per_turn']:.2f} ms/turn (proxy / direct {r['ratio_proxy_to_direct']:.2f})")
    print(f"  proxy CPU      {r['proxy_cpu_ms_per_turn']:.2f} ms/turn, {r['proxy_cpu_us_per_token']:.2f} us/token")
    print(f"  load average   {r['load_average'][0]:.1f}")


if __name__ == "__main__":
    main()
