"""The tools: declared once, served in both modes. The first parameter is the backend."""

from __future__ import annotations

from typing import Annotated

from openenv_mcp import Toolbox, ToolFailed
from pydantic import BaseModel, Field

from memory_env.backends import Notebook, Note

__all__ = ["tools"]

tools: Toolbox[Notebook] = Toolbox("memory")

Title = Annotated[str, Field(min_length=1, max_length=200)]


class NoteList(BaseModel):
    titles: list[str]


class Deleted(BaseModel):
    title: str
    deleted: bool


@tools.tool(title="List Notes", read_only=True, destructive=False, idempotent=True, open_world=False)
async def list_notes(notebook: Notebook) -> NoteList:
    """List the titles of every note, sorted."""
    return NoteList(titles=await notebook.titles())


@tools.tool(title="Read Note", read_only=True, destructive=False, idempotent=True, open_world=False)
async def read_note(notebook: Notebook, title: Title) -> Note:
    """Read one note.

    Args:
        title: The note's title, exactly as list_notes shows it.
    """
    note = await notebook.get(title)
    if note is None:
        raise ToolFailed(f"No note titled {title!r}; list_notes shows the titles")
    return note


@tools.tool(title="Write Note", read_only=False, destructive=True, idempotent=True, open_world=False)
async def write_note(
    notebook: Notebook, title: Title, body: Annotated[str, Field(max_length=10_000)], tags: list[str] | None = None
) -> Note:
    """Create a note, or replace the note with that title.

    Args:
        title: The note's title.
        body: The whole text of the note.
        tags: Optional labels.
    """
    note = Note(title=title, body=body, tags=sorted(set(tags or [])))
    await notebook.put(note)
    return note


@tools.tool(title="Delete Note", read_only=False, destructive=True, idempotent=True, open_world=False)
async def delete_note(notebook: Notebook, title: Title) -> Deleted:
    """Delete a note; deleting a note that does not exist changes nothing.

    Args:
        title: The note's title.
    """
    return Deleted(title=title, deleted=await notebook.delete(title))
