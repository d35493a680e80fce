"""One OpenAI-compatible chat endpoint as a chat policy asks it: the request, the answer, and what goes wrong.

:class:`ChatEndpoint` sends ``POST {base_url}/chat/completions`` with the conversation, the tools, ``tool_choice``
and the sampling settings, and returns a :class:`Completion`. Failures are named, with the endpoint and the
limit involved, never as a bare transport error:

- no answer within ``timeout`` seconds: ``The chat endpoint URL did not answer within 300 s (--timeout) ...``;
- a full context (llama.cpp's 400 ``exceed_context_size_error``, vLLM's and OpenAI's ``maximum context
  length``, SGLang's ``longer than the model's context length``): :class:`ContextFull`, which ends the episode as
  an outcome of the model's (``context_full``) instead of failing it, since asking again fails the same way;
- any other error status, an unreachable endpoint, an answer without ``choices[0].message``: a
  :class:`~openenv_mcp.rollout.runner.PolicyError` with the endpoint's own message.

With ``capture_tokens`` each request asks for token ids and log-probabilities
(:mod:`~openenv_mcp.rollout.capture`). llama.cpp's server answers the completion's ids but not the prompt's;
for those the endpoint asks the same server's ``/apply-template`` (the chat template applied to the same body,
by the same code as the chat route) and ``/tokenize`` (with ``add_special`` and ``parse_special``, as the chat
route tokenizes), which give exactly the prompt the model read. :meth:`ChatEndpoint.check` is the pre-flight: one
one-token request with the tools, before any episode, so a wrong URL, model, key or server option, or a server
that cannot report tokens, stops the run at once with the server's message.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from openenv_mcp.errors import ConfigError
from openenv_mcp.rollout.capture import CAPTURE_OPTIONS, answered_prompt_ids, answered_tokens, token_ids
from openenv_mcp.rollout.runner import PolicyError
from openenv_mcp.trajectories.chat import ChatMessage

__all__ = ["TOOL_CHOICES", "ChatEndpoint", "ChatModel", "Completion", "ContextFull", "Sampling", "context_full"]

TOOL_CHOICES = ("auto", "required")
"""The ``tool_choice`` values a policy may send (``required``: the server constrains the reply to a call)."""

_CONTEXT_FULL = (
    "exceed_context_size_error",  # llama.cpp's error type
    "exceeds the available context size",  # llama.cpp's message
    "context_length_exceeded",  # OpenAI's error code
    "maximum context length",  # OpenAI's and vLLM's message
    "longer than the maximum model length",  # vLLM's prompt check
    "longer than the model's context length",  # SGLang's message
    "prompt is too long",
)


class ContextFull(PolicyError):
    """The conversation no longer fits the model's context: the episode ends there (``context_full``)."""

    code = "context_full"


def context_full(status: int, body: str) -> bool:
    """Whether an error answer says the prompt (with the tokens asked for) exceeds the model's context."""
    lowered = body.lower()
    return status in (400, 413, 422) and any(marker in lowered for marker in _CONTEXT_FULL)


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer: the assistant message as the endpoint sent it, why it stopped, and its tokens when captured."""

    message: dict[str, Any]
    finish_reason: str | None
    model: str
    seconds: float
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None


@dataclass(frozen=True, kw_only=True)
class ChatModel:
    """Which model answers, and where: an OpenAI-compatible chat endpoint.

    Attributes:
        base_url: Up to ``/v1`` (requests go to ``{base_url}/chat/completions``).
        model: The model name sent with each request.
        api_key: Sent as ``Authorization: Bearer ...`` when given.
        timeout: Seconds to wait for an answer.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 300.0


