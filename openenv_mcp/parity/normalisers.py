"""What each environment's comparison forgives, and why: a normaliser maps a call's answer to the form compared.

Two answers are *identical* when the observations are equal as sent (content blocks, structured content, error
flag); *equivalent* when they differ but their normalised forms are equal; *different* otherwise. A normaliser
forgives only what an agent cannot act on differently; each one says what, in :attr:`Normaliser.forgives`.

Every normaliser forgives the wording of an error (both sides refused the call: the engines phrase it their own
way, and no task grades an error's text) and collapses runs of whitespace in text. The rest is per environment
(:data:`NORMALISERS`); an environment without one gets :data:`DEFAULT`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.models import Observation

__all__ = ["DEFAULT", "NORMALISERS", "Normaliser", "normaliser_for"]

Rule = Callable[[str, Mapping[str, Any], Any], Any]


@dataclass(frozen=True, slots=True)
class Normaliser:
    """A normal form of answers: the common rules, then ``rule(tool, arguments, structured)`` for the rest.

    Attributes:
        forgives: One line per difference forgiven, saying why (shown in the report and in docs/parity.md).
        rule: Maps a successful call's structured content (or text) further; the identity by default.
    """

    forgives: tuple[str, ...]
    rule: Rule = field(default=lambda tool, arguments, value: value)

    def __call__(self, tool: str, arguments: Mapping[str, Any], observation: Observation) -> Any:
        if observation.is_error:
            return {"error": True}
        value: Any = observation.structured_content
        if value is None:
            value = observation.text
        return self.rule(tool, arguments, _common(value))


def _common(value: Any) -> Any:
    """Whitespace runs collapsed in text; numbers as floats to 12 significant digits (so 2, 2.0 and a
    NUMERIC's 2.000000000000000001 agree)."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(f"{value:.12g}") if math.isfinite(value) else value
    if isinstance(value, list):
        return [_common(item) for item in value]
    if isinstance(value, dict):
        return {key: _common(item) for key, item in value.items()}
    return value


COMMON = (
    "the wording of an error: both sides refused the call, each engine phrases it its own way, and no task grades "
    "an error's text",
    "runs of whitespace in text, and the last digits of a number past 12 significant ones (2, 2.0 and a NUMERIC's "
    "2.000000000000000001 are one value to an agent)",
)

DEFAULT = Normaliser(forgives=COMMON)
"""The normaliser of an environment that has no rules of its own."""

_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def _sql(tool: str, arguments: Mapping[str, Any], value: Any) -> Any:
    """Row order when the query has no ORDER BY anywhere (SQL promises none; SQLite and PostgreSQL pick
    different plans); true and false as 1 and 0 (SQLite has no boolean type)."""
    if tool in ("run_query", "submit_answer") and isinstance(value, dict) and isinstance(value.get("rows"), list):
        rows = [[float(cell) if isinstance(cell, bool) else cell for cell in row] for row in value["rows"]]
        sql = str(arguments.get("sql") or "")
        value = {**value, "rows": rows if _ORDER_BY.search(sql) else sorted(rows, key=repr)}
    return value


_SENDS = ("send_email", "reply_email", "forward_email")


def _email(tool: str, arguments: Mapping[str, Any], value: Any) -> Any:
    """What a send stamps on its message: its Message-ID, its date, and the number of its copy in Sent."""
    if tool in _SENDS and isinstance(value, dict):
        value = {key: item for key, item in value.items() if key not in ("message_id", "date")}
        if isinstance(value.get("id"), str):
            value["id"] = value["id"].rpartition("/")[0] + "/#"
    return value


def _search(tool: str, arguments: Mapping[str, Any], value: Any) -> Any:
    """A hit's score and snippet: the ranked documents still count."""
    if tool == "search" and isinstance(value, dict) and isinstance(value.get("hits"), list):
        hits = [{k: v for k, v in hit.items() if k not in ("score", "snippet")} for hit in value["hits"]]
        value = {**value, "hits": hits}
    return value


NORMALISERS: dict[str, Normaliser] = {
    "search": Normaliser(
        forgives=(
            *COMMON,
            "a hit's score and snippet: BM25 (SQLite FTS5) and ts_rank_cd (PostgreSQL) or Sphinx's ranker score on "
            "scales of their own, and each engine cuts its own excerpt; which documents come back, in what order, "
            "still counts",
        ),
        rule=_search,
    ),
    "email": Normaliser(
        forgives=(
            *COMMON,
            "a sent message's Message-ID and date: the sim makes them from the episode's seed and its fixed clock "
            "(the mailbox's 'now', so an episode replays exactly); a real server makes a unique id and stamps the "
            "wall clock",
            "the number of a sent message's copy in Sent (Sent/8 against Sent/23): a sim episode starts from the "
            "shipped mailbox, while the prod Sent folder keeps every message sent before it (the run's earlier "
            "scripts included); the folder, recipients, subject, threading headers and attachments still count",
        ),
        rule=_email,
    ),
    "sql": Normaliser(
        forgives=(
            *COMMON,
            "the order of rows when the query has no ORDER BY: SQL promises no order then, and the two engines' "
            "plans differ (a truncated result can then hold other rows: that stays a difference)",
            "true and false against 1 and 0 in rows: SQLite has no boolean type, so a comparison (x > 1, x IS NULL, "
            "EXISTS) gives the integer 1 or 0 where PostgreSQL gives a boolean; an agent reads them alike",
        ),
        rule=_sql,
    ),
}
"""The shipped environments' normalisers, by environment name."""


def normaliser_for(name: str) -> Normaliser:
    """The normaliser of the environment called ``name`` (:data:`DEFAULT` when it has none of its own)."""
    return NORMALISERS.get(name, DEFAULT)
