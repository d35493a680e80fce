"""Snapshots: an episode as data (task, seed, the log of its steps), signed by the server that made it.

A snapshot restores by replaying its steps on a fresh backend through the one path, each step checked against the
digest of the observation it gave when it was recorded. What a signature guarantees:

- **Always:** a snapshot is accepted only by a server with the same environment name and the same tool table
  (names and schemas), and any accidental change to it (a truncated file, an edited field) is detected.
- **With ``OPENENV_SNAPSHOT_KEY``:** the signature is an HMAC-SHA256 under that key, so a snapshot altered or made
  by anyone without the key is rejected. Without the key the signature is a plain digest: anyone can recompute it,
  so it proves integrity, not origin.
- **Never:** that the tasks, fixtures or code behind the tools are the same version; a replay that gives other
  observations than the recorded ones is :class:`~openenv_mcp.errors.ReplayDiverged`, naming the first step.

Snapshots carry the arguments the agent sent; they are as confidential as the trajectories.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any

from openenv_mcp.environment.tools import Tool
from openenv_mcp.errors import SnapshotRejected
from openenv_mcp.models import Snapshot, SnapshotStep
from openenv_mcp.runtime.episodes import Episode, LoggedStep, observation_digest

__all__ = ["SnapshotSigner", "observation_digest", "toolset_digest"]


def toolset_digest(tools: Iterable[Tool]) -> str:
    """A digest of a tool table: each tool's name and input and output schemas."""
    table = [[tool.name, tool.input_schema, tool.output_schema] for tool in tools]
    text = json.dumps(sorted(table, key=lambda entry: str(entry[0])), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class SnapshotSigner:
    """Makes and checks the snapshots of one server.

    Args:
        server: The environment's name.
        toolset: :func:`toolset_digest` of its tool table.
        key: The HMAC key (``OPENENV_SNAPSHOT_KEY``); ``None`` signs with a plain digest.
    """

    def __init__(self, server: str, toolset: str, key: bytes | None) -> None:
        self.server = server
        self.toolset = toolset
        self._key = key

    def signature(self, snapshot: Snapshot) -> str:
        """The signature ``snapshot`` should carry (over every field but the signature)."""
        fields = snapshot.model_dump(mode="json", exclude={"signature"})
        payload = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        if self._key is None:
            return "sha256:" + hashlib.sha256(payload).hexdigest()
        return "hmac-sha256:" + hmac.new(self._key, payload, hashlib.sha256).hexdigest()

    def snapshot(self, episode: Episode, log: list[LoggedStep]) -> Snapshot:
        """The signed snapshot of ``episode`` after the steps in ``log`` (its log, copied under its lock)."""
        last = log[-1] if log else None
        snapshot = Snapshot(
            server=self.server,
            toolset=self.toolset,
            task_id=episode.task.id,
            split=episode.task.split,
            seed=episode.seed,
            max_steps=episode.max_steps,
            step_count=len(log),
            total_reward=sum_rewards(log),
            done=bool(last and last.done),
            steps=[
                SnapshotStep(
                    tool=step.tool,
                    arguments=dict(step.arguments),
                    observation=step.digest().hex(),
                    reward=step.reward,
                    done=step.done,
                )
                for step in log
            ],
        )
        snapshot.signature = self.signature(snapshot)
        return snapshot

    def verify(self, snapshot: Snapshot) -> list[LoggedStep]:
        """The log a snapshot carries, once its origin and signature check out; :class:`SnapshotRejected` if not."""
        if snapshot.server != self.server:
            raise SnapshotRejected(
                f"This snapshot was made by server {snapshot.server!r}; this is {self.server!r}: "
                "restore it on a server of the same environment"
            )
        if snapshot.toolset != self.toolset:
            raise SnapshotRejected(
                f"This snapshot was made by a {self.server!r} server with another tool table "
                f"({snapshot.toolset} here {self.toolset}): restore it on the version of the server that made it"
            )
        expected = self.signature(snapshot)
        if not hmac.compare_digest(expected, snapshot.signature):
            keyed = "an HMAC under OPENENV_SNAPSHOT_KEY" if self._key is not None else "a plain digest (no key set)"
            raise SnapshotRejected(
                "The snapshot's signature does not match its content: it was altered, or signed with another "
                f"OPENENV_SNAPSHOT_KEY (this server expects {keyed}); take a new snapshot"
            )
        if len(snapshot.steps) != snapshot.step_count:
            raise SnapshotRejected(f"The snapshot holds {len(snapshot.steps)} steps but says {snapshot.step_count}")
        try:
            return [
                LoggedStep(step.tool, step.arguments, bytes.fromhex(step.observation), step.reward, step.done)
                for step in snapshot.steps
            ]
        except ValueError:
            raise SnapshotRejected("A step's observation digest is not hexadecimal; take a new snapshot") from None


def sum_rewards(log: Iterable[LoggedStep]) -> float:
    """The total reward of a log, added in order (as the episode added it)."""
    total = 0.0
    for step in log:
        total += step.reward
    return total


def describe(arguments: Any) -> str:
    """Arguments in an error message: JSON, cut to 120 characters."""
    text = json.dumps(arguments, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."
