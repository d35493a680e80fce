"""DockerGym's worker protocol, the server's side: JSON lines on the worker's stdin and stdout.

    -> {"cmd": "init", "env_id": "...", ...params}
    <- {"status": "ok", "observation": str, "reward": float, "done": bool, ...extras}
    -> {"cmd": "step", "action": str}
    <- the same shape, or {"status": "error", "message": str}

``score`` stands for ``reward`` when ``reward`` is missing; every other key of an answer is an extra, kept as it is.
A worker may be sent ``init`` again to start a new episode on the same world.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["VALID_ACTION_KEYS", "Garbage", "Refused", "Reply", "init_message", "parse_reply", "step_message"]

VALID_ACTION_KEYS = ("valid_actions", "admissible_commands")
"""Extras that list the actions the world accepts now (DockerGym's ScienceWorld worker, TextWorld's name)."""

_STANDARD = frozenset({"status", "observation", "reward", "done"})


class Garbage(Exception):
    """An answer that is not the protocol's (not JSON, not an object, a field of the wrong type)."""


class Refused(Exception):
    """A well-formed ``{"status": "error"}`` answer: the world refused the command; its message."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One ``ok`` answer: the world's text, the step's reward and done flag, and the worker's other keys."""

    observation: str
    reward: float
    done: bool
    extras: Mapping[str, Any]

    @property
    def valid_actions(self) -> list[str] | None:
        """The actions the world accepts now, when the worker lists them."""
        for key in VALID_ACTION_KEYS:
            found = self.extras.get(key)
            if isinstance(found, list) and all(isinstance(action, str) for action in found):
                return found
        return None


def init_message(env_id: str, params: Mapping[str, Any]) -> bytes:
    """The ``init`` line: ``params`` flat beside ``cmd`` and ``env_id``, as DockerGym sends them."""
    return _line({**params, "cmd": "init", "env_id": env_id})


def step_message(action: str) -> bytes:
    """The ``step`` line."""
    return _line({"cmd": "step", "action": action})


def _line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def parse_reply(line: bytes) -> Reply:
    """One answer line as a :class:`Reply`; :class:`Refused` for an error answer, :class:`Garbage` otherwise."""
    try:
        answer = json.loads(line)
    except ValueError:
        raise Garbage(f"not JSON: {_cut(line)}") from None
    if not isinstance(answer, dict):
        raise Garbage(f"not a JSON object: {_cut(line)}")
    status = answer.get("status")
    if status == "error":
        message = answer.get("message")
        raise Refused(message if isinstance(message, str) and message else "(no message)")
    if status != "ok":
        raise Garbage(f"status {status!r}, not 'ok' or 'error': {_cut(line)}")
    observation = answer.get("observation")
    if not isinstance(observation, str):
        raise Garbage(f"'observation' is {type(observation).__name__}, not a string: {_cut(line)}")
    reward = answer.get("reward", answer.get("score", 0.0))
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
        raise Garbage(f"'reward' is {reward!r}, not a finite number: {_cut(line)}")
    done = answer.get("done", False)
    if not isinstance(done, bool):
        raise Garbage(f"'done' is {done!r}, not true or false: {_cut(line)}")
    extras = {key: value for key, value in answer.items() if key not in _STANDARD}
    return Reply(observation=observation, reward=float(reward), done=done, extras=extras)


def _cut(line: bytes, limit: int = 200) -> str:
    text = line.decode("utf-8", errors="replace").strip()
    return repr(text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)")
