"""The harness policy: unmodified agent CLIs (Cline, Codex, Claude Code, opencode...) play episodes, their MCP
calls going to the environment server's MCP door and their model calls through the capture proxy, which records
every turn into the episode (``openenv-mcp eval SERVER --policy harness --harness NAME``; docs/harnesses.md).
"""

from openenv_mcp.harnesses.configs import HARNESSES, Harness, Job, Launch, harness_named
from openenv_mcp.harnesses.runner import HarnessFailed, HarnessPolicy

__all__ = ["HARNESSES", "Harness", "HarnessFailed", "HarnessPolicy", "Job", "Launch", "harness_named"]
