"""End reasons: each failure is told apart as the policy's outcome or the infrastructure's."""

from __future__ import annotations

import httpx
import pytest

from openenv_mcp.deploy.pool import ReplicaUnavailable
from openenv_mcp.errors import (
    BackendUnavailable,
    EnvironmentCrashed,
    EpisodeFinished,
    EpisodeNotFound,
    InvalidToolArguments,
    JudgeUnavailable,
    OpenEnvError,
    ToolNotFound,
)
from openenv_mcp.harnesses.runner import HarnessFailed
from openenv_mcp.rollout import ENDINGS, PolicyError, ending_for, is_infra


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (PolicyError("The chat endpoint answered 500"), "model_error"),
        (HarnessFailed("codex exited with 1: ..."), "harness_error"),  # a policy's own way to fail names itself
        (httpx.ReadTimeout("timed out"), "server_timeout"),
        (httpx.ConnectError("refused"), "replica_lost"),
        (ReplicaUnavailable("Replica http://a:1 stopped answering"), "replica_lost"),
        (EpisodeNotFound("No episode 'e1'"), "replica_lost"),
        (JudgeUnavailable("The judge did not answer"), "judge_unavailable"),
        (BackendUnavailable("The database did not answer"), "backend_unavailable"),
        (EnvironmentCrashed("Tool 'poke' crashed"), "server_error"),
        (OpenEnvError("HTTP 502 from http://a:1/step: Bad Gateway"), "server_error"),
        (ToolNotFound("No tool 'drop'"), "policy_error"),
        (InvalidToolArguments("sql: required"), "policy_error"),
        (EpisodeFinished("The episode is done"), "policy_error"),
    ],
)
def test_each_failure_has_its_end_reason(exc: BaseException, reason: str) -> None:
    assert ending_for(exc) == reason


def test_infrastructure_reasons_are_exactly_those_that_say_nothing_about_the_policy() -> None:
    infra = {name for name in ENDINGS if is_infra(name)}
    assert infra == {
        "model_error", "harness_error", "server_error", "server_timeout", "backend_unavailable", "judge_unavailable",
        "replica_lost",
    }  # fmt: skip
    assert not is_infra("harness_timeout")  # an agent that ran out of time failed its task, as at a turn limit
    assert not is_infra("policy_error") and not is_infra("done") and not is_infra("")
