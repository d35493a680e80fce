"""An MCP agent loop against a running server, with the official MCP SDK client.

    scripts/serve &                                    # sql, sim mode, port 8000
    .venv/bin/python examples/mcp_agent.py http://127.0.0.1:8000

Works in both modes (it asks /healthz which one it is talking to). The "agent" here is scripted
(explore the schema, query, answer); swap in your model's tool-calling loop. In sim mode it first
opens an episode over HTTP and sends its id as the X-Episode-Id header, then reads the episode's reward
and done flag from GET /state: the trainer's channel, which the model never sees (tool results carry
them too only with OPENENV_MCP_REWARD_META=true). In prod there are no episodes and no rewards: the
same calls reach the real database.
"""

from __future__ import annotations

import sys

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main(base_url: str) -> None:
    headers: dict[str, str] = {}
    async with httpx.AsyncClient(base_url=base_url) as control:
        mode = (await control.get("/healthz")).json()["mode"]
        print("mode:", mode)
        if mode == "sim":
            first = (await control.post("/reset", json={"task_id": "sql-001"})).json()
            print("task:", first["observation"]["content"][0]["text"].splitlines()[0])
            headers["X-Episode-Id"] = first["episode_id"]
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as agent,
    ):
        tools = await agent.list_tools()
        print("tools:", ", ".join(tool.name for tool in tools.tools))
        tables = await agent.call_tool("list_tables", {})
        print("tables:", ", ".join(tables.structured_content["result"]))
        columns = await agent.call_tool("describe_table", {"table": "customers"})
        print("customers:", ", ".join(c["name"] for c in columns.structured_content["columns"]))
        answer = await agent.call_tool("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"})
        print(f"answer: {answer.structured_content['rows']}", end="")
    if mode == "sim":
        async with httpx.AsyncClient(base_url=base_url, headers=headers) as control:
            state = (await control.get("/state")).json()
        print(f"  reward: {state['total_reward']}  done: {state['done']}", end="")
    print()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000")
