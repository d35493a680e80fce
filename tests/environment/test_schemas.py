"""The advertised input schema: what agent frameworks' converters take, while validation stays as strict."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from openenv_mcp.environment.catalog import load_environment
from openenv_mcp.environment.schemas import advertised
from openenv_mcp.environment.tools import Toolbox
from openenv_mcp.errors import InvalidToolArguments

SHIPPED = ["coding", "desktop", "email", "memory", "search", "sql"]  # memory: envs/memory, packaged as a third party


class Window(BaseModel):
    model_config = ConfigDict(extra="forbid")
    width: Annotated[int, Field(gt=0, lt=10_000)]


class Entity(TypedDict):
    name: str


def make() -> Toolbox[None]:
    box: Toolbox[None] = Toolbox("demo")

    @box.tool
    async def resize(backend: None, window: Window, timeout_s: Annotated[float, Field(gt=0, le=60)] = 5.0) -> int:
        """Resize."""
        return window.width

    @box.tool(input_schema={"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                            "properties": {"entities": {"type": "array", "items": {"type": "object"}}},
                            "required": ["entities"]})  # fmt: skip
    async def create(backend: None, entities: list[Entity]) -> int:
        """Create."""
        return len(entities)

    return box


def keywords(schema: Any) -> set[str]:
    """Every key anywhere in a schema (property names included: none of them is a keyword checked here)."""
    if isinstance(schema, dict):
        return set(schema) | {key for value in schema.values() for key in keywords(value)}
    if isinstance(schema, list):
        return {key for value in schema for key in keywords(value)}
    return set()


def test_the_advertised_schema_drops_what_converters_reject_and_keeps_the_rest() -> None:
    box = make()
    resize, create = box.get("resize"), box.get("create")
    assert {"additionalProperties", "exclusiveMinimum", "exclusiveMaximum"} <= keywords(resize.validation_schema)
    assert not {"additionalProperties", "exclusiveMinimum", "exclusiveMaximum", "$schema"} & keywords(
        resize.input_schema
    )
    timeout = resize.input_schema["properties"]["timeout_s"]
    assert (timeout["minimum"], timeout["maximum"], timeout["default"]) == (0, 60, 5.0)
    width = resize.input_schema["$defs"]["Window"]["properties"]["width"]
    assert (width["minimum"], width["maximum"]) == (0, 10_000)
    assert resize.input_schema["required"] == ["window"]
    assert "$schema" not in create.input_schema and create.input_schema["required"] == ["entities"]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"window": {"width": 3}, "bogus": 1}, "unexpected argument 'bogus'"),
        ({"window": {"width": 3, "depth": 1}}, "unexpected argument 'window.depth'"),
        ({"window": {"width": 0}}, "window.width: Input should be greater than 0"),
        ({"window": {"width": 3}, "timeout_s": 0}, "timeout_s: Input should be greater than 0"),
    ],
)
def test_validation_refuses_what_the_advertised_schema_no_longer_says(arguments: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidToolArguments, match=problem):
        make().bind("resize", arguments)


def test_keyword_names_used_as_property_names_or_values_are_kept() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"$schema": {"type": "string"}, "additionalProperties": {"type": "boolean", "default": False}},
        "examples": [{"additionalProperties": False}],
    }
    assert advertised(schema) == {
        "type": "object",
        "properties": {"$schema": {"type": "string"}, "additionalProperties": {"type": "boolean", "default": False}},
        "examples": [{"additionalProperties": False}],
    }
    assert advertised({"type": "number", "minimum": 1, "exclusiveMinimum": 2}) == {"type": "number", "minimum": 2}
    assert advertised({"type": "object", "additionalProperties": {"type": "string"}}) == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }


@pytest.mark.parametrize("name", SHIPPED)
def test_no_shipped_tool_advertises_a_keyword_a_framework_rejects(name: str) -> None:
    listed = json.dumps([tool["inputSchema"] for tool in load_environment(name).tools.listing()])
    for keyword in ("additionalProperties", "$schema", "exclusiveMinimum", "exclusiveMaximum"):
        assert f'"{keyword}"' not in listed, keyword
