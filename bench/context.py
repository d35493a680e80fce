"""What every section gets: the plan (how much to measure), the running servers, and where details go."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import servers

SECTIONS = ("step", "mcp", "reset", "throughput", "ors", "memory", "startup", "fork")
ENVS = ("sql", "email", "search", "coding", "desktop")


@dataclass(frozen=True)
class Plan:
    # latency (step, mcp, reset)
    rounds: int
    warmup: int  # untimed calls per block before the first round
    rewarm: int  # untimed calls before each timed block
    block_budget_s: float  # timed seconds per block per round (sets its call count from its warm latency)
    block_cap: int  # at most this many timed calls per block per round
    # throughput
    tp_rounds: int
    tp_warmup_s: float
    tp_duration_s: float
    concurrency: tuple[int, ...]
    rec_rounds: int  # rounds of recording on / off, a pair of their own (its checked ratio is close to its limit)
    # memory: episodes opened per environment (OpenEnv: WebSocket sessions)
    episodes: dict[str, int]
    memory_all: bool  # every shipped environment, or only sql (and the trivial one and OpenEnv)
    # start-up
    startup_reps: int
    startup_all: bool  # every shipped environment, or only sql and the baselines


FULL = Plan(
    rounds=10,
    warmup=100,
    rewarm=5,
    block_budget_s=0.25,
    block_cap=250,
    tp_rounds=4,
    tp_warmup_s=0.3,
    tp_duration_s=1.0,
    concurrency=(1, 16, 64),
    rec_rounds=10,
    episodes={
        "trivial": 10_000,
        "sql": 10_000,
        "email": 2_000,
        "search": 2_000,
        "coding": 1_000,
        "desktop": 8,
        "openenv": 1_000,
    },
    memory_all=True,
    startup_reps=3,
    startup_all=True,
)
QUICK = Plan(
    rounds=3,
    warmup=30,
    rewarm=3,
    block_budget_s=0.08,
    block_cap=100,
    tp_rounds=2,
    tp_warmup_s=0.15,
    tp_duration_s=0.3,
    concurrency=(1, 16, 64),
    rec_rounds=3,
    episodes={"trivial": 1_000, "sql": 1_000, "email": 200, "search": 200, "coding": 100, "desktop": 2, "openenv": 200},
    memory_all=False,
    startup_reps=1,
    startup_all=False,
)


@dataclass
class Context:
    plan: Plan
    sections: set[str]
    envs: list[str]  # the shipped environments to measure
    tables: list[str]
    log_dir: Path
    openenv_python: Path | None
    up: dict[str, servers.Server] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # server or figure -> why it was not measured
    details: dict[str, Any] = field(default_factory=dict)
