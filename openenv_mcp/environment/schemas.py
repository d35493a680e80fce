"""The input schema a tool advertises: what its arguments model checks, in the JSON Schema every client reads.

A tool's arguments are validated by its arguments model (:meth:`Toolbox.bind
<openenv_mcp.environment.tools.Toolbox.bind>`), never by the advertised schema, so the schema in ``tools/list`` can
leave out what agent frameworks' schema converters choke on without the server accepting anything more. Three
keywords go (checked against the real packages in ``tests/doors/test_frameworks.py``):

- ``additionalProperties: false``: google-genai's MCP adapter walks ``additionalProperties`` as a schema and
  crashes on the boolean (``AttributeError: 'bool' object has no attribute 'items'``), so a Gemini agent could
  load none of a server's tools. Unknown arguments are still refused, with the same message
  (``unexpected argument 'x'``): the model forbids extras.
- ``$schema``: MCP's default dialect (JSON Schema 2020-12) applies without it; google-genai's converter refuses
  the key (``extra_forbidden``).
- ``exclusiveMinimum`` / ``exclusiveMaximum``: advertised as ``minimum`` / ``maximum`` (google-genai's converter
  refuses them); the server still checks the strict bound (``Input should be greater than 0``).

Everything else (types, ``required``, lengths, patterns, ranges, enums, defaults, descriptions) is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["advertised"]

_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_VALUES = frozenset(
    {"items", "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "contains",
     "propertyNames", "not", "if", "then", "else"}
)  # fmt: skip
_CLOSED = frozenset({"additionalProperties", "unevaluatedProperties"})  # false: no other keys (left out)
_EXCLUSIVE = {"exclusiveMinimum": ("minimum", max), "exclusiveMaximum": ("maximum", min)}


def advertised(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without the keywords agent frameworks' converters reject (the module docstring says which)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$schema" or (key in _CLOSED and value is False):
            continue
        if key in _EXCLUSIVE and _number(value):
            inclusive, tighter = _EXCLUSIVE[key]
            out[inclusive] = tighter(value, schema[inclusive]) if _number(schema.get(inclusive)) else value
        elif key in ("minimum", "maximum") and _number(schema.get(f"exclusive{key.capitalize()}")):
            continue  # merged into the bound above
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: _sub(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_sub(sub) for sub in value]
        elif key in _SCHEMA_VALUES:
            out[key] = _sub(value)
        else:
            out[key] = value  # a keyword's own value (an enum, a default, a description): data, kept as it is
    return out


def _sub(schema: Any) -> Any:
    return advertised(schema) if isinstance(schema, Mapping) else schema  # a boolean schema stays as it is


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
