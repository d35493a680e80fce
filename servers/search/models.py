"""What the search tools take and return: the same shapes in sim and prod."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["Category", "CollectionInfo", "Document", "Hit", "SearchResults", "SubmittedAnswer"]

Category = Literal["person", "place", "organization", "product", "event", "news"]
"""The kinds of document in the shipped corpus (the ``category`` filter of ``search``)."""


class CollectionInfo(BaseModel):
    """What the collection holds: how many documents of each kind, and the dates they span."""

    documents: int
    categories: dict[str, int] = Field(description="Documents per category (the search tool's category filter)")
    first_date: dt.date | None = Field(description="The earliest document date")
    last_date: dt.date | None = Field(description="The latest document date")


class Hit(BaseModel):
    """One search result."""

    doc_id: str = Field(description="Pass it to fetch to read the whole document")
    title: str
    category: str
    date: dt.date = Field(description="Publication date for news, date of the last revision for articles")
    score: float = Field(description="Relevance; higher is better, comparable only within one result list")
    snippet: str = Field(description="A passage of the text with the matched words in **bold**")


class SearchResults(BaseModel):
    """The best-matching documents, best first."""

    query: str
    hits: list[Hit]


class Document(BaseModel):
    """A whole document."""

    doc_id: str
    title: str
    category: str
    date: dt.date
    text: str


class SubmittedAnswer(BaseModel):
    """The answer as the environment received it."""

    answer: str
