"""The conformance check every server passes (in the spirit of Gymnasium's ``check_env``).

    from openenv_mcp.authoring.conformance import check_environment
    check_environment(my_environment)   # raises ConformanceError listing every problem

It drives the server through its HTTP door in sim mode, in process: declaration (tools,
schemas, tasks), the control-plane contract and its error shapes, determinism under a seed
(replaying the environment's ``examples``), close, and that the MCP tool list is the same
in sim and prod.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx

from openenv_mcp.environment import Environment
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.settings import Settings

__all__ = ["ConformanceError", "check_environment"]


class ConformanceError(OpenEnvError):
    code = "not_conformant"


def check_environment(env: Environment[Any, Any]) -> None:
    """Run every check; raise :class:`ConformanceError` naming each problem found."""
    problems = _check_declaration(env)
    problems += anyio.run(_check_sim, env)
    problems += _check_mode_parity(env)
    if problems:
        raise ConformanceError(f"{env.name}: " + "; ".join(problems))


def _check_declaration(env: Environment[Any, Any]) -> list[str]:
    problems = []
    if not len(env.tools):
        problems.append("declares no tools")
    for tool in env.tools:
        if not tool.description:
            problems.append(f"tool {tool.name!r} has no description")
        if tool.input_schema.get("type") != "object" or tool.input_schema.get("additionalProperties") is not False:
            problems.append(f"tool {tool.name!r} input schema must be a closed object")
        if tool.output_schema.get("type") != "object":
            problems.append(f"tool {tool.name!r} output schema must be an object")
    tasks = env.tasks()
    if any(count == 0 for count in tasks.splits.values()):
        problems.append("has an empty split")
    for name, _ in env.examples:
        if name not in env.tools.names:
            problems.append(f"example calls unknown tool {name!r}")
    if not env.prod_services:
        problems.append("declares no prod_services (what runs its tools in production)")
    for service in env.prod_services:
        unknown = sorted(set(service.tools) - set(env.tools.names))
        if unknown:
            problems.append(f"prod service {service.name!r} names unknown tools {unknown}")
        try:
            env.variables(service.settings)
        except TypeError as exc:
            problems.append(str(exc))
    if not env.examples:
        problems.append("declares no examples (valid calls used for the determinism check and the benchmark)")
    return problems


async def _check_sim(env: Environment[Any, Any]) -> list[str]:
    from openenv_mcp.app import build_app, build_runtime

    problems: list[str] = []

    def expect(condition: bool, message: str) -> None:
        if not condition:
            problems.append(message)

    runtime = build_runtime(env, Settings(mode="sim", max_episodes=16))
    app = build_app(runtime)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http,
    ):
        health = (await http.get("/healthz")).json()
        expect(health == {"status": "ok", "mode": "sim", "server": env.name}, f"/healthz answered {health}")
        expect((await http.get("/readyz")).status_code == 200, "/readyz is not 200 in sim mode")
        listed = (await http.get("/tasks")).json()
        expect(len(listed["tasks"]) == len(runtime.tasks), "/tasks does not list every task")

        async def play(seed: int) -> tuple[Any, list[Any]]:
            first = (await http.post("/reset", json={"seed": seed})).json()
            header = {"X-Episode-Id": first["episode_id"]}
            seen = []
            for name, arguments in env.examples:
                answer = await http.post(
                    "/step", headers=header, json={"action": {"tool": name, "arguments": arguments}}
                )
                expect(answer.status_code == 200, f"example {name} answered {answer.status_code}: {answer.text[:200]}")
                seen.append(answer.json().get("observation"))
            state = (await http.get("/state", headers=header)).json()
            expect(state.get("step_count") == len(env.examples), f"/state step_count is {state.get('step_count')}")
            closed = await http.delete(f"/episodes/{first['episode_id']}")
            expect(closed.status_code == 200, "DELETE /episodes/{id} did not close the episode")
            expect((await http.get("/state", headers=header)).status_code == 404, "a closed episode still answers")
            return (first["info"]["task_id"], first["observation"]), seen

        expect(await play(7) == await play(7), "two resets with the same seed differ (task or observations)")

        episode = (await http.post("/reset", json={"seed": 1})).json()["episode_id"]
        header = {"X-Episode-Id": episode}

        async def status_of(body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, str]:
            answer = await http.post("/step", headers=header if headers is None else headers, json=body)
            return answer.status_code, answer.json().get("error", {}).get("code", "")

        expect(await status_of({"action": {"tool": "__nope__"}}) == (404, "tool_not_found"), "unknown tool is not 404")
        for tool in env.tools:
            got = await status_of({"action": {"tool": tool.name, "arguments": {"__bogus__": 1}}})
            expect(got == (422, "invalid_arguments"), f"bad arguments to {tool.name} answered {got}")
        expect(await status_of({"action": {}}) == (400, "malformed_request"), "a malformed body is not 400")
        name, arguments = env.examples[0] if env.examples else (env.tools.names[0], {})
        real = {"action": {"tool": name, "arguments": arguments}}
        expect(await status_of(real, {}) == (400, "reset_needed"), "a missing header is not 400")
        got = await status_of(real, {"X-Episode-Id": "__ghost__"})
        expect(got == (404, "episode_not_found"), f"an unknown episode answered {got}")
        state = (await http.get("/state", headers=header)).json()
        expect(state["step_count"] == 0, "rejected calls were counted as steps")
    return problems


def _check_mode_parity(env: Environment[Any, Any]) -> list[str]:
    from openenv_mcp.mcp_adapter import McpDoor
    from openenv_mcp.runtime import Runtime

    # The tool list needs no backend, so prod is built without connecting to anything.
    sim = McpDoor(Runtime(env, Settings(mode="sim"), None)).tool_list()
    prod = McpDoor(Runtime(env, Settings(mode="prod"), None)).tool_list()
    return [] if sim == prod else ["the MCP tool list differs between sim and prod"]
