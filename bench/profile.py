"""Where the server's time goes: ``python -m bench.profile [--path step|ws|batch|ws-batch|mcp|reset] [--seconds S]``.

Starts the trivial server (``bench/trivial.py``; ``--env NAME`` for a shipped one), drives one path with the
benchmark's lean clients, records the server with py-spy (``.venv/bin/py-spy``, sampling at 1 kHz) and prints the
functions with the most samples: inclusive (the function or anything it called) and self. The collapsed stacks are
kept in ``bench/results/profile-PATH.txt`` (feed them to any flame-graph tool).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

from bench import measure, servers
from bench.measure import Http

RESULTS = Path(__file__).resolve().parent / "results"
STEP = {"tool": "list_tables", "arguments": {}}


async def _drive(path: str, server: servers.Server, seconds: float, clients: int) -> float:
    port = server.port
    if path == "mcp":
        from mcp import Client

        async def one(client: Client) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                await client.call_tool("list_tables", {})

        async with Client(server.url + "/mcp") as client:
            await one(client)
        return 0.0
    setup = Http(port)
    episodes = measure.open_episodes(setup, clients) if server.spec.ready_path == "/readyz" else [""] * clients
    body = measure.step_body("list_tables", {})
    if path == "reset":
        reset = measure.request(port, "POST", "/reset", {})
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            episode = json.loads(setup.send(reset)[1])["episode_id"]
            setup.call("DELETE", f"/episodes/{episode}")
        setup.close()
        return 0.0
    setup.close()
    if path == "step":
        requests = [measure.request(port, "POST", "/step", body, {"X-Episode-Id": e}) for e in episodes]
        return await measure.http_throughput(port, requests, 1, 0.2, seconds)
    if path == "batch":
        batch = json.dumps({"steps": [{"episode_id": e, "action": STEP} for e in episodes]}).encode()
        return await measure.http_throughput(
            port, [measure.request(port, "POST", "/step_batch", batch)], clients, 0.2, seconds
        )
    if path == "ws":
        step = json.dumps({"op": "step", "action": STEP})
        return await measure.ws_throughput(
            port, [json.dumps({"op": "reset"})], lambda i: step, clients, 1, '{"ok":true', 0.2, seconds
        )
    message = json.dumps({"op": "step_batch", "steps": [{"episode_id": e, "action": STEP} for e in episodes]})
    return await measure.ws_throughput(port, [], lambda i: message, 1, clients, '{"ok":true', 0.2, seconds)


def _summary(collapsed: Path, top: int) -> str:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    lines = [f"{total} samples", "", "inclusive:"]
    lines += [f"  {100 * n / total:5.1f}%  {frame}" for frame, n in inclusive.most_common(top)]
    lines += ["", "self:"]
    lines += [f"  {100 * n / total:5.1f}%  {frame}" for frame, n in own.most_common(top)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", choices=["step", "ws", "batch", "ws-batch", "mcp", "reset"], default="step")
    parser.add_argument("--env", default="trivial")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--trajectories", action="store_true", help="record every step (the shipped default)")
    args = parser.parse_args()
    if args.env == "bare":  # the bare FastAPI baseline (path step only), for comparison
        from bench.trivial import TABLES

        spec = servers.bare_fastapi(TABLES)
    else:
        recording = args.trajectories
        spec = (
            servers.ours_trivial(recording=recording)
            if args.env == "trivial"
            else servers.ours(args.env, recording=recording)
        )
    server = servers.start(spec, RESULTS / "logs")
    out = RESULTS / f"profile-{args.path}.txt"
    try:
        servers.wait_ready(server, time.monotonic() + servers.READY_TIMEOUT)
        py_spy = str(Path(sys.executable).parent / "py-spy")
        seconds = str(int(args.seconds) + 1)
        argv = [py_spy, "record", "--pid", str(server.process.pid), "--rate", "1000", "--format", "raw", "--threads"]
        spy = subprocess.Popen(
            [*argv, "--output", str(out), "--duration", seconds, "--nonblocking"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)
        rate = asyncio.run(_drive(args.path, server, args.seconds, args.clients))
        spy.wait()
    finally:
        servers.stop(server)
    if rate:
        print(f"{args.path}: {rate:,.0f} steps/s while profiled")
    print(_summary(out, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
