"""The search tools: search the collection, fetch a document, submit an answer. The same in sim and prod."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field

from openenv_mcp import Toolbox, ToolFailed
from openenv_mcp.servers.search.backends import SearchBackend
from openenv_mcp.servers.search.models import Category, CollectionInfo, Document, SearchResults, SubmittedAnswer
from openenv_mcp.servers.search.query import parse_query

__all__ = ["MAX_K", "tools"]

MAX_K = 50

tools: Toolbox[SearchBackend] = Toolbox("search")


@tools.tool(title="Collection Info", read_only=True, destructive=False, idempotent=True, open_world=False)
async def collection_info(index: SearchBackend) -> CollectionInfo:
    """Describe the document collection: how many documents of each category, and the dates they span."""
    return await index.info()


@tools.tool(title="Search Documents", read_only=True, destructive=False, idempotent=True, open_world=False)
async def search(
    index: SearchBackend,
    query: Annotated[str, Field(min_length=1, max_length=500)],
    k: Annotated[int, Field(ge=1, le=MAX_K)] = 10,
    category: Category | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> SearchResults:
    """Search the document collection (an encyclopedia and a news archive); the best matches come first.

    Words may come in any order: documents containing more of them, and rarer ones, rank higher, and words
    are matched in all their forms ('founded' also finds 'founding'). Put words in "double quotes" to match
    them side by side. Each hit has a snippet with the matched words in **bold**; fetch a hit's doc_id to
    read the whole document.

    Args:
        query: Keywords, e.g. 'Kestrel Motors headquarters' or '"Treaty of Velmora" signed'.
        k: How many hits to return, from 1 to 50.
        category: Only documents of this kind.
        date_from: Only documents dated on or after this day (YYYY-MM-DD). News is dated by publication,
            articles by their last revision.
        date_to: Only documents dated on or before this day (YYYY-MM-DD).
    """
    if date_from is not None and date_to is not None and date_from > date_to:
        raise ToolFailed(f"date_from ({date_from}) is after date_to ({date_to}); swap them or drop one")
    hits = await index.search(parse_query(query), k=k, category=category, date_from=date_from, date_to=date_to)
    return SearchResults(query=query, hits=hits)


@tools.tool(title="Fetch Document", read_only=True, destructive=False, idempotent=True, open_world=False)
async def fetch(index: SearchBackend, doc_id: Annotated[str, Field(min_length=1, max_length=200)]) -> Document:
    """Read a whole document: its title, category, date and full text.

    Args:
        doc_id: The doc_id of a search hit, e.g. 'doc-0042'.
    """
    return await index.fetch(doc_id.strip())


@tools.tool(title="Submit Answer", read_only=True, destructive=False, idempotent=False, open_world=False)
async def submit_answer(
    index: SearchBackend, answer: Annotated[str, Field(min_length=1, max_length=500)]
) -> SubmittedAnswer:
    """Submit the final answer to the question; this ends the task.

    Give only the answer, e.g. 'Velmora' or '1912', not a sentence around it.

    Args:
        answer: The answer: a name, a number or a year.
    """
    cleaned = " ".join(answer.split())
    if not cleaned:
        raise ToolFailed("The answer is blank; submit the answer itself, e.g. a name, a number or a year")
    return SubmittedAnswer(answer=cleaned)
