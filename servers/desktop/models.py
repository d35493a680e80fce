"""What the desktop tools return next to their screenshot (the image's structured metadata)."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["Acted", "ScreenInfo"]


class ScreenInfo(BaseModel):
    """The screenshot that comes with a result, and the screen it was taken of."""

    width: int = Field(description="Screen width in pixels: tools take x in 0..width-1")
    height: int = Field(description="Screen height in pixels: tools take y in 0..height-1")
    image_width: int = Field(description="Width of the attached image (smaller than the screen when scaled)")
    image_height: int = Field(description="Height of the attached image")
    mime_type: str = Field(description="image/png or image/jpeg")


class Acted(BaseModel):
    """What an action did, with the screen as it was once the application had handled it."""

    action: str = Field(description="The action, as performed, e.g. 'click left at (120, 48)'")
    settled: bool = Field(description="Whether the screen was known to be up to date when the image was taken")
    screen: ScreenInfo
