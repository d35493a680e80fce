"""The harness table: each supported agent CLI, its pinned package, and what it is given for one episode.

A :class:`Harness` turns a :class:`Job` (the episode's MCP URL and ``X-Episode-Id``, the proxy's base URL for the
episode, the model, the prompt, an isolated home) into a :class:`Launch`: the files it writes into the home (MCP
config, model config) and the command line and environment that run the CLI headless. Nothing here starts a
process (:mod:`~openenv_mcp.harnesses.runner` does).

============  ===================================  =========================  ================================
harness       package (pinned)                     wire to the model          command
============  ===================================  =========================  ================================
smolagents    PyPI ``smolagents[mcp,openai]``      chat completions, no SSE   ``smolagents-python`` (own venv)
continue      npm ``@continuedev/cli``             chat completions, SSE      ``cn``
cline         npm ``cline``                        chat completions, SSE      ``cline``
opencode      npm ``opencode-ai``                  chat completions, SSE      ``opencode``
codex         npm ``@openai/codex``                Responses, SSE             ``codex``
claude        npm ``@anthropic-ai/claude-code``    Anthropic Messages, SSE    ``claude``
qwen          npm ``@qwen-code/qwen-code``         chat completions, SSE      ``qwen``
gemini        npm ``@google/gemini-cli``           Gemini, SSE                ``gemini``
copilot       npm ``@github/copilot``              chat completions, SSE      ``copilot``
============  ===================================  =========================  ================================
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv_mcp.errors import ConfigError

__all__ = ["HARNESSES", "Harness", "Job", "Launch", "harness_named"]

API_KEY = "openenv-mcp"  # the proxy needs no key; every harness insists on one


@dataclass(frozen=True, kw_only=True)
class Job:
    """One episode as a harness is given it.

    Attributes:
        home: The isolated home its configs go into (``HOME``; XDG folders and ``CODEX_HOME`` under it).
        server: The MCP server's name (the harness names its tools after it).
        mcp_url: The environment server's ``/mcp`` URL.
        episode_id: The episode, sent as ``X-Episode-Id`` on every MCP request.
        base_url: The proxy's URL for this episode (``/ep/ID/v1``, or ``/ep/ID`` for CLIs that add ``/v1``).
        model: The model name the harness asks for.
        prompt: The task.
        max_turns: Model calls at most, where the harness has such a limit.
        time_limit: Seconds the episode has (``--harness-timeout``). Where a harness has its own limit on one model
            request, it is set to this: a small model's first prompt on a CPU (8-20k tokens) takes minutes, and
            Claude Code (10 minutes), Qwen Code (2 minutes), Codex (5 minutes idle in a stream) and opencode (5
            minutes) would abandon the request and send it again, the model's reply recorded but never read.
    """

    home: Path
    server: str
    mcp_url: str
    episode_id: str
    base_url: str
    model: str
    prompt: str
    max_turns: int
    time_limit: float = 600.0

    @property
    def request_ms(self) -> int:
        """The time limit in milliseconds, for a harness's own limit on one model request."""
        return int(self.time_limit * 1000)

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Episode-Id": self.episode_id}


