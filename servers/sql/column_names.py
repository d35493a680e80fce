"""Result column names as PostgreSQL gives them, for the sim's SQLite results (parity: docs/parity.md).

SQLite names an unnamed result column by the text of its expression (``COUNT(*)``, ``SUM(oi.quantity *
oi.unit_price)``) and keeps an alias's case; PostgreSQL names it by what the expression is (PostgreSQL's
``FigureColname``):

- a column reference: the column's name (``c.name`` -> ``name``);
- a function call, aggregate or window function: the function's name (``count``, ``sum``, ``dense_rank``);
  ``CAST(x AS type)``: ``x``'s name if it has one, else the type's internal name (``int4``, ``numeric``...);
- ``CASE``, ``COALESCE``, ``NULLIF``, ``GREATEST``, ``LEAST``, ``EXISTS``: that word; a scalar subquery: the name
  of its one column;
- anything else (an operator, a literal): ``?column?``;

and an unquoted identifier (an alias included) folds to lower case, a double-quoted one keeps its case.
"""

from __future__ import annotations

import re

__all__ = ["postgres_column_name"]

UNNAMED = "?column?"

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*')
      | (?P<quoted>"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\])
      | (?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)
      | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
      | (?P<symbol>\|\||<=|>=|<>|!=|==|<<|>>|[-+*/%<>=(),.;~&|])
    )""",
    re.VERBOSE,
)
_WORDS = {"case", "coalesce", "nullif", "greatest", "least", "exists"}
_KEYWORDS = {"current_date", "current_time", "current_timestamp"}
_OPERATOR_WORDS = {"and", "or", "not", "is", "in", "like", "glob", "between", "collate", "escape", "match", "regexp"}
_TYPES = {
    "int": "int4", "integer": "int4", "smallint": "int2", "bigint": "int8", "real": "float4", "float": "float8",
    "double": "float8", "numeric": "numeric", "decimal": "numeric", "text": "text", "varchar": "varchar",
    "char": "bpchar", "date": "date", "timestamp": "timestamp", "boolean": "bool", "bool": "bool", "time": "time",
}  # fmt: skip


def _tokens(text: str) -> list[tuple[str, str]]:
    found, at = [], 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None or match.end() == at:
            if text[at:].strip():
                found.append(("symbol", text[at]))
                at += 1
                continue
            break
        kind = match.lastgroup or "symbol"
        found.append((kind, match.group(kind)))
        at = match.end()
    return found


def _identifier(kind: str, value: str) -> str:
    if kind == "quoted":
        return value[1:-1].replace('""', '"') if value[0] == '"' else value[1:-1]
    return value.lower()


def _top_level(tokens: list[tuple[str, str]]) -> list[tuple[int, tuple[str, str]]]:
    """The tokens outside every parenthesis, with their positions."""
    depth, found = 0, []
    for index, token in enumerate(tokens):
        if token == ("symbol", "("):
            depth += 1
        elif token == ("symbol", ")"):
            depth -= 1
        elif depth == 0:
            found.append((index, token))
    return found


def _closing(tokens: list[tuple[str, str]], opening: int) -> int:
    depth = 0
    for index in range(opening, len(tokens)):
        if tokens[index] == ("symbol", "("):
            depth += 1
        elif tokens[index] == ("symbol", ")"):
            depth -= 1
            if depth == 0:
                return index
    return len(tokens) - 1


def _name(tokens: list[tuple[str, str]]) -> str:
    while tokens and tokens[0] == ("symbol", "(") and _closing(tokens, 0) == len(tokens) - 1:
        tokens = tokens[1:-1]  # (expr) is expr
    if not tokens:
        return UNNAMED
    kind, value = tokens[0]
    lowered = value.lower()
    if kind == "word" and lowered == "select":
        return _subquery(tokens)
    if kind == "word" and lowered == "case":
        return _case(tokens)
    outside = _top_level(tokens)
    if any(k == "symbol" and v not in ".()" for _, (k, v) in outside[1:]) or (
        any(k == "word" and v.lower() in _OPERATOR_WORDS for _, (k, v) in outside)
    ):
        return UNNAMED  # an operator at the top: PostgreSQL has no name for it
    if kind in ("word", "quoted") and len(tokens) > 1 and tokens[1] == ("symbol", "("):
        if lowered == "cast":
            return _cast(tokens[2 : _closing(tokens, 1)])
        return lowered if kind == "word" else _identifier(kind, value)
    if kind in ("word", "quoted") and all(k in ("word", "quoted") or v == "." for k, v in tokens):
        last_kind, last = tokens[-1]
        if last_kind == "word" and last.lower() in _KEYWORDS and len(tokens) == 1:
            return last.lower()
        if last_kind == "word" and last.lower() in ("true", "false", "null") and len(tokens) == 1:
            return UNNAMED  # a literal
        return _identifier(last_kind, last)
    return UNNAMED


def _cast(inner: list[tuple[str, str]]) -> str:
    outside = _top_level(inner)
    split = next((i for i, (k, v) in reversed(outside) if k == "word" and v.lower() == "as"), None)
    if split is None:
        return UNNAMED
    named = _name(inner[:split])
    if named not in (UNNAMED, "case"):  # PostgreSQL prefers the type's name to a weak one
        return named
    type_word = inner[split + 1][1].lower() if split + 1 < len(inner) else ""
    return _TYPES.get(type_word, type_word or UNNAMED)


def _case(tokens: list[tuple[str, str]]) -> str:
    """``CASE``: its ELSE result's name when that is a column's or a function's, else ``case``."""
    outside = _top_level(tokens)
    depth_ok = [i for i, (k, v) in outside if k == "word" and v.lower() in ("else", "end")]
    if len(depth_ok) >= 2 and tokens[depth_ok[-2]][1].lower() == "else":
        named = _name(tokens[depth_ok[-2] + 1 : depth_ok[-1]])
        if named not in (UNNAMED, "case"):
            return named
    return "case"


def _subquery(tokens: list[tuple[str, str]]) -> str:
    """A scalar subquery's name: its first select item's alias, or that item's own name."""
    outside = _top_level(tokens)
    start = 1
    if len(tokens) > 1 and tokens[1][1].lower() in ("distinct", "all"):
        start = 2
    end = next(
        (i for i, (k, v) in outside if i >= start and (v == "," or (k == "word" and v.lower() == "from"))),
        len(tokens),
    )
    return _item_name(tokens[start:end])


def _item_name(item: list[tuple[str, str]]) -> str:
    """The name of one select item (expression and optional alias) given as tokens."""
    outside = _top_level(item)
    if len(outside) >= 2 and outside[-2][1][0] == "word" and outside[-2][1][1].lower() == "as":
        return _identifier(*outside[-1][1])
    return _name(item)


def postgres_column_name(sqlite_name: str, sql: str) -> str:
    """The name PostgreSQL gives the result column SQLite calls ``sqlite_name`` in the query ``sql``.

    SQLite's name is an alias as written, a column's name, or an unnamed expression's text. An identifier keeps its
    case only when ``sql`` writes it double-quoted (an alias ``AS "Total"``), as in PostgreSQL.
    """
    if '"' + sqlite_name.replace('"', '""') + '"' in sql:
        return sqlite_name  # a double-quoted alias or column keeps its case (and any character)
    tokens = _tokens(sqlite_name)
    if len(tokens) == 1 and tokens[0][0] == "word" and sqlite_name.lower() not in ("true", "false", "null"):
        return sqlite_name.lower()
    if not tokens or any(kind == "symbol" and value not in "()" for kind, value in tokens[:1]):
        return UNNAMED if tokens else sqlite_name
    return _name(tokens)
