"""Tools that return pictures: ``-> Image[Meta]`` renders an image block plus ``Meta`` as structured content."""

from __future__ import annotations

import base64

import pytest
from pydantic import BaseModel

from openenv_mcp import Toolbox
from openenv_mcp.doors.mcp import _to_mcp
from openenv_mcp.environment.tools import Image
from openenv_mcp.models import ImageBlock, TextBlock

PIXEL = bytes.fromhex("89504e470d0a1a0a")  # a PNG signature is enough: the toolkit never decodes images


class Frame(BaseModel):
    width: int
    height: int


def make() -> Toolbox[None]:
    box: Toolbox[None] = Toolbox("pictures")

    @box.tool(read_only=True)
    async def snap(backend: None, width: int = 4) -> Image[Frame]:
        """Take a picture.

        Args:
            width: Its width.
        """
        return Image(data=PIXEL, mime_type="image/png", metadata=Frame(width=width, height=2))

    @box.tool
    async def bare(backend: None) -> Image[None]:
        """A picture with no metadata."""
        return Image(data=PIXEL, mime_type="image/jpeg", metadata=None)

    @box.tool
    async def liar(backend: None) -> Image[Frame]:
        """Declares a picture, returns a frame."""
        return Frame(width=1, height=1)  # type: ignore[return-value]

    return box


def test_the_output_schema_describes_the_metadata() -> None:
    box = make()
    schema = box.get("snap").output_schema
    assert schema["type"] == "object" and set(schema["properties"]) == {"width", "height"}
    assert box.get("bare").output_schema == {
        "type": "object",
        "properties": {"result": {"type": "null"}},
        "required": ["result"],
    }


@pytest.mark.anyio
async def test_an_image_result_renders_an_image_block_then_the_metadata() -> None:
    observation = await make().bind("snap", {"width": 7}).run(None)
    image, text = observation.content
    assert isinstance(image, ImageBlock) and isinstance(text, TextBlock)
    assert base64.b64decode(image.data) == PIXEL and image.mime_type == "image/png"
    assert observation.structured_content == {"width": 7, "height": 2}
    assert text.text == '{"width":7,"height":2}'
    assert observation.model_dump(mode="json")["content"][0] == {
        "type": "image",
        "data": base64.b64encode(PIXEL).decode(),
        "mimeType": "image/png",
    }


@pytest.mark.anyio
async def test_metadata_that_is_not_an_object_is_wrapped_like_any_result() -> None:
    observation = await make().bind("bare", {}).run(None)
    assert [block.type for block in observation.content] == ["image", "text"]
    assert observation.structured_content == {"result": None}


@pytest.mark.anyio
async def test_the_mcp_door_turns_it_into_image_content() -> None:
    result = _to_mcp(await make().bind("snap", {}).run(None), None)
    assert [block.type for block in result.content] == ["image", "text"]
    assert result.content[0].mime_type == "image/png"  # type: ignore[union-attr]
    assert result.structured_content == {"width": 4, "height": 2}


@pytest.mark.anyio
async def test_returning_something_else_than_the_declared_image_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="declared to return an Image, got Frame"):
        await make().bind("liar", {}).run(None)


def test_an_image_without_its_metadata_type_is_refused_with_the_fix() -> None:
    box: Toolbox[None] = Toolbox("pictures")
    with pytest.raises(TypeError, match=r"e.g. '-> Image\[ScreenInfo\]'"):

        @box.tool
        async def vague(backend: None) -> Image:  # type: ignore[type-arg]
            """No metadata type."""
            return Image(data=PIXEL, mime_type="image/png", metadata=None)
