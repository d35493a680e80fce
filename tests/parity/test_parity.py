"""``openenv-mcp parity`` as users run it: the sql environment's sim (SQLite) against its prod (PostgreSQL).

The gap on task references must stay 0: a change that makes the sim answer differently from PostgreSQL fails here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.runtime import build_runtime
from openenv_mcp.servers.sql import environment
from openenv_mcp.settings import Settings
from openenv_mcp.trajectories import record_trajectories
from tests.support import free_port

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "openenv_mcp.cli", "parity"]


def parity(*args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENENV_TRAJECTORIES": "off", **environ}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env, check=False)


@pytest.mark.prod
def test_sql_answers_the_same_on_sqlite_and_postgresql(pg_url: str, tmp_path: Path) -> None:
    # a seeded sample of 40 task references (every split and tier) and 8 random scripts: every tool is called
    done = parity(
        "sql", "--out", str(tmp_path), "--from", "tasks", "random", "--sample", "40", "--random", "8",
        SQL_DATABASE_URL=pg_url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "parity.json").read_text())
    assert report["environment"] == "sql" and report["calls"] == 40 * 3 + 8 * 4
    assert report["sources"]["tasks"]["calls"] == 120
    assert report["sources"]["tasks"]["different"] == 0, _first_difference(report)
    for name, tool in report["tools"].items():
        assert tool["calls"] > 0, f"{name} was never called"
        assert tool["different"] == 0 and tool["gap"] == 0, _first_difference(report)
        assert tool["calls"] == tool["identical"] + tool["equivalent"]
        assert tool["examples"][0]["kind"] == "identical"
    assert report["gap"] == 0
    assert any("ORDER BY" in line for line in report["forgives"])
    assert "gap 0.000 over 152 calls" in done.stdout
    page = (tmp_path / "parity.html").read_text()
    assert page.startswith("<!doctype html>") and "none: every call answered identically" not in page  # equivalents


@pytest.mark.prod
def test_recorded_trajectories_are_replayed_on_both_sides(pg_url: str, tmp_path: Path) -> None:
    store = tmp_path / "trajectories.db"

    async def record() -> None:
        runtime = build_runtime(environment, Settings(mode="sim", trajectories=f"sqlite:///{store}"))
        record_trajectories(runtime)
        async with runtime.run():
            opened = await runtime.reset(task_id="sql-001", seed=3)
            for tool, arguments in [
                ("describe_table", {"table": "customers"}),
                ("run_query", {"sql": "SELECT region_id, COUNT(*) AS Customers FROM customers GROUP BY 1 ORDER BY 1"}),
                ("run_query", {"sql": "SELECT <script>alert(1)</script>"}),  # refused by both, and escaped in the page
                ("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"}),
            ]:
                await runtime.call(tool, arguments, opened.episode_id)

    import anyio

    anyio.run(record)
    done = parity("sql", "--out", str(tmp_path), "--from", "trajectories", str(store), SQL_DATABASE_URL=pg_url)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "parity.json").read_text())
    assert report["sources"] == {
        "trajectories": {"calls": 4, "identical": 3, "equivalent": 1, "different": 0, "gap": 0.0}
    }, _first_difference(report)
    grouped, refused = report["tools"]["run_query"]["examples"]
    assert grouped["kind"] == "identical" and grouped["sim"]["columns"] == ["region_id", "customers"]
    assert refused["kind"] == "equivalent" and "error" in refused["sim"] and "error" in refused["prod"]
    page = (tmp_path / "parity.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page


def test_an_unreachable_prod_service_stops_the_run_naming_it(tmp_path: Path) -> None:
    done = parity(
        "sql", "--out", str(tmp_path), "--from", "tasks", "--sample", "2",
        SQL_DATABASE_URL=f"postgresql://reader@127.0.0.1:{free_port()}/shop",
    )  # fmt: skip
    assert done.returncode == 2
    assert "prod backend of sql is not ready" in done.stderr and "PostgreSQL at" in done.stderr
    assert not (tmp_path / "parity.json").exists()


def test_a_missing_prod_setting_or_an_unknown_source_is_refused_saying_what_to_do(tmp_path: Path) -> None:
    environ = {key: value for key, value in os.environ.items() if key != "SQL_DATABASE_URL"}
    missing = subprocess.run(
        [*CLI, "sql", "--out", str(tmp_path), "--from", "tasks"],
        capture_output=True, text=True, timeout=120, env={**environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert missing.returncode == 2 and "set SQL_DATABASE_URL" in missing.stderr
    unknown = parity("sql", "--out", str(tmp_path), "--from", "tasks", "logs", SQL_DATABASE_URL="postgresql://x@y/z")
    assert unknown.returncode == 2 and "--from 'logs': give tasks, random, or trajectories" in unknown.stderr


@pytest.mark.parametrize(
    ("name", "what"),
    [("email", "forward_email, read_email, reply_email, send_email"), ("memory", "replaces everything the service")],
)
def test_a_run_that_would_change_the_prod_service_needs_allow_writes(name: str, what: str, tmp_path: Path) -> None:
    # refused before any service is reached: the settings point nowhere
    done = parity(name, "--out", str(tmp_path), EMAIL_IMAP_HOST="nowhere.invalid", MEMORY_UPSTREAM_COMMAND="false")
    assert done.returncode == 2 and f"parity {name} would change its prod service" in done.stderr, done.stderr
    assert what in done.stderr and "scratch copy" in done.stderr and "--allow-writes" in done.stderr
    assert not (tmp_path / "parity.json").exists()


def _first_difference(report: dict[str, Any]) -> str:
    for name, tool in report["tools"].items():
        for example in tool["examples"]:
            if example["kind"] == "different":
                return f"{name}: {json.dumps(example)[:2000]}"
    return "(none)"


@pytest.mark.prod
def test_email_task_references_answer_the_same_in_the_sim_mailbox_and_dovecot(tmp_path: Path) -> None:
    from tests.support.email import dovecot, smtp_server

    with dovecot() as imap, smtp_server() as smtp:
        done = parity(
            "email", "--out", str(tmp_path), "--from", "tasks", "--allow-writes",  # these servers are the test's own
            EMAIL_FROM_ADDRESS="alex.morgan@northwind.example", EMAIL_FROM_NAME="Alex Morgan",
            EMAIL_SMTP_HOST=smtp.host, EMAIL_SMTP_PORT=str(smtp.port), EMAIL_SMTP_SECURITY="none",
            EMAIL_IMAP_HOST=imap.host, EMAIL_IMAP_PORT=str(imap.port), EMAIL_IMAP_SECURITY="none",
            EMAIL_IMAP_USERNAME=imap.user, EMAIL_IMAP_PASSWORD=imap.password, EMAIL_TIMEOUT="5",
        )  # fmt: skip
        delivered = len(smtp.received)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "parity.json").read_text())
    # the 18 tasks on the shipped mailbox (the one Dovecot is seeded with): every read, send, reply and forward
    assert report["sources"]["tasks"]["calls"] == 42 and report["gap"] == 0, _first_difference(report)
    assert any("1469 of 1487 tasks not compared" in note for note in report["notes"])
    for name in ("read_email", "send_email", "reply_email", "forward_email"):
        assert report["tools"][name]["calls"] > 0 and report["tools"][name]["different"] == 0
    assert report["tools"]["reply_email"]["equivalent"] > 0  # Message-ID, date and Sent number forgiven
    assert delivered == 22  # every send really went out through SMTP


@pytest.mark.prod
def test_memory_answers_the_same_as_the_upstream_memory_server(tmp_path: Path) -> None:
    from tests.support import memory_upstream

    # each script first makes the upstream's graph the sim episode's start (the stage), through the tools
    done = parity(
        "memory", "--out", str(tmp_path), "--from", "tasks", "random", "--sample", "20", "--random", "10",
        "--allow-writes",
        MEMORY_UPSTREAM_COMMAND=memory_upstream(), MEMORY_FILE_PATH=str(tmp_path / "graph.jsonl"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "parity.json").read_text())
    assert report["gap"] == 0 and report["sources"]["tasks"]["calls"] > 20, _first_difference(report)
    assert all(tool["calls"] > 0 for tool in report["tools"].values()), report["tools"]


@pytest.mark.prod
@pytest.mark.parametrize("engine", ["postgresql", "sphinx"])
def test_search_differs_from_each_prod_engine_in_ranking_only(engine: str, tmp_path: Path) -> None:
    from tests.support.search import search_database, sphinx_service

    with contextlib.ExitStack() as stack:
        if engine == "sphinx":
            url = stack.enter_context(sphinx_service()).url
        else:
            url = stack.enter_context(search_database()).reader_url
        done = parity(
            "search", "--out", str(tmp_path), "--from", "tasks", "random", "--sample", "20", "--random", "6",
            SEARCH_DATABASE_URL=url,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tools = json.loads((tmp_path / "parity.json").read_text())["tools"]
    # BM25 ranks differently from ts_rank_cd and from Sphinx (docs/parity.md has the figures); nothing else differs
    assert tools["search"]["calls"] > 0 and tools["search"]["different"] > 0
    for name in ("collection_info", "fetch", "submit_answer"):
        assert tools[name]["calls"] > 0 and tools[name]["different"] == 0, (name, tools[name]["examples"])
