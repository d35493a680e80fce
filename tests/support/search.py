"""Test helpers for the search environment: a scratch PostgreSQL database loaded with the corpus, MCP calls."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.servers.search.load import load_corpus
from openenv_mcp.servers.search.sphinx import write_config
from tests.support import PG_ADMIN_URL, LiveServer, free_port, require_service

READER = "openenv_reader"


@dataclass(frozen=True)
class SearchDatabase:
    admin_url: str  # may create tables (what an operator gives the loader)
    reader_url: str  # SELECT only (what prod connects as)


@contextmanager
def search_database() -> Iterator[SearchDatabase]:
    """A fresh PostgreSQL database with the corpus loaded by ``openenv_mcp.servers.search.load``; dropped afterwards."""
    import psycopg
    from psycopg import errors, sql

    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        require_service("PostgreSQL", exc)
    name = f"openenv_search_{uuid.uuid4().hex[:10]}"
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER,)).fetchone():
                with suppress(errors.DuplicateObject):  # another test session may create it meanwhile
                    admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(READER)))
            base = PG_ADMIN_URL.rsplit("/", 1)[0]
            load_corpus(f"{base}/{name}", grant=READER)
            host = base.split("@", 1)[1]
            yield SearchDatabase(admin_url=f"{base}/{name}", reader_url=f"postgresql://{READER}@{host}/{name}")
        finally:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


class SphinxService:
    """A ``searchd`` process over an indexed configuration; ``restart`` stops it and starts another."""

    def __init__(self, searchd: str, config: Path, port: int) -> None:
        self.url = f"sphinx://127.0.0.1:{port}"
        self._argv = [searchd, "--config", str(config), "--nodetach"]
        self._log = config.with_name("stdout.log")
        self._port = port
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self._log.open("ab") as out:
            self._process = process = subprocess.Popen(self._argv, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self._port), timeout=1).close()
                return
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"searchd did not start: {self._log.read_text(errors='replace')[-2000:]}"
                    ) from None
                time.sleep(0.02)

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        self._process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def sphinx_service() -> Iterator[SphinxService]:
    """Debian's Sphinx ``searchd`` on a free port, over an index of the corpus in a temporary directory."""
    indexer, searchd = shutil.which("indexer"), shutil.which("searchd")
    if indexer is None or searchd is None:
        require_service("Sphinx (Debian package sphinxsearch)", FileNotFoundError("indexer or searchd not on PATH"))
        raise AssertionError("unreachable")
    with tempfile.TemporaryDirectory(prefix="openenv-sphinx-") as tmp:
        port = free_port()
        config = write_config(Path(tmp), port=port)
        subprocess.run([indexer, "--config", str(config), "--all"], check=True, capture_output=True, timeout=60)
        service = SphinxService(searchd, config, port)
        try:
            service.start()
            yield service
        finally:
            service.stop()


def mcp_calls(server: LiveServer, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Several tools/call over one MCP client session; each result as ``{"error", "text", "data"}``."""
    from mcp import Client

    async def run() -> list[dict[str, Any]]:
        results = []
        async with Client(server.mcp_url) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text if result.content else ""
                results.append({"error": result.is_error, "text": text, "data": result.structured_content})
        return results

    return anyio.run(run)


def mcp_call(server: LiveServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return mcp_calls(server, [(name, arguments)])[0]


def mcp_tool_list(server: LiveServer) -> list[dict[str, Any]]:
    """The tools/list answer, as plain JSON."""
    from mcp import Client

    async def run() -> list[dict[str, Any]]:
        async with Client(server.mcp_url) as client:
            listed = await client.list_tools()
        return [tool.model_dump(mode="json", exclude_none=True) for tool in listed.tools]

    return anyio.run(run)
