"""An MCP tool as a Python method and as the schema a trainer shows the model for it.

Trainers that take tools as Python callables (TRL's ``environment_factory``) build each tool's schema from the
method's signature and docstring (transformers' ``get_json_schema``). :func:`method_signature` writes that
signature and docstring from a tool's ``inputSchema``; :func:`trl_schema` is the schema they then render, so a
test can check it equals what the server declares, as far as type hints can say it; :func:`python_type` turns
one JSON Schema of a value into its type hint.
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Mapping
from typing import Any, Literal, Union

from openenv_mcp.errors import ConfigError

__all__ = ["method_signature", "python_type", "trl_schema"]

_SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def method_signature(server: str, tool: Mapping[str, Any]) -> tuple[inspect.Signature, str]:
    """The signature (``self`` then keyword-only parameters, typed) and Google docstring of a method for ``tool``."""
    name = str(tool["name"])
    where = f"tool {name!r} of server {server!r}"
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ConfigError(f"The {where} cannot be a method a trainer offers as a tool; rename the tool")
    schema = dict(tool.get("inputSchema") or {"type": "object", "properties": {}})
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    required = set(schema.get("required") or [])
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    lines = [str(tool.get("description") or name).strip(), "", "Args:"]
    for prop, prop_schema in properties.items():
        if not prop.isidentifier() or keyword.iskeyword(prop):
            raise ConfigError(f"Parameter {prop!r} of the {where} is not a Python name; rename it")
        hint = python_type(prop_schema, where=f"{where}, parameter {prop!r}")
        default = inspect.Parameter.empty if prop in required else prop_schema.get("default")
        parameters.append(inspect.Parameter(prop, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
        lines.append(f"    {prop}: {_one_line(prop_schema.get('description') or prop_schema.get('title') or prop)}")
    return inspect.Signature(parameters, return_annotation=str), "\n".join(lines if properties else lines[:1])


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def python_type(schema: Mapping[str, Any], *, where: str = "a schema") -> Any:
    """The Python type hint that says what ``schema`` (a JSON Schema of a value) says, as far as hints can."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    if "anyOf" in schema or "oneOf" in schema:
        options = [python_type(option, where=where) for option in schema.get("anyOf", schema.get("oneOf"))]
        return Union[tuple(options)]  # noqa: UP007 (built at run time from a list)
    kind = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(python_type({**schema, "type": k}, where=where) for k in kind)]  # noqa: UP007
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = schema.get("items")
        return list[python_type(items, where=where)] if isinstance(items, Mapping) else list  # type: ignore[misc]
    if kind == "object":
        extra = schema.get("additionalProperties")
        return dict[str, python_type(extra, where=where)] if isinstance(extra, Mapping) else dict  # type: ignore[misc]
    if kind is None:
        return Any
    raise ConfigError(f"The {where} has a JSON type {kind!r} that no Python type hint says")


def trl_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The schema TRL shows the model for an MCP tool (``tools/list`` entry): its ``inputSchema`` cut to what
    transformers' ``get_json_schema`` expresses (type, items, enum, nullable, anyOf, description, required)."""
    schema = dict(tool.get("inputSchema") or {"type": "object", "properties": {}})
    properties = {
        prop: {**_value_schema(value), "description": _one_line(value.get("description") or value.get("title") or prop)}
        for prop, value in (schema.get("properties") or {}).items()
    }
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    required = [prop for prop in properties if prop in set(schema.get("required") or [])]
    if required:
        parameters["required"] = required
    return {"name": str(tool["name"]), "description": str(tool.get("description") or tool["name"]).strip(),
            "parameters": parameters}  # fmt: skip


def _value_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    if "enum" in schema:
        values = list(schema["enum"])
        kinds = list(dict.fromkeys(_json_type(v) for v in values))
        return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}
    options = schema.get("anyOf") or schema.get("oneOf")
    if options is None and isinstance(schema.get("type"), list):
        options = [{**schema, "type": kind} for kind in schema["type"]]
    if options is not None:
        nullable = any(option.get("type") == "null" for option in options)
        rest = [_value_schema(option) for option in options if option.get("type") != "null"]
        if len(rest) == 1:
            merged = rest[0]
        elif all(set(option) == {"type"} and isinstance(option["type"], str) for option in rest):
            kinds = sorted({option["type"] for option in rest})
            merged = {"type": kinds[0] if len(kinds) == 1 else kinds}
        else:
            merged = {"anyOf": rest}
        return {**merged, "nullable": True} if nullable else merged
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return {"type": "array", "items": _value_schema(items)} if isinstance(items, Mapping) else {"type": "array"}
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return {"type": "object", "additionalProperties": _value_schema(extra)}
        return {"type": "object"}
    return {} if kind is None else {"type": kind}


def _json_type(value: Any) -> str:
    for kind, python in _SCALARS.items():
        if type(value) is python:
            return kind
    raise ConfigError(f"An enum value {value!r} is not a JSON scalar")
