"""Settings of the desktop server (``DESKTOP_*`` variables)."""

from __future__ import annotations

import sys
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["DesktopSettings"]


class DesktopSettings(BaseSettings):
    """``DESKTOP_DISPLAY`` is required in prod; the rest have defaults in both modes."""

    model_config = SettingsConfigDict(env_prefix="DESKTOP_", extra="ignore")

    display: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9.\-]*:\d+(\.\d+)?$",
        description="The X display prod attaches to, e.g. :0 (a cookie, if needed, comes from XAUTHORITY)",
    )
    screen_width: int = Field(default=1024, ge=320, le=3840, description="Width of each sim episode's virtual screen")
    screen_height: int = Field(default=768, ge=240, le=2160, description="Height of each sim episode's virtual screen")
    image_format: Literal["png", "jpeg"] = Field(default="png", description="Screenshot encoding: png or jpeg")
    jpeg_quality: int = Field(default=75, ge=1, le=95, description="JPEG quality of screenshots (1-95)")
    image_scale: float = Field(
        default=1.0,
        gt=0.0,
        le=1.0,
        description="Screenshots are resized by this factor (coordinates stay in screen pixels)",
    )
    settle_timeout_ms: int = Field(
        default=1_000, ge=0, le=30_000, description="Longest wait for the screen to settle after an action"
    )
    type_delay_ms: int = Field(default=2, ge=0, le=200, description="Delay between typed characters")
    startup_timeout: float = Field(
        default=20.0, gt=0, le=300, description="Seconds a sim episode's display and editor may take to start"
    )
    editor_memory_mb: int = Field(
        default=512, ge=128, le=65_536, description="Address space each sim editor may use, in MiB (RLIMIT_AS)"
    )
    display_memory_mb: int = Field(
        default=512, ge=256, le=65_536, description="Address space each sim Xvfb server may use, in MiB (RLIMIT_AS)"
    )
    max_document_chars: int = Field(
        default=1_000_000,
        ge=10_000,
        le=100_000_000,
        description="The most characters a sim editor document may hold; typing or pasting past it is refused",
    )
    editor_python: str = Field(
        default_factory=lambda: sys.executable,
        description="The Python that runs the sim editor; it needs tkinter (e.g. /usr/bin/python3 with python3-tk)",
    )
