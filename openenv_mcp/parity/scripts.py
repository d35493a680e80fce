"""Where parity's calls come from: task references, recorded trajectories, and a seeded generator.

A :class:`Script` is a sequence of calls played in order, in one sim episode (opened on the script's task) and on
the prod backend, so a call that changes state (a sent email) is followed by the calls that see the change on both
sides.
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Task, stratified_sample
from openenv_mcp.errors import ConfigError

__all__ = ["SOURCES", "Script", "comparable", "from_random", "from_tasks", "from_trajectories"]

SOURCES = ("tasks", "trajectories", "random")
"""The sources of calls, in the order a report shows them."""

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Script:
    """Calls played in order on both sides.

    Attributes:
        source: ``tasks``, ``trajectories`` or ``random``.
        label: What the calls are (a task id, a trajectory id, ``random-3``).
        task_id: The task whose seeded state the sim episode starts from.
        calls: The calls, ``(tool, arguments)``.
        seed: The sim episode's seed (``None``: the run's).
    """

    source: str
    label: str
    task_id: str
    calls: list[Call]
    seed: int | None = None


def comparable(environment: Environment[Any, Any]) -> tuple[list[Task], str | None]:
    """The tasks whose seeded state the prod service holds (as the environment declares:
    :attr:`Parity.compared <openenv_mcp.environment.declarations.Parity.compared>`), and a note on the others
    (``None``: all are)."""
    tasks: list[Task] = list(environment.tasks())
    parity = environment.declares.parity
    if parity.compared is None:
        return tasks, None
    kept = [task for task in tasks if parity.compared(task)]
    left = len(tasks) - len(kept)
    return kept, (f"{left} of {len(tasks)} tasks not compared: {parity.not_compared}" if left else None)


def from_tasks(environment: Environment[Any, Any], *, sample: int | None, seed: int) -> list[Script]:
    """Each comparable task's reference solution (``Environment.solve``; see :func:`comparable`), for all of them
    or a seeded sample of ``sample`` covering every (split, difficulty) stratum first (as ``openenv-mcp tasks
    check`` draws)."""
    if environment.solve is None:
        raise ConfigError(f"{environment.name} has no reference solutions (Environment.solve) to compare")
    tasks, _ = comparable(environment)
    if sample is not None:
        tasks = stratified_sample(tasks, sample, seed=seed, key=lambda task: (task.split, task.difficulty or "-"))
    return [Script("tasks", task.id, task.id, list(environment.solve(task))) for task in tasks]


def from_trajectories(environment: Environment[Any, Any], url: str, *, limit: int | None = None) -> list[Script]:
    """The calls of the episodes a trajectory store (SQLAlchemy URL, or a path to a SQLite file) holds for this
    environment, each replayed from its recorded task."""
    from openenv_mcp.trajectories.store import EpisodeFilter, TrajectoryStore

    if "://" not in url:
        url = f"sqlite:///{url}"
    store = TrajectoryStore(url)
    known = {task.id for task in comparable(environment)[0]}
    scripts = []
    try:
        store.check_readable()
        for stored in store.read(EpisodeFilter(server=environment.name, min_steps=1)):
            task_id = str(stored.episode["task_id"])
            if task_id not in known:
                continue  # a task this version no longer has, or one whose state prod does not hold
            calls = [(str(step["tool"]), dict(step["arguments"])) for step in stored.steps]
            seed = int(stored.episode["seed"])
            scripts.append(Script("trajectories", str(stored.episode["id"]), task_id, calls, seed))
            if limit is not None and len(scripts) >= limit:
                break
    finally:
        store.close()
    return scripts


def from_random(
    environment: Environment[Any, Any], *, count: int, seed: int, length: int = 4, seen: Sequence[Script] = ()
) -> list[Script]:
    """``count`` scripts of ``length`` calls, each call to a tool drawn at random with arguments drawn from its
    input schema: an enum's members, numbers within their bounds, booleans, and for strings the values that the
    environment's examples and the other scripts passed to a parameter of that name (four times in five; else
    random letters), so most calls are meaningful and some are refused. Seeded: the same environment and seed give
    the same calls."""
    draw = random.Random(seed)
    pools = _pools([*environment.examples, *(call for script in seen for call in script.calls)])
    tools = list(environment.tools)
    tasks = sorted(task.id for task in comparable(environment)[0])
    scripts = []
    for number in range(count):
        calls = []
        for _ in range(length):
            tool = draw.choice(tools)
            calls.append((tool.name, _arguments(tool.input_schema, pools, draw)))
        scripts.append(Script("random", f"random-{number}", draw.choice(tasks), calls))
    return scripts


def _pools(calls: Sequence[Call]) -> dict[str, list[Any]]:
    """The strings passed to each parameter name, at any depth (``to: ["a@b"]`` and ``entities[].name`` too)."""
    pools: dict[str, set[str]] = {}

    def walk(name: str, value: Any) -> None:
        if isinstance(value, str):
            pools.setdefault(name, set()).add(value)
        elif isinstance(value, list):
            for item in value:
                walk(name, item)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(str(key), item)

    for _, arguments in calls:
        walk("", arguments)
    return {name: sorted(values) for name, values in pools.items()}


def _arguments(schema: Mapping[str, Any], pools: Mapping[str, list[Any]], draw: random.Random) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    chosen: dict[str, Any] = {}
    for name, spec in properties.items():
        if name in required or (name in pools and draw.random() < 0.5):
            value = _value(spec, name, pools, draw)
            if value is not None or name in required:
                chosen[name] = value
    return chosen


def _value(spec: Mapping[str, Any], name: str, pools: Mapping[str, list[Any]], draw: random.Random) -> Any:
    pool = pools.get(name, [])
    if "enum" in spec:
        return draw.choice(list(spec["enum"]))
    if "anyOf" in spec:
        options = [option for option in spec["anyOf"] if option.get("type") != "null"] or list(spec["anyOf"])
        return _value(draw.choice(options), name, pools, draw)
    kind = spec.get("type")
    if kind == "string":
        if pool and draw.random() < 0.8:  # mostly values known to mean something, sometimes junk
            return draw.choice(pool)
        size = max(int(spec.get("minLength", 1)), draw.randint(1, 12))
        return "".join(draw.choice(string.ascii_lowercase) for _ in range(min(size, int(spec.get("maxLength", size)))))
    if kind in ("integer", "number"):
        low = int(spec.get("minimum", spec.get("exclusiveMinimum", -1) + 1))
        high = int(spec.get("maximum", spec.get("exclusiveMaximum", low + 51) - 1))
        return draw.randint(low, max(low, high))
    if kind == "boolean":
        return draw.random() < 0.5
    if kind == "array":
        low = int(spec.get("minItems", 0))
        size = draw.randint(low, max(low, min(int(spec.get("maxItems", 3)), 3)))
        return [_value(spec.get("items", {}), name, pools, draw) for _ in range(size)]
    if kind == "object":
        return _arguments(spec, pools, draw)
    return None
