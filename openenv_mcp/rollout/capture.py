"""Token capture from an OpenAI-compatible chat endpoint: where each server puts the token ids and log-probabilities.

:data:`CAPTURE_OPTIONS` go into the request body; each server reads the ones it knows and ignores the rest:
``logprobs`` (the standard option), vLLM's ``return_token_ids`` (0.10.2 and later; newer SGLang reads it too)
and ``return_tokens_as_token_ids``, SGLang's ``return_prompt_token_ids`` and ``return_meta_info`` (0.5.13
and later). :func:`answered_tokens` reads the answer in every shape these servers give:

===================  ================================================  =============================================
server               prompt token ids                                  completion token ids
===================  ================================================  =============================================
vLLM >= 0.10.2       ``prompt_token_ids`` on the response              ``choices[0].token_ids`` (or ``token_id:N``
                                                                       in ``logprobs.content[].token``)
SGLang >= 0.5.13     ``choices[0].prompt_token_ids``                   ``choices[0].token_ids`` where the version
                                                                       has ``return_token_ids``, else
                                                                       ``choices[0].meta_info.output_token_logprobs``
llama.cpp server     none in the answer: its ``/apply-template`` and   ``choices[0].logprobs.content[].id``
                     ``/tokenize`` give them (see the endpoint)
===================  ================================================  =============================================

The log-probabilities are ``logprobs.content[].logprob`` (else SGLang's ``output_token_logprobs``), one per
completion token. An answer without what was asked for is a :class:`~openenv_mcp.rollout.runner.PolicyError`
naming what is missing: a capture that was asked for never comes back silently empty.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.rollout.runner import PolicyError

__all__ = ["CAPTURE_OPTIONS", "answered_prompt_ids", "answered_tokens", "token_ids"]

CAPTURE_OPTIONS: dict[str, Any] = {
    "logprobs": True,
    "return_token_ids": True,
    "return_tokens_as_token_ids": True,
    "return_prompt_token_ids": True,
    "return_meta_info": True,
}

_TOKEN_ID = "token_id:"


def answered_prompt_ids(payload: dict[str, Any]) -> list[int] | None:
    """The prompt's token ids where the answer carries them (vLLM's place, then SGLang's); ``None`` elsewhere."""
    choice = payload["choices"][0]
    found: Any
    for found in (payload.get("prompt_token_ids"), choice.get("prompt_token_ids")):
        if token_ids(found):
            return [int(i) for i in found]
    return None


def answered_tokens(payload: dict[str, Any], *, endpoint: str) -> tuple[list[int], list[float]]:
    """The completion's token ids and their log-probabilities in a chat completion ``payload`` (its first choice).

    Raises:
        PolicyError: the answer lacks them, or they do not pair one to one.
    """
    choice = payload["choices"][0]
    content = (choice.get("logprobs") or {}).get("content")
    meta = (choice.get("meta_info") or {}).get("output_token_logprobs")
    logprobs: list[float] | None = None
    if isinstance(content, list) and all(
        isinstance(entry, dict) and _number(entry.get("logprob")) for entry in content
    ):
        logprobs = [float(entry["logprob"]) for entry in content]
    ids = choice.get("token_ids")
    if not token_ids(ids, empty=True) and isinstance(content, list):
        ids = _from_token_strings(content) or _from_entry_ids(content)
    if not token_ids(ids, empty=True) or logprobs is None:
        paired = _from_meta(meta)
        if paired is not None:
            ids, logprobs = paired
    if logprobs is None:
        raise PolicyError(f"No logprobs.content[].logprob in the answer: {_fix(endpoint)}")
    if not token_ids(ids, empty=True):
        raise PolicyError(f"No completion token ids in the answer's choice: {_fix(endpoint)}")
    assert ids is not None
    if len(ids) != len(logprobs):
        raise PolicyError(
            f"The chat endpoint {endpoint} answered {len(ids)} completion token ids but "
            f"{len(logprobs)} log-probabilities; they must pair one to one"
        )
    return list(ids), logprobs


def _fix(endpoint: str) -> str:
    return (
        f"the chat endpoint {endpoint} must report token ids and log-probabilities for --capture-tokens "
        "(vLLM 0.10.2 or later, SGLang 0.5.13 or later, or llama.cpp's server do: docs/capture.md); serve the "
        "model with one of them, or run without --capture-tokens"
    )


def token_ids(value: Any, *, empty: bool = False) -> bool:
    """Whether ``value`` is a list of token ids (ints, not bools); an empty one only where ``empty`` allows it."""
    return (
        isinstance(value, list)
        and (empty or bool(value))
        and all(isinstance(i, int) and not isinstance(i, bool) for i in value)
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _from_token_strings(content: list[dict[str, Any]]) -> list[int] | None:
    """The ids in ``token_id:N`` token strings (vLLM's ``return_tokens_as_token_ids``); ``None`` if any is not one."""
    ids: list[int] = []
    for entry in content:
        token = entry.get("token")
        if not isinstance(token, str) or not token.startswith(_TOKEN_ID) or not token[len(_TOKEN_ID) :].isdigit():
            return None
        ids.append(int(token[len(_TOKEN_ID) :]))
    return ids


def _from_entry_ids(content: list[dict[str, Any]]) -> list[int] | None:
    """The ``id`` of each ``logprobs.content[]`` entry (llama.cpp's server); ``None`` if any lacks one."""
    ids = [entry.get("id") for entry in content]
    return ids if token_ids(ids, empty=True) else None  # type: ignore[return-value]


def _from_meta(entries: Any) -> tuple[list[int], list[float]] | None:
    """SGLang's ``meta_info.output_token_logprobs``: ``[logprob, id, text]`` lists or ``{logprob, token_id}``."""
    if not isinstance(entries, list):
        return None
    ids: list[int] = []
    logprobs: list[float] = []
    logprob: Any
    token: Any
    for entry in entries:
        if isinstance(entry, dict):
            logprob, token = entry.get("logprob"), entry.get("token_id", entry.get("id"))
        elif isinstance(entry, list | tuple) and len(entry) >= 2:
            logprob, token = entry[0], entry[1]
        else:
            return None
        if not _number(logprob) or not token_ids([token]):
            return None
        ids.append(int(token))
        logprobs.append(float(logprob))
    return ids, logprobs
