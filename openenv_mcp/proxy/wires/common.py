"""What the wire formats share: SSE framing, OpenAI's error shape, and reading numbers and stop words."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from openenv_mcp.errors import OpenEnvError
from openenv_mcp.proxy.conversation import field_of
from openenv_mcp.proxy.errors import RequestInvalid, http_status

__all__ = ["number", "openai_error", "sse", "stops"]


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event (``event:`` line when named), its data as compact JSON (or ``[DONE]`` as is)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


_OPENAI_TYPES = {400: "invalid_request_error", 404: "not_found_error", 413: "invalid_request_error"}


def openai_error(error: OpenEnvError) -> dict[str, Any]:
    """OpenAI's error body (chat completions and Responses alike)."""
    status = http_status(error)
    kind = _OPENAI_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": error.message, "type": kind, "param": None, "code": error.code}}


def number(body: Mapping[str, Any], *names: str) -> float | None:
    """The first of ``names`` that ``body`` has, as a number (``None``: none of them)."""
    for name in names:
        value = field_of(body, name, (int, float))
        if value is not None:
            return float(value)
    return None


def whole(body: Mapping[str, Any], *names: str) -> int | None:
    """The first of ``names`` that ``body`` has, as a whole number (``None``: none of them)."""
    for name in names:
        value = field_of(body, name, int)
        if value is not None:
            if value < 0:
                raise RequestInvalid(f"The field {name!r} must not be negative")
            return int(value)
    return None


def stops(value: Any, name: str) -> tuple[str, ...]:
    """Stop words given as one string or a list of them."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise RequestInvalid(f"The field {name!r} must be a string or a list of strings")
