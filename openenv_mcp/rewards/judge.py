"""An LLM judge: a rubric component scored by a model behind any OpenAI-compatible chat completions endpoint.

The judge renders its prompt template with the step (``{prompt}`` the task's prompt, ``{tool}``,
``{arguments}`` and ``{structured}`` as JSON, ``{observation}`` the result's text, plus what ``inputs``
returns), asks the model for a JSON verdict ``{"score": <number in scale>, "reason": "..."}``, checks it, and
reports the score scaled to 0..1; the verdict's reason is reported beside the scores (``info["reasons"]`` on a
step, ``_meta["openenv-mcp/reasons"]`` over MCP). Verdicts are cached by their input (model, messages,
temperature): in process (an LRU) and, when ``JUDGE_CACHE_DIR`` is set, on disk, so a replayed or forked episode
asks no twice; identical questions asked at the same time share one request. The server's ``/metrics`` counts
verdicts by judge and how they were got (``openenv_judge_verdicts_total``) and times the requests.

A judge that fails (no answer within the timeout, an HTTP error, an answer that is not a verdict) is retried
with exponential backoff, then raises :class:`~openenv_mcp.errors.JudgeUnavailable` naming the endpoint; never
a silent 0. Its endpoint comes from the environment's settings, whose class mixes in :class:`JudgeSettings`
(``<PREFIX>JUDGE_BASE_URL``, ``..._MODEL``, ``..._API_KEY``, ``..._TIMEOUT``, ...).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import hashlib
import json
import logging
import math
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings

from openenv_mcp.errors import ConfigError, JudgeUnavailable
from openenv_mcp.rewards.rubrics import Component, Scoring

__all__ = ["JudgeSettings", "LLMJudge", "Verdict"]

log = logging.getLogger(__name__)

SYSTEM = (
    "You are a strict, fair grader. Judge only what you are shown. Answer with one JSON object and nothing "
    'else: {{"score": <a number from {low:g} to {high:g}>, "reason": "<one short sentence>"}}.'
)
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class JudgeSettings(BaseSettings):
    """Settings of an environment's LLM judges: mix into the environment's settings class.

    ``class MySettings(JudgeSettings): model_config = SettingsConfigDict(env_prefix="MYENV_")`` reads
    ``MYENV_JUDGE_BASE_URL`` and the rest.
    """

    judge_base_url: str | None = Field(
        default=None, description="OpenAI-compatible API base of the judge model, e.g. http://127.0.0.1:8000/v1"
    )
    judge_model: str | None = Field(default=None, description="The judge's model name")
    judge_api_key: SecretStr | None = Field(default=None, description="Bearer key for the judge endpoint, if any")
    judge_timeout: float = Field(default=30.0, gt=0, description="Seconds one judge request may take")
    judge_retries: int = Field(default=2, ge=0, le=10, description="Further attempts after a failed judge request")
    judge_backoff: float = Field(default=0.5, ge=0, description="Seconds before the first retry (doubling)")
    judge_cache_size: int = Field(default=4096, ge=0, description="Verdicts kept in memory (0: none)")
    judge_cache_dir: Path | None = Field(default=None, description="Directory for verdicts cached on disk")


class Verdict(BaseModel):
    """A judge's answer, as checked."""

    score: float
    reason: str = Field(max_length=2000)


