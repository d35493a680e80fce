"""``openenv-mcp validate``: the conformance check for anyone's environment, installed or live.

    from openenv_mcp.authoring.validate import validate_environment
    report = validate_environment(my_environment)
    print(report.render())          # one line per check, a fix hint under each finding
    assert report.ok

What it checks (each finding names its check and says how to fix it):

- ``tools``: every tool has a description, a title, all four MCP annotations
  (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``), and input and
  output schemas that are valid JSON Schemas of type object.
- ``parity``: ``tools/list`` is identical in sim and prod.
- ``declaration``: tasks in non-empty splits, examples that name real tools, prod services.
- ``contract``: ``/healthz``, ``/readyz``, ``/tasks``, close; every documented error path
  (malformed body 400, missing episode header 400, unknown tool 404, bad arguments 422,
  unknown episode 404, step after done 409) answered with its status and code, and rejected
  calls not counted as steps.
- ``determinism``: two episodes with the same seed get the same task and the same observations.
- ``isolation``: what one episode does never shows in another of the same task and seed.
- ``rewards``: every reward within the range and ``done`` reached within the step limit.
- ``registry``: the registry entry (``registry/NAME.server.json``) matches the code.

A live server (``validate http://host:port``) gets every check that needs no code: tools,
contract, determinism, isolation, rewards (and parity given ``--prod-url``).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

from openenv_mcp.environment.spec import Environment
from openenv_mcp.settings import Settings

__all__ = ["PROBE_STEPS", "REWARD_RANGE", "Finding", "Report", "validate_environment", "validate_url"]

REWARD_RANGE = (-1.0, 1.0)
"""Rewards a step may earn (the graders' convention: 0..1 scores, or shaped differences of them)."""

PROBE_STEPS = 200
"""Steps the check plays (cycling the examples) waiting for ``done``: the step limit must come by then."""

_HINTS = {
    "tools": "declare it on the decorator: @tools.tool(title=..., read_only=..., destructive=..., "
    "idempotent=..., open_world=...); fix the type annotations the schemas come from",
    "parity": "tools must not depend on the mode: build the tool table once, bind backends per mode",
    "declaration": "fix the Environment(...) declaration (tasks, examples, prod_services)",
    "contract": "serve the environment through openenv_mcp (build_app / openenv-mcp serve); do not "
    "answer these routes yourself",
    "determinism": "draw every random choice in sim_backend from its seed argument (random.Random(seed)), "
    "never from the clock or the global random module",
    "isolation": "give every episode its own backend state in sim_backend: no module-level mutable state, "
    "no shared file or database that episodes write",
    "rewards": "return Grade(reward, done) with reward in range and done=True when the task is finished; "
    f"keep max_steps at most {200}",
    "registry": "regenerate it: openenv-mcp registry generate NAME --dir registry",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: which check found it, what is wrong, and how to fix it."""

    check: str
    message: str
    hint: str
    severity: str = "error"  # "error" fails the report; "warning" does not


@dataclass
class Report:
    """The outcome of a validation: the checks that ran and what they found."""

    target: str
    checks: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No finding of severity error."""
        return not any(f.severity == "error" for f in self.findings)

    def add(self, check: str, message: str, *, hint: str | None = None, severity: str = "error") -> None:
        self.findings.append(Finding(check, message, hint or _HINTS[check], severity))

    def expect(self, check: str, condition: bool, message: str) -> bool:
        if not condition:
            self.add(check, message)
        return condition

    def render(self) -> str:
        """A readable report: one line per check (ok, FAIL, warn), each finding with its fix."""
        lines = [f"validate {self.target}"]
        for check in self.checks:
            found = [f for f in self.findings if f.check == check]
            status = "FAIL" if any(f.severity == "error" for f in found) else ("warn" if found else "ok")
            lines.append(f"  {status:<4}  {check}")
            for finding in found:
                lines.append(f"        - {finding.message}")
                lines.append(f"          fix: {finding.hint}")
        errors = sum(f.severity == "error" for f in self.findings)
        warnings = len(self.findings) - errors
        verdict = "passed" if self.ok else "FAILED"
        lines.append(f"{verdict}: {errors} error(s), {warnings} warning(s) in {len(self.checks)} checks")
        return "\n".join(lines)


# -- entry points ------------------------------------------------------------------------------


def validate_environment(env: Environment[Any, Any], *, registry: Path | str | None = None) -> Report:
    """Validate an environment in process (its sim door, its tool table in both modes, its registry entry).

    Args:
        env: The environment.
        registry: The registry directory holding ``NAME.server.json``; by default ``./registry``
            when it exists (a missing entry is then a warning, a stale one an error).
    """

    report = Report(target=f"{env.name} (in process)")
    report.checks += ["tools", "parity", "declaration", "contract", "determinism", "isolation", "rewards", "registry"]
    check_tools(report, env.tools.listing())
    _check_parity(report, env)
    _check_declaration(report, env)
    anyio.run(_check_in_process, report, env)
    _check_registry(report, env, registry)
    return report


def validate_url(url: str, *, prod_url: str | None = None, timeout: float = 30.0) -> Report:
    """Validate a live sim server at ``url`` (and, given ``prod_url``, its tool parity with a prod one)."""
    from openenv_mcp.errors import RegistryError
    from openenv_mcp.registry.live import fetch_advertised

    report = Report(target=url)
    report.checks += ["tools", "parity", "contract", "determinism", "isolation", "rewards"]
    base = url.rstrip("/").removesuffix("/mcp")
    try:
        tools = fetch_advertised(base, timeout=timeout).tools
    except RegistryError as exc:
        report.add("contract", f"tools/list failed: {exc.message}", hint="serve it with openenv-mcp serve NAME")
        return report
    check_tools(report, tools)
    if prod_url is not None:
        try:
            prod = fetch_advertised(prod_url.rstrip("/").removesuffix("/mcp"), timeout=timeout).tools
        except RegistryError as exc:
            report.add("parity", f"the prod server's tools/list failed: {exc.message}")
        else:
            _compare_lists(report, tools, prod)
    else:
        report.add("parity", "not checked: give --prod-url to compare with a prod server", severity="warning")
    examples: list[tuple[str, dict[str, Any]]] = [
        (str(t["name"]), {}) for t in tools if not t.get("inputSchema", {}).get("required")
    ]
    examples = [e for e in examples if (_annotation(tools, e[0], "readOnlyHint") is True)][:3]

    async def run() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=timeout) as http:
            await _check_control_plane(report, http, [str(t["name"]) for t in tools], examples)

    anyio.run(run)
    return report


# -- tools and declaration ---------------------------------------------------------------------

_HINT_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def check_tools(report: Report, tools: Sequence[Mapping[str, Any]]) -> None:
    """Check a ``tools/list`` (camelCase JSON): descriptions, titles, annotations, valid schemas."""
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    if not tools:
        report.add("tools", "the server lists no tools")
    for tool in tools:
        name = tool.get("name")
        report.expect("tools", bool(tool.get("description")), f"tool {name!r} has no description")
        report.expect("tools", bool(tool.get("title")), f"tool {name!r} has no title")
        annotations = tool.get("annotations") or {}
        missing = [key for key in _HINT_KEYS if not isinstance(annotations.get(key), bool)]
        report.expect("tools", not missing, f"tool {name!r} does not say {', '.join(missing)}")
        if annotations.get("readOnlyHint") is True and annotations.get("destructiveHint") is True:
            report.add("tools", f"tool {name!r} is marked both read-only and destructive")
        for key in ("inputSchema", "outputSchema"):
            schema = tool.get(key)
            if schema is None:
                report.expect("tools", key == "outputSchema", f"tool {name!r} has no {key}")
                continue
            if not report.expect("tools", isinstance(schema, dict), f"tool {name!r}: {key} is not an object"):
                continue
            report.expect("tools", schema.get("type") == "object", f"tool {name!r}: {key} is not of type object")
            try:
                validator_for(schema).check_schema(schema)
            except SchemaError as exc:
                report.add("tools", f"tool {name!r}: {key} is not a valid JSON Schema: {exc.message}")


def _annotation(tools: Sequence[Mapping[str, Any]], name: str, key: str) -> Any:
    tool = next(t for t in tools if t["name"] == name)
    return (tool.get("annotations") or {}).get(key)


def _check_parity(report: Report, env: Environment[Any, Any]) -> None:
    from openenv_mcp.doors.mcp import McpDoor
    from openenv_mcp.runtime import Runtime

    # The tool list needs no backend, so prod is built without connecting to anything.
    sim = McpDoor(Runtime(env, Settings(mode="sim"), None)).tool_list()
    prod = McpDoor(Runtime(env, Settings(mode="prod"), None)).tool_list()
    _compare_lists(report, sim, prod)


def _compare_lists(report: Report, sim: Sequence[Mapping[str, Any]], prod: Sequence[Mapping[str, Any]]) -> None:
    by_name = {t["name"]: t for t in prod}
    for tool in sim:
        other = by_name.pop(tool["name"], None)
        if other is None:
            report.add("parity", f"tool {tool['name']!r} is listed in sim only")
        elif other != tool:
            fields = sorted(k for k in set(tool) | set(other) if tool.get(k) != other.get(k))
            report.add("parity", f"tool {tool['name']!r} differs between sim and prod in {', '.join(fields)}")
    for name in by_name:
        report.add("parity", f"tool {name!r} is listed in prod only")


def _check_declaration(report: Report, env: Environment[Any, Any]) -> None:
    tasks = env.tasks()
    report.expect("declaration", bool(tasks.splits) and all(tasks.splits.values()), "a split has no tasks")
    for name, _ in env.examples:
        report.expect("declaration", name in env.tools.names, f"example calls unknown tool {name!r}")
    if not env.examples:
        report.add("declaration", "declares no examples (valid calls replayed for determinism and isolation)")
    if not env.prod_services:
        report.add("declaration", "declares no prod_services (what runs its tools in production)")
    if not env.sim_summary:
        report.add("declaration", "declares no sim_summary (what its sim backend is, in one sentence)")
    for service in env.prod_services:
        unknown = sorted(set(service.tools) - set(env.tools.names))
        report.expect("declaration", not unknown, f"prod service {service.name!r} names unknown tools {unknown}")
        try:
            env.variables(service.settings)
        except TypeError as exc:
            report.add("declaration", str(exc))


def _check_registry(report: Report, env: Environment[Any, Any], registry: Path | str | None) -> None:
    from openenv_mcp.errors import RegistryError
    from openenv_mcp.registry.generator import entry_drift

    directory = Path(registry) if registry is not None else Path("registry")
    path = directory / f"{env.name}.server.json"
    hint = f"openenv-mcp registry generate {env.name} --dir {directory}"
    if not path.is_file():
        report.add("registry", f"no registry entry at {path}", hint=hint, severity="warning")
        return
    try:
        drift = entry_drift(env, path)
    except RegistryError as exc:
        report.add("registry", exc.message, hint=hint)
        return
    for line in drift[:10]:
        report.add("registry", line, hint=hint)


# -- the control plane ---------------------------------------------------------------------------


async def _check_in_process(report: Report, env: Environment[Any, Any]) -> None:
    from openenv_mcp.doors.http import build_app
    from openenv_mcp.runtime import build_runtime

    runtime = build_runtime(env, Settings(mode="sim", max_episodes=32))
    app = build_app(runtime)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http,
    ):
        health = (await http.get("/healthz")).json()
        report.expect(
            "contract", health == {"status": "ok", "mode": "sim", "server": env.name}, f"/healthz answered {health}"
        )
        await _check_control_plane(report, http, env.tools.names, list(env.examples))


