"""``openenv-mcp validate`` passes a good environment and catches each kind of broken one, with a fix hint."""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic_settings import BaseSettings
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from openenv_mcp import Environment, Grade, ProdService, Task, TaskSet, Toolbox
from openenv_mcp.authoring.scaffold import scaffold
from openenv_mcp.authoring.validate import Report, validate_environment, validate_url
from openenv_mcp.doors.http import build_app
from openenv_mcp.registry.generator import build_document, dump_document
from openenv_mcp.runtime import build_runtime
from openenv_mcp.settings import Settings
from tests.support import serve_app


class Counter:
    def __init__(self, start: int) -> None:
        self.value = start

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class CounterSettings(BaseSettings):
    pass


def counter_tools(**overrides: Any) -> Toolbox[Counter]:
    tools: Toolbox[Counter] = Toolbox("counter")
    hints = {"title": "Bump", "read_only": False, "destructive": False, "idempotent": False, "open_world": False}

    @tools.tool(**{**hints, **overrides})
    async def bump(counter: Counter, amount: int = 1) -> int:
        """Add to the counter.

        Args:
            amount: How much to add.
        """
        counter.value += amount
        return counter.value

    @tools.tool(title="Peek", read_only=True, destructive=False, idempotent=True, open_world=False)
    async def peek(counter: Counter) -> int:
        """Read the counter."""
        return counter.value

    return tools


async def fresh(task: Task, seed: int, settings: Any) -> Counter:
    return Counter(random.Random(seed).randint(0, 3))


async def prod(settings: Any) -> Counter:
    return Counter(0)


async def reach_ten(task: Task, counter: Counter, call: Any, observation: Any) -> Grade:
    return Grade(reward=1.0 if counter.value >= 10 else 0.0, done=counter.value >= 10)


GOOD = Environment(
    name="counter",
    description="Count to ten.",
    tools=counter_tools(),
    tasks=lambda: TaskSet([Task("ten", "train", "Make the counter reach 10."), Task("ten-b", "test", "Reach 10.")]),
    settings=CounterSettings,
    sim_backend=fresh,
    prod_backend=prod,
    grade=reach_ten,
    sim_summary="A counter per episode, starting where the seed says.",
    prod_services=(ProdService(name="memory", title="Process memory", role="holds the counter"),),
    examples=(("bump", {"amount": 2}), ("peek", {})),
    max_steps=30,
)

SHARED = Counter(0)


async def shared(task: Task, seed: int, settings: Any) -> Counter:
    SHARED.value = max(SHARED.value, 0)
    return SHARED


async def unseeded(task: Task, seed: int, settings: Any) -> Counter:
    return Counter(random.SystemRandom().randint(0, 10**9))


async def overpaid(task: Task, counter: Counter, call: Any, observation: Any) -> Grade:
    return Grade(reward=5.0, done=False)


def findings(report: Report, check: str) -> list[str]:
    return [f.message for f in report.findings if f.check == check and f.severity == "error"]


def test_a_good_environment_passes(tmp_path: Path) -> None:
    report = validate_environment(GOOD, registry=tmp_path)
    assert report.ok, report.render()
    assert "warn  registry" in report.render()  # no entry yet: a warning with the command that writes one


