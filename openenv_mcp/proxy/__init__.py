"""The capture proxy: agent harnesses talk to their model through it, and every turn lands in the episode.

A harness (Codex, Claude Code, opencode...) is given ``http://PROXY/ep/EPISODE_ID/v1`` as its model's base URL.
The proxy speaks the harness's wire format (OpenAI chat completions and Responses, Anthropic Messages, Gemini),
renders each request through the model's own chat template, generates from token ids on the inference server
(llama.cpp's ``llama-server``), reads the tool calls out of the reply in the model's own format, and writes the
turn (prompt ids, completion ids, log-probabilities) into the trajectory store beside the episode's steps.
``openenv-mcp proxy`` serves it; :class:`CaptureProxy` runs it from Python. docs/harnesses.md says more.
"""

from openenv_mcp.proxy.engine import EngineOptions
from openenv_mcp.proxy.server import CaptureProxy

__all__ = ["CaptureProxy", "EngineOptions"]
