"""Where a learning run stands: ``state.json`` beside the plan, rewritten after every unit of work.

It holds each stage's status and its own counters (the SFT step, the RL iteration...), and the accounting: every
piece of ``scripts/learn run`` (when it started and ended, the hours it was given) and each stage's wall and CPU
seconds summed over pieces (CPU of this process and of every child it waited for: evals, llama-servers, training).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["Ledger", "cpu_seconds"]


def cpu_seconds() -> float:
    """CPU time of this process and its finished children, user and system."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class Ledger:
    """``state.json``: stages, counters and times. Every change is written at once (atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"stages": {}, "pieces": []}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(self.data, indent=1) + "\n")
        os.replace(partial, self.path)

    def stage(self, name: str) -> dict[str, Any]:
        """The stage's record (made empty on first use): ``done``, ``wall``, ``cpu`` and its own counters."""
        found: dict[str, Any] = self.data["stages"].setdefault(name, {"done": False, "wall": 0.0, "cpu": 0.0})
        return found

    def done(self, name: str) -> bool:
        return bool(self.stage(name)["done"])

    def finish(self, name: str) -> None:
        self.stage(name)["done"] = True
        self.stage(name)["finished"] = _now()
        self.save()

    @contextmanager
    def timed(self, name: str) -> Iterator[dict[str, Any]]:
        """Add the wall and CPU time of the block to stage ``name`` (also when it fails or is interrupted)."""
        record = self.stage(name)
        wall, cpu = time.monotonic(), cpu_seconds()
        try:
            yield record
        finally:
            record["wall"] = round(record["wall"] + time.monotonic() - wall, 1)
            record["cpu"] = round(record["cpu"] + cpu_seconds() - cpu, 1)
            self.save()

    @contextmanager
    def piece(self, hours: float) -> Iterator[dict[str, Any]]:
        """One invocation of ``run``: listed in ``pieces`` with its start, end, hours given, wall and CPU."""
        record: dict[str, Any] = {"started": _now(), "hours": hours, "stages": []}
        self.data["pieces"].append(record)
        self.save()
        wall, cpu = time.monotonic(), cpu_seconds()
        try:
            yield record
        finally:
            record.update(ended=_now(), wall=round(time.monotonic() - wall, 1), cpu=round(cpu_seconds() - cpu, 1))
            self.save()
