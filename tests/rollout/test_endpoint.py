"""The chat endpoint's options as the objects that hold them: which model and where (``ChatModel``), how each
reply is asked for (``Sampling``); what a request carries, what a policy's identity reports, what is refused."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import ConfigError
from openenv_mcp.rollout import ChatModel, OpenAIPolicy, Sampling
from openenv_mcp.rollout.endpoint import ChatEndpoint
from openenv_mcp.trajectories.chat import ChatMessage

pytestmark = pytest.mark.anyio
TOOLS = [{"type": "function", "function": {"name": "act", "parameters": {"type": "object"}}}]
MESSAGES: list[ChatMessage] = [{"role": "user", "content": "Go."}]
MODEL = ChatModel(base_url="http://127.0.0.1:1/v1/", model="tiny", api_key="sk-secret")


async def test_a_request_carries_the_sampling_asked_for_and_nothing_unasked() -> None:
    asked = ChatEndpoint(MODEL, Sampling(temperature=0.2, max_tokens=64, tool_choice="required"))
    plain = ChatEndpoint(MODEL)
    try:
        body = asked.request(MESSAGES, TOOLS)
        assert asked.url == "http://127.0.0.1:1/v1/chat/completions"
        assert (body["model"], body["tool_choice"], body["temperature"], body["max_tokens"]) == (
            "tiny", "required", 0.2, 64,
        )  # fmt: skip
        assert plain.request(MESSAGES, []) == {"model": "tiny", "messages": MESSAGES}
    finally:
        await asked.aclose()
        await plain.aclose()


async def test_a_policys_identity_is_its_model_and_sampling() -> None:
    async with OpenAIPolicy(MODEL, sampling=Sampling(temperature=0.7), max_turns=5, reminders=0) as policy:
        assert policy.identity() == {
            "model": "tiny",
            "base_url": "http://127.0.0.1:1/v1",
            "temperature": 0.7,
            "max_tokens": None,
            "max_turns": 5,
            "tool_choice": "auto",
            "tool_parser": "auto",
            "reminders": 0,
        }


def test_a_tool_choice_other_than_auto_or_required_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="tool_choice 'none' is not one of auto, required"):
        Sampling(tool_choice="none")


def test_the_api_key_stays_out_of_the_models_repr() -> None:
    assert "sk-secret" not in repr(MODEL) and "tiny" in repr(MODEL)
