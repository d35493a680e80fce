"""TextWorld's tasks: seeded games over three difficulties, made by ``tw-make`` on first use.

Train and test games come from disjoint seeds (train from 1, test from 500,001, each difficulty its own block of
100,000), so no game is in both. The list needs no game made: a game is made when an episode (or the scripted
policy) first needs it. Reward: the game's score change over its maximum score, so winning totals 1.0.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp import Grade, Observation, TaskSet
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.servers.textworld.games import LEVELS, Level, ensure_game, ensure_game_now, folder, walkthrough
from openenv_mcp.servers.textworld.settings import TextWorldSettings
from openenv_mcp.settings import load_settings
from openenv_mcp.worlds import WorldBackend, WorldTask

__all__ = ["grade", "load_tasks", "prepare", "solve"]

_FIRST_SEED = {"train": 1, "test": 500_001}
_BY_NAME = {level.name: level for level in LEVELS}


def load_tasks() -> TaskSet:
    """``TEXTWORLD_TRAIN_GAMES`` and ``TEXTWORLD_TEST_GAMES`` games, a third of each per difficulty."""
    settings = load_settings(TextWorldSettings)
    tasks = []
    for split, count in (("train", settings.train_games), ("test", settings.test_games)):
        for number, level in enumerate(LEVELS):
            for index in range(count // len(LEVELS) + (number < count % len(LEVELS))):
                seed = _FIRST_SEED[split] + number * 100_000 + index
                name = f"tw-{level.name}-{seed}"
                tasks.append(
                    WorldTask(
                        id=name,
                        split=split,
                        prompt=f"TextWorld game {name}: {level.world_size} rooms, {level.objects} objects, a quest "
                        f"of {level.quest_length} steps (seed {seed}). Play it with one command at a time (act); "
                        "the game says what to do.",
                        difficulty=level.name,
                        env_id=str(folder(settings.games) / f"{name}.z8"),
                        params={"level": level.name, "seed": seed},
                    )
                )
    return TaskSet(tasks, default_split="train")


def _level(task: WorldTask) -> tuple[Level, int]:
    return _BY_NAME[str(task.params["level"])], int(task.params["seed"])


async def prepare(task: WorldTask, settings: TextWorldSettings) -> None:
    """Make the task's game if it is not made yet."""
    level, seed = _level(task)
    await ensure_game(settings.games, task.id, level, seed, timeout=settings.make_timeout)


def init_params(task: WorldTask, seed: int, settings: TextWorldSettings) -> dict[str, Any]:
    return {}  # the game file is the whole world: TextWorld takes nothing else at init


async def grade(task: WorldTask, world: WorldBackend, call: BoundCall, observation: Observation) -> Grade:
    """The score's change over the game's maximum score: a won game totals 1.0."""
    reply = world.last
    if observation.is_error or reply is None:
        return Grade()
    most = world.opening.extras.get("max_score") or 1
    return Grade(reward=reply.reward / float(most), done=reply.done)


def solve(task: WorldTask) -> list[tuple[str, dict[str, Any]]]:
    """The game's walkthrough (made with the game), as ``act`` calls; the game is made first if need be."""
    settings = load_settings(TextWorldSettings)
    level, seed = _level(task)
    game = ensure_game_now(settings.games, task.id, level, seed, timeout=settings.make_timeout)
    return [("act", {"action": command}) for command in walkthrough(game)]