@dataclass(frozen=True, kw_only=True)
class Sampling:
    """How each reply is asked for.

    Attributes:
        temperature: Sent when given.
        max_tokens: The most tokens a reply may have (``max_tokens``; the server's default when ``None``).
        tool_choice: ``auto``, or ``required`` (the server constrains every reply to a call).
        capture_tokens: Ask for token ids and log-probabilities, and fail an answer without them.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: str = "auto"
    capture_tokens: bool = False

    def __post_init__(self) -> None:
        if self.tool_choice not in TOOL_CHOICES:
            raise ConfigError(f"tool_choice {self.tool_choice!r} is not one of {', '.join(TOOL_CHOICES)}")


class ChatEndpoint:
    """An OpenAI-compatible chat endpoint (``aclose`` it), asked for replies as ``sampling`` says."""

    def __init__(self, model: ChatModel, sampling: Sampling | None = None) -> None:
        self.base_url = model.base_url.rstrip("/")
        self.model = model.model
        self.timeout = model.timeout
        self.sampling = sampling or Sampling()
        self._tokenizes: bool | None = None  # whether the server gives prompt ids by /apply-template + /tokenize
        headers = {"Authorization": f"Bearer {model.api_key}"} if model.api_key else {}
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(model.timeout), headers=headers)

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def request(self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The body of one chat completion request."""
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = self.sampling.tool_choice
        if self.sampling.max_tokens is not None:
            body["max_tokens"] = self.sampling.max_tokens
        if self.sampling.temperature is not None:
            body["temperature"] = self.sampling.temperature
        if self.sampling.capture_tokens:
            body.update(CAPTURE_OPTIONS)
        return body

    async def complete(self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> Completion:
        """One chat completion.

        Raises:
            ContextFull: the conversation no longer fits the model's context.
            PolicyError: the endpoint failed, or (capturing) answered without the tokens.
        """
        return await self._complete(self.request(messages, tools))

    async def _complete(self, body: dict[str, Any]) -> Completion:
        started = time.perf_counter()
        payload = await self._post(self.url, body)
        seconds = time.perf_counter() - started
        try:
            choice = payload["choices"][0]
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise PolicyError(f"The chat endpoint {self.url} answered without choices[0].message") from None
        model = str(payload.get("model") or self.model)
        finish = choice.get("finish_reason")
        if not self.sampling.capture_tokens:
            return Completion(message, finish, model, seconds)
        completion_ids, logprobs = answered_tokens(payload, endpoint=self.url)
        prompt_ids = answered_prompt_ids(payload) or await self._tokenized_prompt(body)
        return Completion(message, finish, model, seconds, prompt_ids, completion_ids, logprobs)

    async def _tokenized_prompt(self, body: dict[str, Any]) -> list[int]:
        """The prompt's token ids from llama.cpp's ``/apply-template`` and ``/tokenize`` (the answer had none)."""
        root = self.base_url.removesuffix("/v1")
        fix = (
            f"the chat endpoint {self.url} answered no prompt_token_ids, and {root}/apply-template with "
            f"{root}/tokenize (llama.cpp's server) could not give them"
        )
        if self._tokenizes is False:
            raise PolicyError(f"No prompt token ids: {fix}; use a server that reports them (docs/capture.md)")
        try:
            template = await self._post(f"{root}/apply-template", body)
            prompt = template.get("prompt")
            if not isinstance(prompt, str):
                raise PolicyError(f"{root}/apply-template answered without a prompt")
            tokens = await self._post(
                f"{root}/tokenize", {"content": prompt, "add_special": True, "parse_special": True}
            )
            ids: Any = tokens.get("tokens")
            if not token_ids(ids):
                raise PolicyError(f"{root}/tokenize answered without tokens")
        except PolicyError as exc:
            if self._tokenizes is None:
                self._tokenizes = False
            raise PolicyError(
                f"No prompt token ids: {fix} ({exc.message}); use a server that reports them (docs/capture.md)"
            ) from None
        self._tokenizes = True
        return list(ids)

    async def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = await self._http.post(url, json=body)
        except httpx.TimeoutException:
            raise PolicyError(
                f"The chat endpoint {url} did not answer within {self.timeout:g} s (--timeout); give it longer, "
                "or fewer tokens to write (--max-tokens)"
            ) from None
        except httpx.HTTPError as exc:
            raise PolicyError(f"Cannot reach the chat endpoint {url}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            said = _message(response)
            if context_full(response.status_code, response.text):
                raise ContextFull(f"The model's context is full: {url} answered {response.status_code}: {said}")
            raise PolicyError(f"The chat endpoint {url} answered {response.status_code}: {said}")
        try:
            payload = response.json()
        except ValueError:
            raise PolicyError(f"The chat endpoint {url} answered {response.status_code} without JSON") from None
        if not isinstance(payload, dict):
            raise PolicyError(f"The chat endpoint {url} answered JSON that is not an object")
        return payload

    async def check(self, tools: Sequence[dict[str, Any]]) -> str:
        """The pre-flight: one one-token request with ``tools``; what it found, or a ConfigError saying why not."""
        body = self.request([{"role": "user", "content": "Reply with OK."}], tools)
        body["max_tokens"] = 1
        try:
            completion = await self._complete(body)
        except PolicyError as exc:
            raise ConfigError(
                f"The model endpoint failed its pre-flight check (one request with the tools, before any "
                f"episode): {exc.message}. docs/local-models.md says what each server needs"
            ) from None
        found = f"model endpoint {self.url} answered in {completion.seconds:.1f} s (model {completion.model!r})"
        if self.sampling.capture_tokens:
            where = "its /apply-template and /tokenize" if self._tokenizes else "the answer"
            found += f"; token ids and log-probabilities from the answer, prompt ids from {where}"
        return found

    async def aclose(self) -> None:
        await self._http.aclose()


def _message(response: httpx.Response) -> str:
    """The error's own message (``error.message``, ``message`` or ``detail``), else the body's start."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(payload, dict):
        error = payload.get("error")
        said = error.get("message") if isinstance(error, dict) else error
        for found in (said, payload.get("message"), payload.get("detail")):
            if isinstance(found, str) and found:
                return found[:500]
    return response.text[:300]