@dataclass(frozen=True)
class Launch:
    """How to run a harness for one job: its arguments after the command, its environment's additions, and the
    runs of the same command that set it up first (``before``: a login, say), in the same home."""

    arguments: list[str]
    env: dict[str, str] = field(default_factory=dict)
    before: list[list[str]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Harness:
    """An agent CLI the harness policy can run.

    Attributes:
        name: Its name for ``--harness``.
        command: The command looked up on ``PATH`` (``--harness-command`` gives another).
        package: Where its pinned release comes from (what the error names when it is missing).
        wire: The wire format it speaks to the model (chat, responses, messages).
        appends_v1: It adds ``/v1`` to its base URL itself (it is given ``/ep/ID``).
        prepare: Writes its configs for a job into the job's home and says how to run it.
    """

    name: str
    command: str
    package: str
    wire: str
    appends_v1: bool
    prepare: Callable[[Job], Launch]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _json(path: Path, value: Mapping[str, Any]) -> Path:
    return _write(path, json.dumps(value, indent=2) + "\n")


# smolagents is a library: this script, written into the home and run by the Python of smolagents' own venv
# (it needs mcp<2, the project needs mcp 2), is the harness. Its config comes as the JSON file it is given.
SMOLAGENTS_SCRIPT = """\
import json
import sys

from smolagents import MCPClient, OpenAIServerModel, ToolCallingAgent

job = json.load(open(sys.argv[1]))
server = {"url": job["mcp_url"], "transport": "streamable-http", "headers": job["headers"]}
with MCPClient(server) as tools:
    model = OpenAIServerModel(model_id=job["model"], api_base=job["base_url"], api_key=job["api_key"])
    agent = ToolCallingAgent(tools=tools, model=model, max_steps=job["max_turns"])
    print(agent.run(job["prompt"]))
"""


def _smolagents(job: Job) -> Launch:
    script = _write(job.home / "agent.py", SMOLAGENTS_SCRIPT)
    config = {
        "mcp_url": job.mcp_url,
        "headers": job.headers,
        "model": job.model,
        "base_url": job.base_url,
        "api_key": API_KEY,
        "prompt": job.prompt,
        "max_turns": job.max_turns,
    }
    return Launch([str(script), str(_json(job.home / "job.json", config))])


def _continue(job: Job) -> Launch:
    config = {
        "name": "openenv-mcp",
        "version": "0.0.1",
        "schema": "v1",
        "models": [
            {
                "name": job.model,
                "provider": "openai",
                "model": job.model,
                "apiBase": job.base_url,
                "apiKey": API_KEY,
                "roles": ["chat"],
            }
        ],
        "mcpServers": [
            {
                "name": job.server,
                "type": "streamable-http",
                "url": job.mcp_url,
                "requestOptions": {"headers": job.headers},
            }
        ],
    }
    written = _json(job.home / ".continue" / "openenv-mcp.yaml", config)  # JSON is YAML
    return Launch(["-p", "--config", str(written), "--auto", job.prompt])


def _cline(job: Job) -> Launch:
    settings = job.home / ".cline" / "data" / "settings"
    transport = {"type": "streamableHttp", "url": job.mcp_url, "headers": job.headers}
    _json(settings / "cline_mcp_settings.json", {"mcpServers": {job.server: {"transport": transport}}})
    # its hub daemon listens on a fixed port (25463) shared by every Cline of the machine: one port per episode,
    # or a second episode's Cline would talk to the first one's daemon, configs and all
    login = ["auth", "-p", "openai", "-k", API_KEY, "-m", job.model, "-b", job.base_url]  # its provider store
    return Launch(
        ["--json", "--auto-approve", "true", job.prompt], {"CLINE_HUB_PORT": str(_free_port())}, before=[login]
    )


def _opencode(job: Job) -> Launch:
    config = {
        "provider": {
            "openenv": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "openenv-mcp",
                "options": {"baseURL": job.base_url, "apiKey": API_KEY, "timeout": job.request_ms},
                "models": {job.model: {"name": job.model}},
            }
        },
        "model": f"openenv/{job.model}",
        "mcp": {job.server: {"type": "remote", "url": job.mcp_url, "headers": job.headers}},
        "autoupdate": False,
        "share": "disabled",
    }
    _json(job.home / ".config" / "opencode" / "opencode.json", config)
    return Launch(["run", "--format", "json", job.prompt])


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string


def _codex(job: Job) -> Launch:
    headers = ", ".join(f"{_toml(key)} = {_toml(value)}" for key, value in job.headers.items())
    config = f"""\
model = {_toml(job.model)}
model_provider = "openenv"

[model_providers.openenv]
name = "openenv-mcp"
base_url = {_toml(job.base_url)}
env_key = "OPENENV_HARNESS_API_KEY"
wire_api = "responses"
stream_idle_timeout_ms = {job.request_ms}

[mcp_servers.{job.server}]
url = {_toml(job.mcp_url)}
http_headers = {{ {headers} }}
required = true
"""
    codex_home = job.home / ".codex"
    _write(codex_home / "config.toml", config)
    return Launch(
        ["exec", "--skip-git-repo-check", "--json", job.prompt],
        {"CODEX_HOME": str(codex_home), "OPENENV_HARNESS_API_KEY": API_KEY},
    )


