"""The ScienceWorld worker: ScienceWorld's own Python API behind the worker protocol (JSON lines on stdin/stdout).

Run as a script (``python worker.py``), it imports the ``scienceworld`` package and the standard library only, so
each worker stays small. It starts its JVM at once, so a worker the pool started ahead is warm by its first
``init``, and keeps it across inits. Its answers carry ScienceWorld's own numbers: ``reward`` is the change of the
score (0-100) since the last answer and ``score`` the score; the server turns them into rewards. The points a
task's starting position already earns (the package's reset takes a first look, which can score) count on the
first step, so the rewards of an episode add up to its final score (the package's own rewards leave them out).
``valid_actions`` are sorted (the simulator's order is not stable across JVMs).

    -> {"cmd": "init", "env_id": "boil", "variation": 3, "simplifications": ""}
    -> {"cmd": "step", "action": "open door to kitchen"}

``python worker.py --gold`` answers gold paths instead: ``{"task": "boil", "variation": 3}`` ->
``{"actions": [...], "solves": true}`` (a line each), for the scripted policy; each path is played first.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

_STEP_LIMIT = 1_000_000  # the server's step limit ends episodes, not the simulator's


def _protocol_stream() -> TextIO:
    """The real stdout for the protocol; fd 1 (the JVM's, any library's) goes to stderr from here on."""
    stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def _send(stream: TextIO, answer: dict[str, Any]) -> None:
    stream.write(json.dumps(answer) + "\n")
    stream.flush()


class World:
    """One ScienceWorld simulator (one JVM), loaded again for each episode."""

    def __init__(self) -> None:
        from scienceworld import ScienceWorldEnv

        self.env = ScienceWorldEnv("", envStepLimit=_STEP_LIMIT)
        self.loaded = False
        self.score = 0  # the score the last answer reported

    def init(self, task: str, variation: int, simplifications: str) -> dict[str, Any]:
        self.env.load(task, variation, simplifications, False)
        observation, info = self.env.reset()
        self.loaded, self.score = True, 0
        text = f"{info['taskDesc'].strip()}\n\n{observation.strip()}"
        return self._answer(text, 0, False, info)

    def step(self, action: str) -> dict[str, Any]:
        if not self.loaded:
            raise RuntimeError("no task is loaded: send init first")
        observation, _, done, info = self.env.step(action)
        reward, self.score = info["score"] - self.score, info["score"]
        return self._answer(observation.strip(), reward, done, info)

    def gold(self, task: str, variation: int, *, attempts: int = 5) -> tuple[list[str], bool]:
        """A gold path that solves the variation when played from its start, and whether one was found.

        The simulator makes its gold path anew at each load, not always the same one (objects with the same name
        are told apart by descriptions that change as the world does), and now and then one that does not reach
        the full score when played again (an ambiguous object stops it). The world itself is the same at every
        load, so a path that solves it once here solves it for every worker: each is played before it is given.
        """
        actions: list[str] = []
        for _ in range(attempts):
            self.env.load(task, variation, "", True)
            actions = list(self.env.get_gold_action_sequence())
            self.env.load(task, variation, "", False)
            self.env.reset()
            score, done, played = 0, False, 0
            for action in actions:
                _, _, done, info = self.env.step(action)
                score, played = info["score"], played + 1
                if done:
                    break
            if done and score == 100:
                self.loaded = False
                return actions[:played], True  # the path ends where the task does (some end with a spare 'wait')
        self.loaded = False
        return actions, False

    @staticmethod
    def _answer(text: str, reward: float, done: bool, info: dict[str, Any]) -> dict[str, Any]:
        return {
            "status": "ok",
            "observation": text,
            "reward": float(reward),
            "done": bool(done),
            "valid_actions": sorted(info["valid"]),
            "score": info["score"],
            "moves": info["moves"],
        }


def serve(world: World, stream: TextIO) -> None:
    """The protocol loop, until stdin ends."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            command = json.loads(line)
            if command.get("cmd") == "init":
                answer = world.init(
                    str(command["env_id"]), int(command.get("variation", 0)), str(command.get("simplifications", ""))
                )
            elif command.get("cmd") == "step":
                answer = world.step(str(command["action"]))
            else:
                answer = {"status": "error", "message": f"unknown command {command.get('cmd')!r}"}
        except Exception as exc:  # the world's refusal (an unknown task, a bad variation): said, not fatal
            answer = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
        _send(stream, answer)


def serve_gold(world: World, stream: TextIO) -> None:
    """Gold paths on request, until stdin ends."""
    for line in sys.stdin:
        if line.strip():
            asked = json.loads(line)
            actions, solves = world.gold(str(asked["task"]), int(asked["variation"]))
            _send(stream, {"actions": actions, "solves": solves})


def main() -> None:
    stream = _protocol_stream()
    world = World()
    try:
        (serve_gold if "--gold" in sys.argv[1:] else serve)(world, stream)
    finally:
        world.env.close()


if __name__ == "__main__":
    main()