async def _ready(http: httpx.AsyncClient, timeout: float = 30.0) -> httpx.Response:
    """``/readyz`` once it is 200, or its last answer after ``timeout`` seconds (a server may still be starting:
    the MCP door loads after start-up)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = await http.get("/readyz")
        if answer.status_code != 503 or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.05)


async def _check_control_plane(
    report: Report, http: httpx.AsyncClient, tools: list[str], examples: list[tuple[str, dict[str, Any]]]
) -> None:
    expect = report.expect
    ready = await _ready(http)
    expect("contract", ready.status_code == 200, f"/readyz is not 200 in sim mode ({ready.text[:300]})")
    listed = await http.get("/tasks")
    if not expect("contract", listed.status_code == 200, f"GET /tasks answered {listed.status_code}"):
        return
    expect("contract", bool(listed.json().get("tasks")), "/tasks lists no tasks")
    probe = _Probe(report, http, examples)
    try:
        seen = await probe.determinism()
        await probe.isolation(seen)
        episode = (await probe.reset(1))["episode_id"]  # the error paths, then the rewards, on a fresh episode
        state = await probe.error_paths(episode, tools)
        if examples:
            await probe.rewards(episode, int(state.get("max_steps") or PROBE_STEPS))
        await http.delete(f"/episodes/{episode}")
    except _Stop as exc:
        report.add("contract", str(exc))


class _Probe:
    """The control-plane checks, each played through ``http`` with the environment's ``examples``."""

    def __init__(self, report: Report, http: httpx.AsyncClient, examples: list[tuple[str, dict[str, Any]]]) -> None:
        self.expect = report.expect
        self.http = http
        self.examples = examples

    async def step(self, episode: str | None, tool: str, arguments: Any) -> httpx.Response:
        headers = {} if episode is None else {"X-Episode-Id": episode}
        return await self.http.post("/step", headers=headers, json={"action": {"tool": tool, "arguments": arguments}})

    async def reset(self, seed: int) -> dict[str, Any]:
        answer = await self.http.post("/reset", json={"seed": seed})
        if answer.status_code != 200:
            raise _Stop(f"POST /reset answered {answer.status_code}: {answer.text[:200]}")
        return dict(answer.json())

    async def play(self, first: dict[str, Any]) -> list[Any]:
        """The examples played on the episode ``first`` opened: what each call saw (observation, reward)."""
        seen = []
        for name, arguments in self.examples:
            answer = await self.step(first["episode_id"], name, arguments)
            self.expect("contract", answer.status_code == 200, f"example {name} answered {answer.status_code}")
            body = answer.json() if answer.status_code == 200 else {}
            seen.append((body.get("observation"), body.get("reward")))
        return seen

    async def determinism(self) -> list[Any]:
        """Same seed, same task and observations; returns what the examples saw."""
        runs = []
        for _ in range(2):
            first = await self.reset(7)
            runs.append((first["info"].get("task_id"), first["observation"], await self.play(first)))
            await self.http.delete(f"/episodes/{first['episode_id']}")
        self.expect("determinism", runs[0][:2] == runs[1][:2], "two resets with seed 7 gave different tasks or prompts")
        self.expect("determinism", runs[0][2] == runs[1][2], "the same calls with seed 7 gave different observations")
        return list(runs[0][2])

    async def isolation(self, seen: list[Any]) -> None:
        """One episode's calls leave another (same task and seed) as a fresh one would be (``seen``); close works."""
        expect, http = self.expect, self.http
        a, b = await self.reset(7), await self.reset(7)
        await self.play(a)
        expect("isolation", await self.play(b) == seen, "an episode's calls changed what another episode sees")
        state = (await http.get("/state", headers={"X-Episode-Id": b["episode_id"]})).json()
        count = state.get("step_count")
        expect("isolation", count == len(self.examples), f"/state step_count is {count}")
        for opened in (a, b):
            closed = await http.delete(f"/episodes/{opened['episode_id']}")
            expect("contract", closed.status_code == 200, "DELETE /episodes/{id} did not close the episode")
        gone = await http.get("/state", headers={"X-Episode-Id": a["episode_id"]})
        expect("contract", gone.status_code == 404, "a closed episode still answers /state")

    async def error_paths(self, episode: str, tools: list[str]) -> dict[str, Any]:
        """Every documented error answered with its status and code, none counted as a step; the state after."""
        expect, step = self.expect, self.step
        name, arguments = self.examples[0] if self.examples else (tools[0], {})
        malformed = await self.http.post("/step", headers={"X-Episode-Id": episode}, json={"action": {}})
        got = await _code_of(malformed)
        expect("contract", got == (400, "malformed_request"), f"a malformed body answered {got}, not 400")
        got = await _code_of(await step(None, name, arguments))
        expect("contract", got == (400, "reset_needed"), f"a step without X-Episode-Id answered {got}, not 400")
        got = await _code_of(await step(episode, "__no_such_tool__", {}))
        expect("contract", got == (404, "tool_not_found"), f"an unknown tool answered {got}, not 404")
        for tool in tools:
            got = await _code_of(await step(episode, tool, {"__bogus__": 1}))
            expect("contract", got == (422, "invalid_arguments"), f"bad arguments to {tool} answered {got}, not 422")
        got = await _code_of(await step("__ghost__", name, arguments))
        expect("contract", got == (404, "episode_not_found"), f"an unknown episode answered {got}, not 404")
        state: dict[str, Any] = (await self.http.get("/state", headers={"X-Episode-Id": episode})).json()
        expect("contract", state.get("step_count") == 0, "rejected calls were counted as steps")
        return state

    async def rewards(self, episode: str, limit: int) -> None:
        """Rewards in range, done reached within the step limit (``limit``), a step after done refused."""
        rewards, done, steps = [], False, 0
        while not done and steps <= min(limit, PROBE_STEPS):
            tool_name, tool_arguments = self.examples[steps % len(self.examples)]
            answer = await self.step(episode, tool_name, tool_arguments)
            if answer.status_code != 200:
                break
            body = answer.json()
            rewards.append(body.get("reward"))
            done, steps = bool(body.get("done")), steps + 1
        low, high = REWARD_RANGE
        bad = [r for r in rewards if not isinstance(r, int | float) or not math.isfinite(r) or not low <= r <= high]
        self.expect("rewards", not bad, f"rewards out of [{low:g}, {high:g}]: {bad[:5]}")
        if self.expect("rewards", done, f"done never came within {min(limit, PROBE_STEPS)} steps (step limit {limit})"):
            got = await _code_of(await self.step(episode, tool_name, tool_arguments))
            self.expect("contract", got == (409, "episode_finished"), f"a step after done answered {got}, not 409")


async def _code_of(answer: httpx.Response) -> tuple[int, str]:
    try:
        return answer.status_code, str(answer.json().get("error", {}).get("code", ""))
    except ValueError:
        return answer.status_code, ""


class _Stop(Exception):
    """The server answered so far off the contract that the remaining checks cannot run."""
