"""Token capture from an OpenAI-compatible chat endpoint that reports tokens, as vLLM's server does.

:data:`CAPTURE_OPTIONS` go into the request body: ``logprobs`` (the standard option) and vLLM's
``return_token_ids`` (0.10.2 and later) and ``return_tokens_as_token_ids``. :func:`captured_turn`
reads the answer, in the shapes vLLM documents:

- prompt token ids: ``prompt_token_ids`` on the response (vLLM's place), else on the choice;
- completion token ids: ``token_ids`` on the choice, else the ``token_id:N`` strings that
  ``return_tokens_as_token_ids`` puts in ``logprobs.content[].token``;
- log-probabilities: ``logprobs.content[].logprob``, one per completion token.

An answer without them is a :class:`~openenv_mcp.rollout.runner.PolicyError` naming what is
missing: a capture that was asked for never comes back silently empty.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.rollout.runner import PolicyError
from openenv_mcp.trajectories.turns import Turn

__all__ = ["CAPTURE_OPTIONS", "captured_turn"]

CAPTURE_OPTIONS: dict[str, Any] = {"logprobs": True, "return_token_ids": True, "return_tokens_as_token_ids": True}

_TOKEN_ID = "token_id:"


def captured_turn(payload: dict[str, Any], *, endpoint: str, model: str) -> Turn:
    """The :class:`Turn` in a chat completion ``payload`` (its first choice); ``model`` when it names none.

    Raises:
        PolicyError: the answer lacks the prompt's or the completion's token ids, or their log-probabilities.
    """
    choice = payload["choices"][0]
    fix = (
        f"the chat endpoint {endpoint} must report token ids and log-probabilities for --capture-tokens "
        "(vLLM 0.10.2 or later does, given return_token_ids and logprobs); serve the model with it, "
        "or run without --capture-tokens"
    )
    prompt_ids = payload.get("prompt_token_ids")
    if prompt_ids is None:
        prompt_ids = choice.get("prompt_token_ids")
    if not _ids(prompt_ids):
        raise PolicyError(f"No prompt_token_ids in the answer: {fix}")
    content = (choice.get("logprobs") or {}).get("content")
    if not isinstance(content, list) or not all(
        isinstance(entry, dict) and _number(entry.get("logprob")) for entry in content
    ):
        raise PolicyError(f"No logprobs.content[].logprob in the answer: {fix}")
    completion_ids = choice.get("token_ids")
    if completion_ids is None:
        completion_ids = _from_token_strings(content)
    if not _ids(completion_ids, empty=True):
        raise PolicyError(f"No token_ids in the answer's choice: {fix}")
    if len(completion_ids) != len(content):
        raise PolicyError(
            f"The chat endpoint {endpoint} answered {len(completion_ids)} completion token ids but "
            f"{len(content)} log-probabilities; they must pair one to one"
        )
    return Turn(
        prompt_ids=list(prompt_ids),
        completion_ids=list(completion_ids),
        logprobs=[float(entry["logprob"]) for entry in content],
        model=str(payload.get("model") or model),
        finish_reason=choice.get("finish_reason"),
    )


def _ids(value: Any, *, empty: bool = False) -> bool:
    """A list of token ids (ints, not bools); an empty one only where ``empty`` allows it."""
    return (
        isinstance(value, list)
        and (empty or bool(value))
        and all(isinstance(i, int) and not isinstance(i, bool) for i in value)
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _from_token_strings(content: list[dict[str, Any]]) -> list[int] | None:
    """The ids in ``token_id:N`` token strings (``return_tokens_as_token_ids``); ``None`` if any is not one."""
    ids: list[int] = []
    for entry in content:
        token = entry.get("token")
        if not isinstance(token, str) or not token.startswith(_TOKEN_ID) or not token[len(_TOKEN_ID) :].isdigit():
            return None
        ids.append(int(token[len(_TOKEN_ID) :]))
    return ids