@pytest.mark.parametrize(
    ("env", "check", "expected"),
    [
        (dataclasses.replace(GOOD, tools=counter_tools(title=None)), "tools", "tool 'bump' has no title"),
        (
            dataclasses.replace(GOOD, tools=counter_tools(idempotent=None, open_world=None)),
            "tools",
            "tool 'bump' does not say idempotentHint, openWorldHint",
        ),
        (
            dataclasses.replace(GOOD, tools=counter_tools(read_only=True, destructive=True)),
            "tools",
            "tool 'bump' is marked both read-only and destructive",
        ),
        (
            dataclasses.replace(
                GOOD, tools=counter_tools(input_schema={"type": "object", "properties": {"amount": {"type": "nope"}}})
            ),
            "tools",
            "tool 'bump': inputSchema is not a valid JSON Schema",
        ),
        (dataclasses.replace(GOOD, sim_backend=unseeded), "determinism", "the same calls with seed 7 gave different"),
        (dataclasses.replace(GOOD, sim_backend=shared), "isolation", "an episode's calls changed what another"),
        (dataclasses.replace(GOOD, grade=overpaid), "rewards", "rewards out of [-1, 1]: [5.0"),
        (
            dataclasses.replace(GOOD, max_steps=10_000, examples=(("peek", {}),)),
            "rewards",
            "done never came within 200 steps (step limit 10000)",
        ),
        (dataclasses.replace(GOOD, examples=(("nope", {}),)), "declaration", "example calls unknown tool 'nope'"),
    ],
    ids=["title", "annotations", "contradiction", "schema", "determinism", "isolation", "range", "done", "example"],
)
def test_each_kind_of_broken_environment_is_caught(env: Environment[Any, Any], check: str, expected: str) -> None:
    report = validate_environment(env, registry=Path("/nonexistent"))
    assert not report.ok
    assert any(expected in message for message in findings(report, check)), report.render()
    assert f"FAIL  {check}" in report.render()
    assert "fix: " in report.render()


def test_a_stale_registry_entry_is_an_error(tmp_path: Path) -> None:
    document = build_document(GOOD)
    document["description"] = "Something else."
    (tmp_path / "counter.server.json").write_text(dump_document(document), encoding="utf-8")
    report = validate_environment(GOOD, registry=tmp_path)
    assert any("description" in message for message in findings(report, "registry")), report.render()
    (tmp_path / "counter.server.json").write_text(dump_document(build_document(GOOD)), encoding="utf-8")
    assert validate_environment(GOOD, registry=tmp_path).ok


@contextmanager
def serve(env: Environment[Any, Any], *, mode: str = "sim", lie: bool = False) -> Iterator[str]:
    app = build_app(build_runtime(env, Settings(mode=mode, port=0)))  # type: ignore[arg-type]
    if lie:  # a server that answers every refused step with 200: the documented error paths are broken

        async def hide_errors(request: Request, call_next: Any) -> Response:
            response: Response = await call_next(request)
            if request.url.path == "/step" and response.status_code >= 400:
                return JSONResponse({"observation": None, "reward": 0.0, "done": False}, status_code=200)
            return response

        app.add_middleware(BaseHTTPMiddleware, dispatch=hide_errors)
    with serve_app(app) as url:
        yield url


def test_a_live_server_is_validated_and_one_that_breaks_the_error_contract_fails() -> None:
    with serve(GOOD) as url:
        good = validate_url(url)
    assert good.ok, good.render()
    with serve(GOOD, lie=True) as url:
        bad = validate_url(url)
    problems = findings(bad, "contract")
    assert any("an unknown tool answered (200, '')" in p for p in problems), bad.render()
    assert any("bad arguments to bump answered (200, '')" in p for p in problems)
    assert any("an unknown episode answered (200, '')" in p for p in problems)


def test_a_live_prod_server_with_other_tools_fails_parity() -> None:
    other = dataclasses.replace(GOOD, tools=counter_tools(title="Bump Up"))
    with serve(GOOD) as sim, serve(other, mode="prod") as prod_url:
        report = validate_url(sim, prod_url=prod_url)
    assert findings(report, "parity") == ["tool 'bump' differs between sim and prod in title"]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_cli_validates_a_project_folder_with_an_exit_code_for_ci(tmp_path: Path) -> None:
    made = scaffold("tally", tmp_path)
    passed = run_cli("validate", str(made.root), cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "passed: 0 error(s)" in passed.stdout
    tools = made.root / made.module / "tools.py"
    tools.write_text(tools.read_text().replace('title="Read Note", ', ""), encoding="utf-8")
    failed = run_cli("validate", str(made.root), cwd=tmp_path)
    assert failed.returncode == 1
    assert "tool 'read_note' has no title" in failed.stdout
    assert "fix: declare it on the decorator" in failed.stdout