def _claude(job: Job) -> Launch:
    server = {"type": "http", "url": job.mcp_url, "headers": job.headers}
    config = _json(job.home / "mcp.json", {"mcpServers": {job.server: server}})
    arguments = ["-p", job.prompt, "--mcp-config", str(config), "--strict-mcp-config"]
    arguments += ["--allowedTools", f"mcp__{job.server}", "--output-format", "stream-json", "--verbose"]
    env = {
        "ANTHROPIC_BASE_URL": job.base_url,
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_MODEL": job.model,
        "ANTHROPIC_SMALL_FAST_MODEL": job.model,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "API_TIMEOUT_MS": str(job.request_ms),
    }
    return Launch(arguments, env)


def _qwen(job: Job) -> Launch:
    server = {"httpUrl": job.mcp_url, "headers": job.headers, "trust": True}
    config = _json(job.home / "mcp.json", {"mcpServers": {job.server: server}})
    arguments = ["--auth-type", "openai", "--openai-base-url", job.base_url, "--openai-api-key", API_KEY]
    arguments += ["-m", job.model, "--approval-mode", "yolo", "--mcp-config", str(config), "-o", "stream-json"]
    return Launch([*arguments, job.prompt], {"QWEN_CODE_API_TIMEOUT_MS": str(job.request_ms)})


def _gemini(job: Job) -> Launch:
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "mcpServers": {job.server: {"httpUrl": job.mcp_url, "headers": job.headers, "trust": True}},
    }
    _json(job.home / ".gemini" / "settings.json", settings)
    env = {"GOOGLE_GEMINI_BASE_URL": job.base_url, "GEMINI_API_KEY": API_KEY}
    return Launch(["-m", job.model, "--skip-trust", "-o", "stream-json", "-p", job.prompt], env)


def _copilot(job: Job) -> Launch:
    server = {"type": "http", "url": job.mcp_url, "headers": job.headers, "tools": ["*"]}
    config = _json(job.home / "mcp.json", {"mcpServers": {job.server: server}})
    env = {
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": job.base_url,
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_WIRE_API": "completions",
        "COPILOT_PROVIDER_API_KEY": API_KEY,
    }
    arguments = ["-p", job.prompt, "--allow-all-tools", "--output-format", "json", "--model", job.model]
    return Launch([*arguments, "--additional-mcp-config", f"@{config}"], env)


HARNESSES: dict[str, Harness] = {
    harness.name: harness
    for harness in (
        Harness(
            name="smolagents",
            command="smolagents-python",
            package="PyPI smolagents[mcp,openai]==1.26.0 with mcp<2 and websockets, in a venv of its own",
            wire="chat",
            appends_v1=False,
            prepare=_smolagents,
        ),
        Harness(
            name="continue",
            command="cn",
            package="npm @continuedev/cli@1.5.47",
            wire="chat",
            appends_v1=False,
            prepare=_continue,
        ),
        Harness(
            name="cline", command="cline", package="npm cline@3.0.65", wire="chat", appends_v1=False, prepare=_cline
        ),
        Harness(
            name="opencode",
            command="opencode",
            package="npm opencode-ai@1.18.33",
            wire="chat",
            appends_v1=False,
            prepare=_opencode,
        ),
        Harness(
            name="codex",
            command="codex",
            package="npm @openai/codex@0.171.0",
            wire="responses",
            appends_v1=False,
            prepare=_codex,
        ),
        Harness(
            name="claude",
            command="claude",
            package="npm @anthropic-ai/claude-code@2.1.197",
            wire="messages",
            appends_v1=True,
            prepare=_claude,
        ),
        Harness(
            name="qwen",
            command="qwen",
            package="npm @qwen-code/qwen-code@0.15.10",
            wire="chat",
            appends_v1=False,
            prepare=_qwen,
        ),
        Harness(
            name="gemini",
            command="gemini",
            package="npm @google/gemini-cli@0.61.0",
            wire="gemini",
            appends_v1=True,
            prepare=_gemini,
        ),
        Harness(
            name="copilot",
            command="copilot",
            package="npm @github/copilot@1.0.102",
            wire="chat",
            appends_v1=False,
            prepare=_copilot,
        ),
    )
}
"""The supported harnesses by name."""


def harness_named(name: str) -> Harness:
    """The harness ``name``; an unknown one is a :class:`~openenv_mcp.errors.ConfigError` listing them."""
    try:
        return HARNESSES[name]
    except KeyError:
        raise ConfigError(f"No harness {name!r}; harnesses: {', '.join(sorted(HARNESSES))}") from None
