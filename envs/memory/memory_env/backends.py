"""The notebook behind the tools: one protocol, a sim and a prod implementation.

Sim: a dict per episode, seeded from the task (and distractor notes drawn from the seed).
Prod: a SQLite database file, shared by every caller.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
from pathlib import Path
from typing import Any, Protocol

import anyio
from openenv_mcp import BackendUnavailable, ConfigError
from pydantic import BaseModel

__all__ = ["Note", "Notebook", "SimNotebook", "SqliteNotebook", "open_prod", "open_sim"]


class Note(BaseModel):
    title: str
    body: str
    tags: list[str] = []


class Notebook(Protocol):
    async def titles(self) -> list[str]: ...
    async def get(self, title: str) -> Note | None: ...
    async def put(self, note: Note) -> None: ...
    async def delete(self, title: str) -> bool: ...
    async def ping(self) -> None: ...
    async def aclose(self) -> None: ...


class SimNotebook:
    """An in-memory notebook: one per episode, nothing shared."""

    def __init__(self, notes: list[Note]) -> None:
        self.notes = {note.title: note for note in notes}
        self.last_score: float | None = None  # the grade's memory: the score after the previous step

    async def titles(self) -> list[str]:
        return sorted(self.notes)

    async def get(self, title: str) -> Note | None:
        return self.notes.get(title)

    async def put(self, note: Note) -> None:
        self.notes[note.title] = note

    async def delete(self, title: str) -> bool:
        return self.notes.pop(title, None) is not None

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        self.notes.clear()


class SqliteNotebook:
    """Notes in the ``notes`` table of a SQLite file; queries run in a worker thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, check_same_thread=False)
            self._db.execute("CREATE TABLE IF NOT EXISTS notes (title TEXT PRIMARY KEY, body TEXT, tags TEXT)")
            self._db.commit()
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"SQLite file {path!r}: {exc}") from None

    async def _run(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        def run() -> list[tuple[Any, ...]]:
            with self._lock:
                rows = self._db.execute(sql, params).fetchall()
                self._db.commit()
                return rows

        try:
            return await anyio.to_thread.run_sync(run)
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"SQLite file {self.path!r}: {exc}") from None

    async def titles(self) -> list[str]:
        return [row[0] for row in await self._run("SELECT title FROM notes ORDER BY title")]

    async def get(self, title: str) -> Note | None:
        rows = await self._run("SELECT title, body, tags FROM notes WHERE title = ?", title)
        return Note(title=rows[0][0], body=rows[0][1], tags=json.loads(rows[0][2])) if rows else None

    async def put(self, note: Note) -> None:
        await self._run("INSERT OR REPLACE INTO notes VALUES (?, ?, ?)", note.title, note.body, json.dumps(note.tags))

    async def delete(self, title: str) -> bool:
        return bool(await self._run("DELETE FROM notes WHERE title = ? RETURNING title", title))

    async def ping(self) -> None:
        await self._run("SELECT 1")

    async def aclose(self) -> None:
        self._db.close()


_DISTRACTORS = ["groceries", "books to read", "gym plan", "recipes", "travel", "birthdays", "passwords hint"]


async def open_sim(task: Any, seed: int, settings: Any) -> SimNotebook:
    """A fresh notebook for one episode: the task's notes plus distractors drawn from ``seed``."""
    rng = random.Random(seed)
    notes = [Note.model_validate(note) for note in task.notes]
    taken = {note.title for note in notes} | set(task.absent) | set(task.present)
    for title in rng.sample(_DISTRACTORS, k=min(settings.distractors, len(_DISTRACTORS))):
        if title not in taken:
            notes.append(Note(title=title, body=f"{title}: item {rng.randint(1, 99)}", tags=["misc"]))
    return SimNotebook(notes)


async def open_prod(settings: Any) -> SqliteNotebook:
    """The shared notebook: the SQLite file named by the settings (created when missing)."""
    if not settings.database:
        raise ConfigError("MemorySettings: set MEMORY_DATABASE (the SQLite file that holds the notes)")
    Path(settings.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return SqliteNotebook(str(Path(settings.database).expanduser()))
