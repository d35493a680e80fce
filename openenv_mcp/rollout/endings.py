"""Why an episode ended: one table of end reasons, each marked as the policy's outcome or an infrastructure failure.

An outcome (``done``, ``step_limit``, ``text_only``, ``policy_error``, ...) is scored: its reward counts in the
means, pass@k and pass^k. An infrastructure failure (the replica gone for good, the server failing or too slow, a
backend or the judge unavailable, the model endpoint failing) says nothing about the policy: it is counted apart,
left out of every figure, and ``eval`` run again on the same ``--out`` plays exactly those trials again.

    reason = ending_for(exc)       # the end reason of an episode that stopped on ``exc``
    is_infra(reason)               # True for replica_lost, server_error, server_timeout, ...
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from openenv_mcp.errors import EpisodeFinished, EpisodeNotFound, OpenEnvError, ResetNeeded, ToolError

__all__ = ["ENDINGS", "END_REASONS", "Ending", "PolicyError", "ending_for", "is_infra"]


class PolicyError(OpenEnvError):
    """The policy could not act: its model endpoint answered an error or something unusable.

    ``end_reason`` is the episode's end reason when it fails so (a name of :data:`ENDINGS`); a kind of policy with
    its own way to fail (an agent harness that crashed) names its own.
    """

    code = "policy_error"
    status = 502
    end_reason = "model_error"


@dataclass(frozen=True, slots=True)
class Ending:
    """One end reason: what it means, and whether infrastructure caused it (then it is not a reward)."""

    meaning: str
    infra: bool = False


ENDINGS: dict[str, Ending] = {
    "done": Ending("the environment ended the episode: its task is over"),
    "step_limit": Ending("the environment's step limit ended the episode"),
    "turn_limit": Ending("the policy made as many model calls as it may (--max-turns)"),
    "text_only": Ending("the model replied without a tool call, and had used its reminders (--reminders)"),
    "length": Ending("a reply was cut at the token limit (finish_reason length) before it held a call"),
    "context_full": Ending("the conversation no longer fits the model's context"),
    "stopped": Ending("the policy returned with the episode still open"),
    "policy_error": Ending(
        "the server refused a call the policy insisted on (no such tool, bad arguments, a finished episode): "
        "the policy's failure, scored as it stands"
    ),
    "harness_timeout": Ending("the agent harness ran past its time limit (--harness-timeout) and was stopped"),
    "model_error": Ending("the model endpoint failed", infra=True),
    "harness_error": Ending(
        "the agent harness exited with an error before the episode ended (its stderr's tail is the error)", infra=True
    ),
    "server_error": Ending("the environment server failed (an error of its own, a crash, a refused token)", infra=True),
    "server_timeout": Ending("the environment server did not answer in time (the server, not the model)", infra=True),
    "backend_unavailable": Ending(
        "a backend of the environment (a database, a mail server) did not answer", infra=True
    ),
    "judge_unavailable": Ending("the LLM judge of the episode's rubric did not answer", infra=True),
    "replica_lost": Ending(
        "the episode's server went away (stopped, restarted, unreachable) and the episode could not be rebuilt",
        infra=True,
    ),
}
"""Every end reason, by name."""

END_REASONS: dict[str, str] = {name: ending.meaning for name, ending in ENDINGS.items()}
"""Why an episode ended, by name: each reason's meaning."""

_BY_CODE = {
    "judge_unavailable": "judge_unavailable",
    "backend_unavailable": "backend_unavailable",
    "replica_unavailable": "replica_lost",  # the pool's: the replica is gone, and the episode with it
    "replica_timeout": "server_timeout",  # the pool's: the replica was reached and did not answer in time
    "replay_diverged": "server_error",  # an episode rebuilt by replay went elsewhere: the environment's fault
    "grade_pending": "server_error",  # the step ran and its grade failed: the grader's backend
}


def is_infra(reason: str) -> bool:
    """Whether ``reason`` is an infrastructure failure (left out of the figures, retried by a resumed eval)."""
    ending = ENDINGS.get(reason)
    return ending is not None and ending.infra


def ending_for(exc: BaseException) -> str:
    """The end reason of an episode stopped by ``exc`` (raised by the model endpoint, the server or the wire)."""
    if isinstance(exc, PolicyError):
        return exc.end_reason
    if isinstance(exc, httpx.TimeoutException):
        return "server_timeout"
    if isinstance(exc, httpx.HTTPError):  # refused, reset, unreachable: the server is not there
        return "replica_lost"
    if isinstance(exc, OpenEnvError) and exc.code in _BY_CODE:
        return _BY_CODE[exc.code]
    if isinstance(exc, EpisodeNotFound):  # the server no longer has it: it restarted, or reaped the episode
        return "replica_lost"
    if isinstance(exc, ToolError | EpisodeFinished | ResetNeeded):
        return "policy_error"
    return "server_error"
