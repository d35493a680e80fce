"""The prod switch: the same server, the same tools, on a real PostgreSQL database.

    .venv/bin/python -m openenv_mcp.servers.sql.load postgresql://postgres@127.0.0.1:5432/shop \
        --create --reader shop_reader
    .venv/bin/python examples/prod_switch.py postgresql://shop_reader@127.0.0.1:5432/shop

It starts `openenv-mcp serve sql` twice, in sim and in prod (SQL_DATABASE_URL), checks that an
MCP client sees byte-identical tool lists, runs the same query in both, and shows that the prod
control plane has no reset/step/state.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import httpx
from mcp import Client


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(mode: str, env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "openenv_mcp.cli", "serve", "sql", "--mode", mode, "--port", str(port)]
    process = subprocess.Popen(command, env={**os.environ, **env}, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"the {mode} server did not become ready")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


async def tools_and_query(url: str) -> tuple[str, list[list[object]]]:
    async with Client(f"{url}/mcp") as client:
        tools = await client.list_tools()
        listed = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools.tools])
        result = await client.call_tool("run_query", {"sql": "SELECT name FROM regions ORDER BY region_id"})
        return listed, result.structured_content["rows"]


def main(database_url: str) -> None:
    with serve("sim", {}) as sim, serve("prod", {"SQL_DATABASE_URL": database_url}) as prod:
        sim_tools, sim_rows = anyio.run(tools_and_query, sim)
        prod_tools, prod_rows = anyio.run(tools_and_query, prod)
        print("tool lists identical:", sim_tools == prod_tools)
        print("sim rows: ", sim_rows)
        print("prod rows:", prod_rows)
        print("prod health:", httpx.get(f"{prod}/healthz").json())
        print("prod POST /reset:", httpx.post(f"{prod}/reset").status_code)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "postgresql://shop_reader@127.0.0.1:5432/shop")
