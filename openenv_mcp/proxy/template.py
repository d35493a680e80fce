"""The model's chat template, rendered the way Hugging Face transformers renders it.

``apply_chat_template`` compiles the Jinja template in a sandbox with ``trim_blocks`` and ``lstrip_blocks``, the
``loopcontrols`` extension, a ``tojson`` filter that keeps non-ASCII text as it is, and the globals
``raise_exception`` and ``strftime_now``; it passes ``messages``, ``tools`` (OpenAI function objects),
``add_generation_prompt`` and the special tokens. Templates written for transformers (those inside GGUF files
included, which llama.cpp serves at ``GET /props``) expect exactly that, so this module does the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NoReturn

from jinja2 import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from openenv_mcp.proxy.errors import RequestInvalid

__all__ = ["ChatTemplate"]


def _raise(message: str) -> NoReturn:
    raise TemplateError(message)


def _tojson(value: Any, indent: int | None = None, separators: Any = None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class ChatTemplate:
    """A compiled chat template and the special tokens it is rendered with."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
        environment.filters["tojson"] = _tojson
        environment.globals["raise_exception"] = _raise
        environment.globals["strftime_now"] = _strftime_now
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._template = environment.from_string(source)

    def generation_prompt(self) -> str:
        """The text the template puts after the conversation to open the assistant's turn (may be empty)."""
        probe = [{"role": "user", "content": "?"}]
        opened = self.render(probe, None)
        closed = self.render(probe, None, add_generation_prompt=False)
        return opened[len(closed) :] if opened.startswith(closed) else ""

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The prompt for ``messages`` with ``tools``, ending where the assistant's reply begins.

        Raises:
            RequestInvalid: the template refused the conversation (its own ``raise_exception``, or a shape it
                cannot render); the message says which.
        """
        try:
            return self._template.render(
                messages=list(messages),
                tools=list(tools) if tools else None,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except (TemplateError, TypeError, ValueError, KeyError, AttributeError) as exc:
            raise RequestInvalid(
                f"The model's chat template cannot render this conversation ({exc.__class__.__name__}: {exc}); "
                "check the order and roles of the messages"
            ) from None
