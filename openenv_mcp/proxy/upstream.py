"""The inference server behind the proxy, driven by token ids: llama.cpp's ``llama-server``.

The proxy never sends text to be templated or tokenized behind its back. It reads the model's chat template and
special tokens once (``GET /props``), renders each prompt itself, turns the text into ids with ``POST /tokenize``
(``parse_special``: the template's special tokens are single ids, as the model was trained on them) and generates
from those ids with ``POST /completion`` (``prompt`` a list of ids), asking for the sampled ids and the
log-probability of each (``n_probs``, ``return_tokens``). The log-probabilities are llama.cpp's: a softmax of the
model's logits before temperature and the other samplers, the distribution a policy-gradient trainer scores.

Every call has a bounded time: ``connect`` seconds to reach the server, ``timeout`` seconds for an answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import httpx

from openenv_mcp.proxy.errors import BackendUnavailable, UpstreamRejected, UpstreamTimeout

__all__ = ["Generation", "LlamaCppUpstream", "ModelCard", "Sampling", "Upstream"]

_IS_INT = int.__instancecheck__  # checks a list of thousands of ids at C speed


@dataclass(frozen=True, slots=True)
class Sampling:
    """How to sample a reply; ``None`` leaves the server's default."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class ModelCard:
    """What the server says about its model: the chat template and special tokens to render prompts with."""

    model: str
    chat_template: str
    bos_token: str = ""
    eos_token: str = ""
    context: int | None = None


@dataclass(frozen=True, slots=True)
class Generation:
    """One sampled reply.

    Attributes:
        ids: The sampled token ids, in order (the end-of-turn token included when the model wrote one).
        logprobs: The log-probability of each sampled id.
        text: The reply's text as the server gives it (without a stop word or the end-of-turn token).
        raw: Exactly the text the ids spell, special tokens included (their pieces joined; a special token's text
            from the server's /detokenize, which llama.cpp's probabilities leave empty).
        finish_reason: ``stop`` (end of turn or a stop word) or ``length`` (the token limit).
    """

    ids: list[int]
    logprobs: list[float]
    text: str
    raw: str
    finish_reason: str
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Upstream(Protocol):
    """An inference server that takes token ids and gives back sampled ids with their log-probabilities."""

    url: str

    async def card(self) -> ModelCard: ...

    async def tokenize(self, text: str) -> list[int]: ...

    async def generate(self, ids: Sequence[int], sampling: Sampling) -> Generation: ...

    async def aclose(self) -> None: ...


