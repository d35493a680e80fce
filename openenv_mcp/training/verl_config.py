"""verl's configuration files for a server: the tool config YAML, the MCP servers JSON, dataset rows.

This module does not import ``verl`` (the adapter, :mod:`openenv_mcp.training.verl`, does); it only writes what
verl reads:

- :func:`tool_config`: verl's ``actor_rollout_ref.rollout.multi_turn.tool_config_path`` file, one entry per tool
  of the server with ``class_name: openenv_mcp.training.verl.OpenEnvMCPTool`` and the tool's schema in verl's
  ``OpenAIFunctionToolSchema`` form (:func:`verl_tool_schema`);
- :func:`mcp_config`: an ``mcpServers`` JSON for MCP clients configured by file (verl 0.6-0.7's MCP tools, fastmcp,
  most agent frameworks): the server's streamable HTTP endpoint, and an ``X-Episode-Id`` header when the file is
  bound to one episode;
- :func:`dataset_rows`: one verl dataset row per task (``prompt``, ``agent_name``, ``extra_info.tools_kwargs``).

``openenv-mcp verl tools URL`` and ``openenv-mcp verl mcp URL`` (:mod:`openenv_mcp.cli.verl`) write the first two
(see docs/verl.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openenv_mcp.client.discovery import ServerInfo

__all__ = ["AGENT_NAME", "TOOL_CLASS", "dataset_rows", "mcp_config", "tool_config", "verl_tool_schema"]

TOOL_CLASS = "openenv_mcp.training.verl.OpenEnvMCPTool"
AGENT_NAME = "openenv_mcp_agent"  # the agent loop that closes each rollout's episode (openenv_mcp.training.verl)


def verl_tool_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An MCP tool (a ``tools/list`` entry) as verl's ``OpenAIFunctionToolSchema`` dict.

    verl keeps, per parameter, only ``type`` (a name or a list of names), ``description`` and ``enum``. A
    parameter typed by ``anyOf``/``oneOf`` (an optional value) gets the list of its branches' types and their
    ``enum``; a parameter with structure verl would drop (``items``, ``properties``, branches) keeps it as JSON
    at the end of its description, so the model still sees what to send. Length and range limits are not
    shown: the server checks them and answers a call that breaks one with a message saying so.
    """
    schema = dict(tool.get("inputSchema") or {})
    properties: dict[str, Any] = {}
    for name, prop in dict(schema.get("properties") or {}).items():
        properties[str(name)] = _property(dict(prop))
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        parameters["required"] = [str(name) for name in schema["required"]]
    return {
        "type": "function",
        "function": {"name": str(tool["name"]), "description": str(tool.get("description") or ""),
                     "parameters": parameters},
    }  # fmt: skip


def _property(prop: dict[str, Any]) -> dict[str, Any]:
    branches = [dict(b) for b in prop.get("anyOf") or prop.get("oneOf") or [] if isinstance(b, Mapping)]
    types: list[str] = []
    for source in [prop, *branches]:
        kind = source.get("type")
        for name in kind if isinstance(kind, list) else [kind] if kind else []:
            if name not in types:
                types.append(str(name))
    out: dict[str, Any] = {"type": types[0] if len(types) == 1 else types or "string"}
    description = str(prop.get("description") or "")
    enum = prop.get("enum") or next((b["enum"] for b in branches if b.get("enum")), None)
    if enum:
        out["enum"] = list(enum)
    structure = {key: value for key, value in prop.items() if key in ("items", "properties", "anyOf", "oneOf")}
    if structure:
        description = f"{description} JSON Schema: {json.dumps(structure, separators=(',', ':'))}".strip()
    if description:
        out["description"] = description
    return out


def tool_config(info: ServerInfo, *, url: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
    """verl's tool config (the YAML ``tool_config_path`` names) for every tool of a server.

    Args:
        info: The server, as :func:`openenv_mcp.client.discovery.discover` found it.
        url: The URL verl's workers reach the server at (default: the one it was found at).
        timeout: Seconds each request to the server may take.
    """
    config = {"type": "native", "server_url": url or info.url, "timeout": timeout}
    return {"tools": [{"class_name": TOOL_CLASS, "config": dict(config), "tool_schema": verl_tool_schema(tool)}
                      for tool in info.tools]}  # fmt: skip


def mcp_config(url: str, *, name: str = "openenv-mcp", episode_id: str | None = None) -> dict[str, Any]:
    """An ``mcpServers`` config for the server's streamable HTTP endpoint (``URL/mcp``).

    With ``episode_id``, every call made through this config is a step of that episode (the ``X-Episode-Id``
    header); without it, calls act on the server's default episode. A config file is static, so one file binds
    one episode: see docs/verl.md for when that fits and when the ``BaseTool`` adapter is the way.
    """
    server: dict[str, Any] = {"url": url.rstrip("/") + "/mcp", "transport": "streamable-http"}
    if episode_id:
        server["headers"] = {"X-Episode-Id": episode_id}
    return {"mcpServers": {name: server}}


def dataset_rows(
    info: ServerInfo, tasks: Iterable[Mapping[str, Any]], *, seed: int = 0, agent_name: str = AGENT_NAME
) -> list[dict[str, Any]]:
    """verl dataset rows, one per task: the task's prompt, and the task for every tool's ``create_kwargs``.

    Args:
        info: The server (its tools name the ``tools_kwargs`` entries).
        tasks: The server's tasks (``GET /tasks`` entries: ``id``, ``prompt``, ``split``).
        seed: The seed of the first row's episode; the next rows get ``seed + 1``, ...
        agent_name: The agent loop verl runs each row with.
    """
    rows = []
    for index, task in enumerate(tasks):
        create = {"task_id": task["id"], "split": task.get("split"), "seed": seed + index}
        rows.append({
            "data_source": f"openenv-mcp/{info.name}",
            "agent_name": agent_name,
            "prompt": [{"role": "system", "content": info.description}, {"role": "user", "content": task["prompt"]}],
            "extra_info": {"index": index, "task_id": task["id"],
                           "tools_kwargs": {str(t["name"]): {"create_kwargs": dict(create)} for t in info.tools}},
        })  # fmt: skip
    return rows
