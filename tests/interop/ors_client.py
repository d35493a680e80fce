"""Drive our ORS surface with the reference ORS client (the `openreward` package), as a trainer would.

Runs in its own venv (see tests/doors/test_ors.py: openreward pins sse-starlette 2.x, the MCP SDK needs 3.x).
Reads {"runs": [{"scenario": NAME, "url": URL, "env": NAME, ...}]} on stdin and prints one JSON list,
a result per run; a run that raises reports the exception instead of stopping the others.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from openreward import AsyncOpenReward

Run = dict[str, Any]


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


async def _outcome(call: Awaitable[Any]) -> dict[str, Any]:
    """A call's result, or the exception it raised (type, reason, HTTP status, message)."""
    try:
        return {"ok": _plain(await call)}
    except Exception as exc:
        return {
            "raised": type(exc).__name__,
            "reason": getattr(exc, "reason", None),
            "status": getattr(exc, "status", None),
            "message": str(exc),
        }


async def discovery(client: AsyncOpenReward, run: Run) -> dict[str, Any]:
    env = client.environments.get(run["env"], base_url=run["url"])
    train = await env.list_tasks("train")
    return {
        "splits": await env.list_splits(),
        "train": [t.task_spec for t in train],
        "env_names": sorted({t.environment_name for t in train}),
        "num_test": await env.num_tasks("test"),
        "test_2": (await env.get_task("test", 2)).task_spec,
        "last_two": [t.task_spec["id"] for t in await env.get_task_range("train", -2, None)],
        "tools": _plain(await env.list_tools()),
        "openai_tools": await env.list_tools(format="openai"),
        "bad_split": await _outcome(env.num_tasks("validation")),
    }


async def episode(client: AsyncOpenReward, run: Run) -> dict[str, Any]:
    """A whole episode on a task picked from the task list: explore, submit the gold answer, refused after."""
    env = client.environments.get(run["env"], base_url=run["url"])
    task = next(t for t in await env.list_tasks(run["split"]) if t.task_spec["id"] == run["task_id"])
    async with env.session(task=task) as session:
        result = {
            "sid": session.sid,
            "prompt": _plain(await session.get_prompt()),
            "tools": [t.name for t in await session.list_tools()],
            "look": await _outcome(session.call_tool("list_tables", {})),
            "submit": await _outcome(session.call_tool("submit_answer", {"sql": run["gold_sql"]})),
            "after": await _outcome(session.call_tool("list_tables", {})),
        }
    result["after_delete"] = await _outcome(session.call_tool("list_tables", {}))
    return result


async def by_index(client: AsyncOpenReward, run: Run) -> dict[str, Any]:
    """A session by split and index, through the spec's /{env}/... paths when a variant is given."""
    env = client.environments.get(run["env"], variant=run.get("variant"), base_url=run["url"])
    async with env.session(split=run["split"], index=run["index"]) as session:
        return {
            "splits": await env.list_splits(),
            "prompt": _plain(await session.get_prompt()),
            "call": await _outcome(session.call_tool(run["tool"], run["input"])),
        }


async def calls(client: AsyncOpenReward, run: Run) -> dict[str, Any]:
    """Several calls on one session, each result or error reported (the session lives on)."""
    env = client.environments.get(run["env"], base_url=run["url"])
    async with env.session(split=run["split"], index=run["index"]) as session:
        return {"calls": [await _outcome(session.call_tool(name, arguments)) for name, arguments in run["calls"]]}


async def latency(client: AsyncOpenReward, run: Run) -> dict[str, Any]:
    """Mean seconds per call_tool over ``n`` sequential calls (after one warm-up)."""
    env = client.environments.get(run["env"], base_url=run["url"])
    async with env.session(split="train", index=0) as session:
        await session.call_tool(run["tool"], run["input"])
        started = time.perf_counter()
        for _ in range(run["n"]):
            await session.call_tool(run["tool"], run["input"])
        return {"seconds_per_call": (time.perf_counter() - started) / run["n"]}


SCENARIOS: dict[str, Callable[[AsyncOpenReward, Run], Awaitable[dict[str, Any]]]] = {
    "discovery": discovery,
    "episode": episode,
    "by_index": by_index,
    "calls": calls,
    "latency": latency,
}


async def main() -> None:
    runs = json.load(sys.stdin)["runs"]
    client = AsyncOpenReward(api_key="x")
    results = []
    try:
        for run in runs:
            results.append(await _outcome(SCENARIOS[run["scenario"]](client, run)))
    finally:
        await client.environments.aclose()
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