class LlamaCppUpstream:
    """llama.cpp's ``llama-server`` at ``url`` (its root, not ``/v1``)."""

    def __init__(self, url: str, *, timeout: float = 300.0, connect: float = 5.0) -> None:
        self.url = url.rstrip("/").removesuffix("/v1")
        self.timeout = timeout
        self._client = httpx.AsyncClient(base_url=self.url, timeout=httpx.Timeout(timeout, connect=connect))
        self._specials: dict[int, bytes] = {}

    async def card(self) -> ModelCard:
        props = await self._call("GET", "/props")
        template = props.get("chat_template")
        if not isinstance(template, str) or not template:
            raise UpstreamRejected(
                f"The inference server at {self.url} gives no chat template at /props; start llama-server with "
                "--jinja, or give the proxy one with --chat-template"
            )
        settings = props.get("default_generation_settings") or {}
        path = str(props.get("model_alias") or props.get("model_path") or "model")
        return ModelCard(
            model=path.rsplit("/", 1)[-1],
            chat_template=template,
            bos_token=str(props.get("bos_token") or ""),
            eos_token=str(props.get("eos_token") or ""),
            context=settings.get("n_ctx") if isinstance(settings.get("n_ctx"), int) else None,
        )

    async def tokenize(self, text: str) -> list[int]:
        answer = await self._call(
            "POST", "/tokenize", {"content": text, "add_special": False, "parse_special": True, "with_pieces": False}
        )
        tokens = answer.get("tokens")
        if not isinstance(tokens, list) or not all(map(_IS_INT, tokens)):
            raise UpstreamRejected(f"The inference server at {self.url} answered /tokenize without token ids")
        return tokens

    async def generate(self, ids: Sequence[int], sampling: Sampling) -> Generation:
        body: dict[str, Any] = {
            "prompt": list(ids),
            "n_probs": 1,
            "return_tokens": True,
            "cache_prompt": True,
            "stream": False,
            "n_predict": -1 if sampling.max_tokens is None else sampling.max_tokens,
        }
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        for name, value in (
            ("temperature", sampling.temperature),
            ("top_p", sampling.top_p),
            ("top_k", sampling.top_k),
            ("seed", sampling.seed),
        ):
            if value is not None:
                body[name] = value
        answer = await self._call("POST", "/completion", body)
        generation, pieces = _generation(answer, self.url)
        text = bytearray()
        for token, piece in zip(generation.ids, pieces, strict=True):
            text += piece if piece is not None else await self._special(token)
        return replace(generation, raw=text.decode("utf-8", errors="replace"))

    async def _special(self, token: int) -> bytes:
        """The text of a token the server gives no bytes for (a special token), from /detokenize, kept."""
        if token not in self._specials:
            answer = await self._call("POST", "/detokenize", {"tokens": [token]})
            self._specials[token] = str(answer.get("content") or "").encode()
        return self._specials[token]

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = await self._client.request(method, path, json=body)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(
                f"The inference server at {self.url} did not answer {path} within {self.timeout:g} s "
                f"({exc.__class__.__name__}); give the proxy a longer --timeout, or ask for fewer tokens"
            ) from None
        except httpx.TransportError as exc:
            raise BackendUnavailable(
                f"The inference server at {self.url} cannot be reached ({exc.__class__.__name__}: {exc}); start it, "
                "or point the proxy's --upstream at it"
            ) from None
        if response.status_code >= 400:
            raise UpstreamRejected(
                f"The inference server at {self.url} answered {path} with {response.status_code}: {_message(response)}",
                http_status=response.status_code if response.status_code < 500 else 502,
            )
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise UpstreamRejected(f"The inference server at {self.url} answered {path} with something not JSON")
        return answer


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return str(body)[:500]


def _generation(answer: dict[str, Any], url: str) -> tuple[Generation, list[bytes | None]]:
    """A ``/completion`` answer's sampled ids, their log-probabilities and text, and each id's bytes (``None``
    where the server gives none: a special token such as the end of the turn, whose text /detokenize gives).

    The ids are those of ``completion_probabilities``, one per sampled token that the reply keeps: with a stop word,
    llama.cpp cuts the word's tokens from the text and from the probabilities (``tokens`` still has them), and the
    harness never shows them to the model again.
    """
    entries = answer.get("completion_probabilities")
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise UpstreamRejected(
            f"The inference server at {url} answered /completion without completion_probabilities; it must be "
            "llama.cpp's llama-server (a build that takes n_probs)"
        )
    ids = [entry.get("id") for entry in entries]
    logprobs = [entry.get("logprob") for entry in entries]
    if not all(map(_IS_INT, ids)) or not all(isinstance(value, int | float) for value in logprobs):
        raise UpstreamRejected(
            f"The inference server at {url} answered /completion without an id and logprob per token"
        )
    tokens = answer.get("tokens")
    if isinstance(tokens, list) and tokens and tokens[: len(ids)] != ids:
        raise UpstreamRejected(f"The inference server at {url} reported tokens that differ from its probabilities' ids")
    pieces: list[bytes | None] = []
    for entry in entries:
        raw, text = entry.get("bytes"), entry.get("token")
        if isinstance(raw, list) and raw:
            pieces.append(bytes(raw))
        elif isinstance(text, str) and text:
            pieces.append(text.encode())
        else:
            pieces.append(None)
    stop_type = answer.get("stop_type")
    finish = "length" if stop_type == "limit" or (answer.get("truncated") is True and stop_type != "eos") else "stop"
    generation = Generation(
        ids=[int(token) for token in ids],
        logprobs=[float(value) for value in logprobs],
        text=str(answer.get("content") or ""),
        raw="",
        finish_reason=finish,
        extra={"stop_type": stop_type, "stopping_word": answer.get("stopping_word")},
    )
    return generation, pieces
