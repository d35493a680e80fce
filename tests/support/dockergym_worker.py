#!/usr/bin/env python3
"""A worker written the way DockerGym documents its workers, as one of its users would: a ``BaseWorker`` with
``init_env`` and ``step_env``, JSON lines on stdin/stdout, and stdout moved to stderr first so that nothing a
library prints can break the protocol. It uses the standard library only and knows nothing of openenv-mcp.

The world: a counter to bring to a target. ``env_id`` is ``count-to-N``; actions are ``add 1``, ``add 2`` and
``look``; reaching N exactly earns 1.0 and ends the episode, passing it ends it with 0. With the parameter
``introspect`` its answers also say which process answers and how many worlds it has started.
"""

import json
import os
import sys
from abc import ABC, abstractmethod


class BaseWorker(ABC):
    """The protocol loop; subclasses say what ``init`` and ``step`` do to their world."""

    @abstractmethod
    def init_env(self, env_id, params):
        """Start a world; returns (observation, reward, done, info)."""

    @abstractmethod
    def step_env(self, action):
        """Act in the world; returns (observation, reward, done, info)."""

    def close_env(self):  # noqa: B027 - optional, as in DockerGym's documentation: most worlds have nothing to free
        """Free what the world holds when the worker's input ends."""

    def _send(self, answer):
        self._out.write(json.dumps(answer) + "\n")
        self._out.flush()

    def _answer(self, call, *args):
        observation, reward, done, info = call(*args)
        answer = {"status": "ok", "observation": observation, "reward": float(reward), "done": bool(done)}
        answer.update(info)
        self._send(answer)

    def run(self):
        # keep the real stdout for the protocol, point fd 1 (and Python's stdout) at stderr
        self._out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        ready = False
        try:
            for line in sys.stdin:
                if not line.strip():
                    continue
                try:
                    command = json.loads(line)
                except ValueError as exc:
                    self._send({"status": "error", "message": f"Invalid JSON: {exc}"})
                    continue
                kind = command.get("cmd")
                try:
                    if kind == "init":
                        params = {k: v for k, v in command.items() if k not in ("cmd", "env_id")}
                        self._answer(self.init_env, command.get("env_id", ""), params)
                        ready = True
                    elif kind == "step" and ready:
                        self._answer(self.step_env, command.get("action", ""))
                    elif kind == "step":
                        self._send({"status": "error", "message": "Environment not initialized"})
                    else:
                        self._send({"status": "error", "message": f"Unknown command: {kind}"})
                except Exception as exc:
                    self._send({"status": "error", "message": f"{kind} failed: {exc}"})
        finally:
            self.close_env()


class CounterWorker(BaseWorker):
    def __init__(self):
        self.target = 0
        self.value = 0
        self.inits = 0
        self.introspect = False

    def _info(self):
        info = {"valid_actions": ["add 1", "add 2", "look"], "value": self.value}
        if self.introspect:  # which process answers, and how many worlds it has started
            info.update(pid=os.getpid(), inits=self.inits)
        return info

    def init_env(self, env_id, params):
        name, _, number = env_id.rpartition("-")
        if name != "count-to" or not number.isdigit():
            raise ValueError(f"unknown world {env_id!r}; try count-to-5")
        self.target, self.value = int(number), int(params.get("start", 0))
        self.introspect = bool(params.get("introspect"))
        self.inits += 1
        print(f"a library chatting on stdout while loading {env_id}")  # goes to stderr, not the protocol
        os.write(1, b"and native code writing to fd 1\n")
        return f"The counter shows {self.value}. Bring it to {self.target}.", 0.0, False, self._info()

    def step_env(self, action):
        if action in ("add 1", "add 2"):
            self.value += int(action[-1])
        elif action != "look":
            return f"Nothing happens: {action!r} is not an action here.", 0.0, False, self._info()
        done = self.value >= self.target
        reward = 1.0 if self.value == self.target else 0.0
        return f"The counter shows {self.value}.", reward, done, self._info()


if __name__ == "__main__":
    CounterWorker().run()
