"""A lexical guard: one statement, and one that starts as a read.

It is the first of three fences (the engine-level read-only mode and a role with SELECT only
are the others); it exists to give the agent a clear message before the database does.
"""

from __future__ import annotations

import re

from openenv_mcp.errors import ToolFailed

__all__ = ["single_read_statement"]

_READS = ("SELECT", "WITH", "VALUES")
_FIRST_WORD = re.compile(r"[A-Za-z]+")


def single_read_statement(sql: str) -> str:
    """Return ``sql`` without trailing semicolons; raise :class:`ToolFailed` unless it is one read query."""
    code, end = _scan(sql)
    if code[end:].strip(" \t\r\n;"):
        raise ToolFailed("Only one SQL statement per call: remove the ';' and run the statements one by one")
    word = _FIRST_WORD.search(code.lstrip(" \t\r\n("))
    first = word.group(0).upper() if word and code.lstrip(" \t\r\n(").startswith(word.group(0)) else ""
    if first not in _READS:
        shown = first or "(nothing)"
        raise ToolFailed(f"Only read-only queries are allowed (SELECT, WITH or VALUES), not {shown}")
    return sql[:end].strip()


def _scan(sql: str) -> tuple[str, int]:
    """Blank out comments and quoted text; return the blanked text and where the first ';' stands."""
    out: list[str] = []
    i, n = 0, len(sql)
    first_semicolon = n
    while i < n:
        ch = sql[i]
        if ch == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif ch == "/" and sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " * (j - i))
            i = j
        elif ch in "'\"`":
            j = i + 1
            while j < n:
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            j = min(j + 1, n)
            out.append(ch + " " * (j - i - 2) + ch if j - i >= 2 else ch)
            i = j
        elif ch == "$" and (tag := re.match(r"\$[A-Za-z_]*\$", sql[i:])):
            close = sql.find(tag.group(0), i + len(tag.group(0)))
            j = n if close < 0 else close + len(tag.group(0))
            out.append(" " * (j - i))
            i = j
        else:
            if ch == ";" and first_semicolon == n:
                first_semicolon = i
            out.append(ch)
            i += 1
    return "".join(out), first_semicolon
