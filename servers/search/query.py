"""The query language of the ``search`` tool, parsed once and rendered for each engine.

A query is plain words in any order, plus optional ``"quoted phrases"``. A document matches
if it contains any of the words or phrases; engines rank documents matching more of them,
and rarer ones, higher. Words are case-insensitive and stemmed by the engine. A token with
inner punctuation (``Kestrel-Motors``, ``4,812``) is a phrase of its parts. Common English
stop words (the list PostgreSQL's ``english`` configuration uses) are dropped outside phrases,
so both engines see the same terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openenv_mcp import ToolFailed

__all__ = ["STOP_WORDS", "ParsedQuery", "parse_query"]

STOP_WORDS = frozenset(
    str.split(
        """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
    it its itself they them their theirs themselves what which who whom this that these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until while of at by for with
    about against between into through during before after above below to from up down in out on off over under
    again further then once here there when where why how all any both each few more most other some such no nor not
    only own same so than too very s t can will just don should now
    """
    )
)

_PIECE = re.compile(r'"([^"]*)"?|([^\s"]+)')
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """The searchable terms of a query; each term is a word or a phrase (a tuple of words)."""

    text: str
    terms: tuple[tuple[str, ...], ...]

    def fts5(self) -> str:
        """An SQLite FTS5 MATCH expression: every term quoted (so no FTS5 syntax leaks in), OR-ed."""
        return " OR ".join('"' + " ".join(words) + '"' for words in self.terms)

    def websearch(self) -> str:
        """A PostgreSQL ``websearch_to_tsquery`` string: every term quoted, OR-ed."""
        return " or ".join('"' + " ".join(words) + '"' for words in self.terms)


def parse_query(text: str) -> ParsedQuery:
    """Parse what the agent typed; a query with nothing searchable is refused with the reason."""
    terms: list[tuple[str, ...]] = []
    for match in _PIECE.finditer(text):
        quoted, bare = match.groups()
        words = tuple(_WORD.findall((quoted if quoted is not None else bare).casefold()))
        if not words:
            continue
        if len(words) == 1 and words[0] in STOP_WORDS:
            continue
        if all(word in STOP_WORDS for word in words):
            continue
        if words not in terms:
            terms.append(words)
    if not terms:
        raise ToolFailed(
            f"The query {text!r} has no searchable words (only stop words like 'the' or 'who', or punctuation); "
            "search for names and keywords, e.g. 'Kestrel Motors founded'"
        )
    return ParsedQuery(text=text, terms=tuple(terms))
