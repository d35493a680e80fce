"""The tool decorator: signature and docstring become the schema; misuse fails at import with the fix."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from openenv_mcp import InvalidToolArguments, Toolbox, ToolFailed, ToolNotFound


class Point(BaseModel):
    x: int
    y: int


def make() -> Toolbox[dict[str, int]]:
    box: Toolbox[dict[str, int]] = Toolbox("demo")

    @box.tool(read_only=True)
    async def move(state: dict[str, int], dx: Annotated[int, Field(ge=-5, le=5)], label: str = "p") -> Point:
        """Move the point.

        Args:
            dx: How far to move along x,
                between -5 and 5.
            label: A name for the move.
        """
        state["x"] += dx
        return Point(x=state["x"], y=0)

    @box.tool
    async def count(state: dict[str, int]) -> int:
        """Count."""
        if state["x"] < 0:
            raise ToolFailed("x went negative; move right first")
        return state["x"]

    return box


def test_signature_and_docstring_become_the_input_schema() -> None:
    tool = make().get("move")
    assert tool.description == "Move the point."
    assert tool.input_schema["required"] == ["dx"]
    dx = tool.input_schema["properties"]["dx"]
    assert (dx["type"], dx["minimum"], dx["maximum"]) == ("integer", -5, 5)
    assert dx["description"] == "How far to move along x, between -5 and 5."
    assert tool.input_schema["properties"]["label"]["default"] == "p"
    assert "additionalProperties" not in tool.input_schema  # advertised without it; extras are still refused:
    assert tool.validation_schema["additionalProperties"] is False
    assert tool.annotations == {"readOnlyHint": True}


def test_object_returns_are_the_output_schema_and_scalars_are_wrapped() -> None:
    box = make()
    assert box.get("move").output_schema["properties"].keys() == {"x", "y"}
    assert box.get("count").output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }


def test_wrapped_lists_of_models_keep_their_definitions_at_the_root() -> None:
    box: Toolbox[None] = Toolbox("demo")

    @box.tool
    async def points(backend: None) -> list[Point]:
        """Points."""
        return [Point(x=1, y=2)]

    schema = box.get("points").output_schema
    assert schema["properties"]["result"]["items"] == {"$ref": "#/$defs/Point"}
    assert set(schema["$defs"]["Point"]["properties"]) == {"x", "y"}


@pytest.mark.anyio
async def test_bound_call_runs_with_backend_and_renders_structured_content() -> None:
    state = {"x": 1}
    observation = await make().bind("move", {"dx": 2}).run(state)
    assert observation.structured_content == {"x": 3, "y": 0}
    assert observation.text == '{"x":3,"y":0}'
    assert (await make().bind("count", None).run(state)).structured_content == {"result": 3}


@pytest.mark.anyio
async def test_tool_failed_becomes_an_error_result() -> None:
    observation = await make().bind("count", {}).run({"x": -1})
    assert observation.is_error and observation.text == "x went negative; move right first"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"dx": 9}, "dx: Input should be less than or equal to 5"),
        ({"dx": "left"}, "dx: Input should be a valid integer"),
        ({}, "missing required argument 'dx'"),
        ({"dx": 1, "dy": 2}, "unexpected argument 'dy'"),
    ],
)
def test_invalid_arguments_say_what_is_wrong(arguments: dict[str, object], expected: str) -> None:
    with pytest.raises(InvalidToolArguments, match=expected):
        make().bind("move", arguments)


def test_non_object_arguments_are_rejected() -> None:
    with pytest.raises(InvalidToolArguments, match="must be a JSON object"):
        make().bind("move", [1, 2])  # type: ignore[arg-type]


def test_unknown_tool_names_the_available_ones() -> None:
    with pytest.raises(ToolNotFound, match="No tool 'jump' on server 'demo'; available: count, move"):
        make().get("jump")


def test_sync_function_is_refused_with_the_fix() -> None:
    box: Toolbox[None] = Toolbox("demo")
    with pytest.raises(TypeError, match="must be declared with 'async def'"):

        @box.tool
        def sync(backend: None) -> int:  # type: ignore[type-var]
            """Sync."""
            return 1


def test_missing_docstring_annotation_or_backend_are_refused() -> None:
    box: Toolbox[None] = Toolbox("demo")
    with pytest.raises(TypeError, match="needs a docstring"):

        @box.tool
        async def nodoc(backend: None) -> int:
            return 1

    with pytest.raises(TypeError, match="parameter 'x' needs a type annotation"):

        @box.tool
        async def untyped(backend: None, x) -> int:  # type: ignore[no-untyped-def]
            """Untyped."""
            return 1

    with pytest.raises(TypeError, match="needs a return annotation"):

        @box.tool
        async def noreturn(backend: None, x: int):  # type: ignore[no-untyped-def]
            """No return."""

    with pytest.raises(TypeError, match="must take its backend as the first parameter"):

        @box.tool
        async def nobackend() -> int:
            """No backend."""
            return 1

    with pytest.raises(TypeError, match="no \\*args"):

        @box.tool
        async def star(backend: None, *names: str) -> int:
            """Star."""
            return 1


def test_duplicate_tool_names_are_refused() -> None:
    box = make()
    with pytest.raises(TypeError, match="declared twice"):

        @box.tool(name="move")
        async def other(state: dict[str, int]) -> int:
            """Other."""
            return 0


def test_title_and_every_hint_reach_the_tool() -> None:
    tools: Toolbox[object] = Toolbox("t")

    @tools.tool(title="Look Up", read_only=True, destructive=False, idempotent=True, open_world=False)
    async def look_up(backend: object, key: str) -> str:
        """Look a key up."""
        return key

    tool = tools.get("look_up")
    assert tool.title == "Look Up"
    assert tool.annotations == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }


def test_a_declared_input_schema_is_advertised_and_must_match_the_parameters() -> None:
    tools: Toolbox[object] = Toolbox("t")
    schema = {
        "type": "object",
        "properties": {"key": {"type": "string", "description": "The key"}},
        "required": ["key"],
    }

    @tools.tool(input_schema=schema)
    async def look_up(backend: object, key: str) -> str:
        """Look a key up."""
        return key

    assert tools.get("look_up").input_schema == schema
    with pytest.raises(InvalidToolArguments):  # validation still follows the signature
        tools.bind("look_up", {"key": 3})
    with pytest.raises(TypeError, match=r"input_schema has properties \['key'\] but the function takes \['name'\]"):

        @tools.tool(input_schema=schema)
        async def other(backend: object, name: str) -> str:
            """Another."""
            return name

    with pytest.raises(TypeError, match=r"input_schema requires \[\] but"):

        @tools.tool(input_schema={"type": "object", "properties": {"key": {"type": "string"}}})
        async def third(backend: object, key: str) -> str:
            """A third."""
            return key