class LLMJudge(Component):
    """A component scored by a model (see the module docstring).

    Args:
        name: How its score is reported.
        prompt: The template (``str.format`` fields: prompt, tool, arguments, structured, observation, and
            ``inputs``'s keys; write literal braces doubled).
        inputs: Extra template fields from the step (e.g. the gold answer from the task).
        scale: The verdict's range; the reported score is scaled to 0..1.
        weight, gate, threshold, terminal: As for every component (a judge is terminal by default: it is
            asked once, at the end, not on every step).
        temperature: Sampling temperature asked of the model (0 for repeatable verdicts).
        max_tokens: Answer length asked of the model.
    """

    __slots__ = (
        "_cache",
        "_inflight",
        "config",
        "inputs",
        "max_tokens",
        "prompt",
        "scale",
        "seconds",
        "temperature",
        "verdicts",
    )

    def __init__(
        self,
        name: str,
        *,
        prompt: str,
        inputs: Callable[[Scoring], Mapping[str, Any]] | None = None,
        scale: tuple[float, float] = (0.0, 1.0),
        weight: float = 1.0,
        gate: bool = False,
        threshold: float = 1.0,
        terminal: bool = True,
        temperature: float = 0.0,
        max_tokens: int = 300,
    ) -> None:
        super().__init__(name, weight=weight, gate=gate, threshold=threshold, terminal=terminal)
        if not scale[0] < scale[1]:
            raise TypeError(f"LLMJudge {name!r}: scale must be (low, high) with low < high, got {scale}")
        self.prompt, self.inputs, self.scale = prompt, inputs, scale
        self.temperature, self.max_tokens = temperature, max_tokens
        self._start(None)

    def _start(self, config: JudgeSettings | None) -> None:
        """Its endpoint's settings, and no verdicts yet: an empty cache and no request in flight."""
        self.config = config
        self._cache: OrderedDict[str, Verdict] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[Verdict]] = {}
        # verdicts by how they were got: answered (asked the model), cached, joined (shared a request in flight),
        # failed; and the requests' [count, seconds] (one verdict each, retries included)
        self.verdicts: dict[str, int] = dict.fromkeys(("answered", "cached", "joined", "failed"), 0)
        self.seconds = [0, 0.0]

    def bind(self, settings: Any) -> LLMJudge:
        """A copy asking the endpoint in ``settings`` (an instance of a :class:`JudgeSettings` subclass)."""
        if not isinstance(settings, JudgeSettings):
            raise ConfigError(
                f"The LLM judge {self.name!r} needs the environment's settings class to subclass "
                f"openenv_mcp.rewards.judge.JudgeSettings (got {type(settings).__name__}), which holds its endpoint"
            )
        prefix = str(type(settings).model_config.get("env_prefix", "")).upper()
        for field in ("judge_base_url", "judge_model"):
            if not getattr(settings, field):
                raise ConfigError(f"The LLM judge {self.name!r} needs {prefix}{field.upper()}; set it and restart")
        bound = copy.copy(self)  # the same declaration (prompt, scale, weight...), with verdicts of its own
        bound._start(settings)
        return bound

    @property
    def endpoint(self) -> str:
        config = self._config()
        return f"{str(config.judge_base_url).rstrip('/')}/chat/completions"

    def _config(self) -> JudgeSettings:
        if self.config is None:
            raise ConfigError(
                f"The LLM judge {self.name!r} is not bound to settings: the runtime binds it (Rubric.bind(settings))"
            )
        return self.config

    def messages(self, scoring: Scoring) -> list[dict[str, str]]:
        """The chat messages asked for one step."""
        observation = scoring.observation
        fields: dict[str, Any] = {
            "prompt": getattr(scoring.task, "prompt", ""),
            "tool": scoring.call.tool.name,
            "arguments": json.dumps(dict(scoring.call.arguments), sort_keys=True, default=str),
            "structured": json.dumps(observation.structured_content, sort_keys=True, default=str),
            "observation": scoring.text,
        }
        if self.inputs is not None:
            fields.update(self.inputs(scoring))
        try:
            user = self.prompt.format_map(fields)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"The LLM judge {self.name!r}'s prompt template does not render ({exc!r}); its fields are "
                f"{', '.join(sorted(fields))}, and literal braces must be doubled"
            ) from None
        low, high = self.scale
        return [{"role": "system", "content": SYSTEM.format(low=low, high=high)}, {"role": "user", "content": user}]

    async def score(self, scoring: Scoring) -> float:
        verdict = await self.verdict(self.messages(scoring))
        scoring.reasons[self.name] = verdict.reason
        low, high = self.scale
        return (verdict.score - low) / (high - low)

    async def verdict(self, messages: list[dict[str, str]]) -> Verdict:
        """The model's checked verdict on ``messages``: from the cache, from the same question in flight, or asked
        (with retries)."""
        config = self._config()
        body = {
            "model": config.judge_model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        key = hashlib.sha256(json.dumps([body, self.scale], sort_keys=True).encode()).hexdigest()
        cached = self._cached(key, config)
        if cached is not None:
            self.verdicts["cached"] += 1
            return cached
        asking = self._inflight.get(key)
        if asking is not None:
            self.verdicts["joined"] += 1
        else:
            asking = self._inflight[key] = asyncio.ensure_future(self._answer(key, body, config))
            asking.add_done_callback(functools.partial(self._landed, key))
        # shielded: a step whose client went away does not cancel the request the others wait for
        return await asyncio.shield(asking)

    async def _answer(self, key: str, body: dict[str, Any], config: JudgeSettings) -> Verdict:
        started = time.perf_counter()
        try:
            verdict = await self._ask(body, config)
        except JudgeUnavailable:
            self.verdicts["failed"] += 1
            raise
        finally:
            self.seconds[0] += 1
            self.seconds[1] += time.perf_counter() - started
        self.verdicts["answered"] += 1
        self._store(key, verdict, config)
        return verdict

    def _landed(self, key: str, asking: asyncio.Future[Verdict]) -> None:
        self._inflight.pop(key, None)
        if not asking.cancelled():
            asking.exception()  # retrieved here, so a failure nobody waits for any more is not logged at exit

    def _cached(self, key: str, config: JudgeSettings) -> Verdict | None:
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        if config.judge_cache_dir is not None:
            path = config.judge_cache_dir / f"{key}.json"
            try:
                found = Verdict.model_validate_json(path.read_bytes())
            except (OSError, ValidationError):
                return None
            self._remember(key, found, config)
        return found

    def _store(self, key: str, verdict: Verdict, config: JudgeSettings) -> None:
        self._remember(key, verdict, config)
        if config.judge_cache_dir is not None:
            try:
                config.judge_cache_dir.mkdir(parents=True, exist_ok=True)
                temporary = config.judge_cache_dir / f".{key}.tmp"
                temporary.write_text(verdict.model_dump_json(), encoding="utf-8")
                temporary.replace(config.judge_cache_dir / f"{key}.json")
            except OSError as exc:
                log.warning("Judge cache %s not written: %s", config.judge_cache_dir, exc)

    def _remember(self, key: str, verdict: Verdict, config: JudgeSettings) -> None:
        if config.judge_cache_size <= 0:
            return
        self._cache[key] = verdict
        while len(self._cache) > config.judge_cache_size:
            self._cache.popitem(last=False)

    async def _ask(self, body: dict[str, Any], config: JudgeSettings) -> Verdict:
        headers = {}
        if config.judge_api_key is not None:
            headers["Authorization"] = f"Bearer {config.judge_api_key.get_secret_value()}"
        attempts = config.judge_retries + 1
        why = ""
        async with httpx.AsyncClient(timeout=config.judge_timeout, headers=headers) as client:
            for attempt in range(1, attempts + 1):
                retry = True
                try:
                    async with asyncio.timeout(config.judge_timeout):
                        response = await client.post(self.endpoint, json=body)
                    if response.status_code != 200:
                        retry = response.status_code in _RETRY_STATUS
                        why = f"answered HTTP {response.status_code}: {_snippet(response.text)}"
                    else:
                        return self._parse(response)
                except (TimeoutError, httpx.TimeoutException):
                    why = f"gave no answer within {config.judge_timeout:g} s"
                except httpx.HTTPError as exc:
                    why = f"cannot be reached ({type(exc).__name__}: {exc})"
                except _NotAVerdict as exc:
                    why = f"answered something that is not a verdict: {exc}"
                if not retry or attempt == attempts:
                    break
                await asyncio.sleep(config.judge_backoff * 2 ** (attempt - 1))
        tried = f"{attempt} attempt{'s' if attempt > 1 else ''}"
        prefix = str(type(config).model_config.get("env_prefix", "")).upper()
        raise JudgeUnavailable(
            f"The LLM judge {self.name!r} at {self.endpoint} (model {config.judge_model}) {why} ({tried}); "
            f"check the judge service, or point {prefix}JUDGE_BASE_URL and {prefix}JUDGE_MODEL at one that answers"
        )

    def _parse(self, response: httpx.Response) -> Verdict:
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise _NotAVerdict(f"no chat completion in {_snippet(response.text)}") from None
        if not isinstance(content, str):
            raise _NotAVerdict(f"the message content is {type(content).__name__}, not text")
        match = re.search(r"\{.*\}", content, re.DOTALL)
        if match is None:
            raise _NotAVerdict(f"no JSON object in {_snippet(content)}")
        try:
            verdict = Verdict.model_validate_json(match.group(0))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'verdict'}: {e['msg']}" for e in exc.errors())
            raise _NotAVerdict(f"{problems} in {_snippet(content)}") from None
        low, high = self.scale
        if not (math.isfinite(verdict.score) and low <= verdict.score <= high):
            raise _NotAVerdict(f"score {verdict.score} outside {low:g}..{high:g}")
        return verdict


class _NotAVerdict(Exception):
    pass


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")
