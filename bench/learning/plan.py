"""What a learning run is: ``plan.json``, written once by the plan stage and read by every later one.

The held-out episodes (test tasks x seeds), the dev slice of the train split and the train tasks are fixed here
from the environment's own task list, so every arm plays the very same episodes and nothing a later stage
chooses can move them. The full run's plan is ``bench/learning/plan.json``; the toy plan (the CI test) is the
same shape at a few episodes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = ["Plan", "Sampling", "Serving", "Training", "draw_plan", "full_plan", "toy_plan"]


@dataclass(frozen=True)
class Serving:
    """The llama-servers: how many at once, their fixed ports (an eval's endpoint is part of its identity, so a
    resumed piece must find the same ones), context, threads each, and a chat template file or the model's own."""

    ports: tuple[int, ...] = (18431, 18432)
    context: int = 4096
    threads: int = 1
    chat_template: str | None = None  # a path in the repository, or None for the template inside the GGUF


@dataclass(frozen=True)
class Sampling:
    """How ``openenv-mcp eval --policy openai`` asks the model (the same for every arm and for RL's sampling)."""

    temperature: float = 0.7
    max_tokens: int = 256
    max_turns: int = 6
    timeout: float = 600.0


@dataclass(frozen=True)
class Training:
    """One LoRA update: the adapter's shape and the optimiser's settings."""

    rank: int = 8
    alpha: int = 16
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    learning_rate: float = 2e-4
    epochs: int = 1
    max_examples: int = 200
    max_length: int = 1536
    seed: int = 0
    threads: int = 2


@dataclass(frozen=True)
class Plan:
    """The run: environment, split and tier of the held-out episodes, the model, and every stage's settings."""

    environment: str
    split: str
    difficulty: str
    model: str  # a name of scripts/small_model.py's MODELS
    test_tasks: tuple[str, ...]
    seed: int  # eval --seed: trial i of every task plays with seed + i
    trials: int
    dev_tasks: tuple[str, ...]
    train_tasks: tuple[str, ...]
    serving: Serving = field(default_factory=Serving)
    sampling: Sampling = field(default_factory=Sampling)
    sft: Training = field(default_factory=Training)
    rl: Training = field(default_factory=lambda: Training(learning_rate=1e-4, max_examples=400))
    rl_iterations: int = 1
    rl_tasks: int = 60  # train tasks sampled per iteration (one trial each), drawn from train_tasks
    rl_min_reward: float = 1.0  # sampled episodes kept for the update: those with at least this reward

    @property
    def episodes(self) -> int:
        """Held-out episodes per arm."""
        return len(self.test_tasks) * self.trials

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> Plan:
        data: dict[str, Any] = json.loads(path.read_text())
        return cls(
            **{
                **data,
                "test_tasks": tuple(data["test_tasks"]),
                "dev_tasks": tuple(data["dev_tasks"]),
                "train_tasks": tuple(data["train_tasks"]),
                "serving": Serving(**{**data["serving"], "ports": tuple(data["serving"]["ports"])}),
                "sampling": Sampling(**data["sampling"]),
                "sft": Training(**{**data["sft"], "targets": tuple(data["sft"]["targets"])}),
                "rl": Training(**{**data["rl"], "targets": tuple(data["rl"]["targets"])}),
            }
        )


def draw_plan(
    *, environment: str, difficulty: str, tests: int, trials: int, dev: int, seed: int = 0, **settings: Any
) -> Plan:
    """A plan whose tasks are drawn (with ``seed``) from the environment's own task list."""
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.environment.tasks import stratified_sample

    task_set = load_environment(environment).tasks()
    test = [t.id for t in task_set.select(split="test", difficulty=difficulty)]
    train = [t.id for t in task_set.select(split="train", difficulty=difficulty)]
    chosen = sorted(stratified_sample(test, tests, seed=seed, key=lambda _: difficulty))
    dev_slice = sorted(stratified_sample(train, dev, seed=seed, key=lambda _: difficulty))
    rest = [t for t in train if t not in set(dev_slice)]
    return Plan(
        environment=environment,
        split="test",
        difficulty=difficulty,
        test_tasks=tuple(chosen),
        seed=seed,
        trials=trials,
        dev_tasks=tuple(dev_slice),
        train_tasks=tuple(rest),
        **settings,
    )


def full_plan() -> Plan:
    """The real run (issue 33): sql easy, 50 test tasks x 2 seeds = 100 held-out episodes per arm, a 20-task dev
    slice of train, Qwen2.5-Coder-0.5B-Instruct."""
    return draw_plan(environment="sql", difficulty="easy", tests=50, trials=2, dev=20, model="qwen2.5-coder-0.5b")


def toy_plan(*, ports: tuple[int, ...]) -> Plan:
    """The pipeline at toy scale (the CI test): SmolLM2-135M served with Qwen's tool template, 2 held-out
    episodes per arm, 4 reference solutions and one SFT step, one RL iteration of 2 episodes and one step."""
    plan = draw_plan(
        environment="sql",
        difficulty="easy",
        tests=2,
        trials=1,
        dev=2,
        model="smollm2-135m",
        serving=Serving(ports=ports, context=2048, chat_template="tests/support/qwen2_5_chat_template.jinja"),
        sampling=Sampling(temperature=0.7, max_tokens=24, max_turns=2, timeout=120.0),
        sft=Training(max_examples=1, max_length=1024),
        rl=Training(learning_rate=1e-4, max_examples=1, max_length=1024),
        rl_tasks=2,
        rl_min_reward=0.0,  # the toy model solves nothing: keep every sampled episode so the update path runs
    )
    return replace(plan, train_tasks=plan.train_tasks[:4])
