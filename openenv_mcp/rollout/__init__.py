"""Rollouts: run many episodes concurrently against a server with a policy (``openenv-mcp rollout``).

from openenv_mcp.rollout import Batch, run_rollouts, scripted_policy

summary = await run_rollouts(url, scripted_policy(environment.examples), episodes=100, batch=Batch(concurrency=16))
print(summary.render())
"""

from openenv_mcp.client.discovery import ServerInfo, ServerProcess, discover
from openenv_mcp.rollout.chat import OpenAIPolicy
from openenv_mcp.rollout.endings import ENDINGS, Ending, ending_for, is_infra
from openenv_mcp.rollout.endpoint import ChatModel, Sampling
from openenv_mcp.rollout.policies import load_policy, scripted_policy
from openenv_mcp.rollout.runner import (
    END_REASONS,
    Batch,
    EpisodeResult,
    ModelSide,
    Policy,
    PolicyError,
    RolloutEpisode,
    Summary,
    run_rollouts,
)

__all__ = [
    "ENDINGS",
    "END_REASONS",
    "Batch",
    "ChatModel",
    "Ending",
    "EpisodeResult",
    "ModelSide",
    "OpenAIPolicy",
    "Policy",
    "PolicyError",
    "RolloutEpisode",
    "Sampling",
    "ServerInfo",
    "ServerProcess",
    "Summary",
    "discover",
    "ending_for",
    "is_infra",
    "load_policy",
    "run_rollouts",
    "scripted_policy",
]
