"""Tasks and the grade: what an episode is about, and the one place rewards are computed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from openenv_mcp import BoundCall, Grade, Observation, Task, TaskSet

from memory_env.backends import Note, SimNotebook

__all__ = ["NoteTask", "grade", "load_tasks", "score"]


@dataclass(frozen=True, slots=True)
class NoteTask(Task):
    """A task: the notes the episode starts with, notes that must end up containing some words, and notes that must go."""

    notes: list[dict[str, Any]] = field(default_factory=list)
    present: dict[str, list[str]] = field(default_factory=dict)
    absent: list[str] = field(default_factory=list)


def load_tasks() -> TaskSet:
    raw = json.loads(files("memory_env").joinpath("data/tasks.json").read_text(encoding="utf-8"))
    return TaskSet([NoteTask(**item) for item in raw])


def score(task: NoteTask, notebook: SimNotebook) -> float:
    """The fraction of the goal met: each required note with all its words, each unwanted note gone."""
    checks = []
    for title, words in task.present.items():
        note = notebook.notes.get(title)
        checks.append(note is not None and all(word.lower() in note.body.lower() for word in words))
    checks += [title not in notebook.notes for title in task.absent]
    return sum(checks) / len(checks) if checks else 1.0


async def grade(task: NoteTask, notebook: SimNotebook, call: BoundCall, observation: Observation) -> Grade:
    """Pay each step what it added to the score; the episode is done when the goal is met."""
    if notebook.last_score is None:
        notebook.last_score = score(task, SimNotebook([Note.model_validate(note) for note in task.notes]))
    now = score(task, notebook)
    reward, notebook.last_score = now - notebook.last_score, now
    return Grade(reward=round(reward, 6), done=now >= 1.0)
