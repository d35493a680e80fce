"""The desktop environment: operate a real GUI application through the screen, keyboard and mouse.

Sim: a private Xvfb display per episode running a small Tk text editor (``editor.py``), with tasks
graded from the documents it saves and its window title. Prod: the X display in ``DESKTOP_DISPLAY``.
"""

from __future__ import annotations

from openenv_mcp import Environment, ProdService, TaskSet
from openenv_mcp.servers.desktop.backends import DesktopBackend, ProdDesktop, SimDesktop
from openenv_mcp.servers.desktop.declarations import declarations
from openenv_mcp.servers.desktop.generator import generate
from openenv_mcp.servers.desktop.settings import DesktopSettings
from openenv_mcp.servers.desktop.tasks import DesktopTask, grade, solve, written
from openenv_mcp.servers.desktop.tools import tools

__all__ = ["environment", "load_tasks"]


def load_tasks() -> TaskSet:
    """The hand-written tasks and the generated ones (``generator.py``), in train and test."""
    return TaskSet([*written(), *generate()])


environment: Environment[DesktopBackend, DesktopTask] = Environment(
    name="desktop",
    description=(
        "Operate a desktop application through the screen, keyboard and mouse: screenshot, key, type_text, "
        "click, move_mouse, drag, scroll. Every action returns a screenshot (MCP image content)."
    ),
    tools=tools,
    tasks=load_tasks,
    settings=DesktopSettings,
    sim_backend=SimDesktop.open,
    prod_backend=ProdDesktop.open,
    grade=grade,
    prod_requires=("display",),
    sim_summary="A private Xvfb display per episode running a Tk text editor; graded from saved files and the title",
    prod_services=(
        ProdService(
            name="x11",
            title="X11 display",
            role="the screen, keyboard and mouse the tools act on (XTEST input through libxdo, GetImage screenshots)",
            settings=(
                "display",
                "image_format",
                "jpeg_quality",
                "image_scale",
                "settle_timeout_ms",
                "type_delay_ms",
            ),
            tested="in CI against an Xvfb display the test starts, running the sim editor",
        ),
    ),
    solve=solve,
    examples=(
        ("screenshot", {}),
        ("move_mouse", {"x": 500, "y": 400}),
        ("key", {"keys": "ctrl+End"}),
        ("type_text", {"text": "hello"}),
    ),
    max_steps=30,
    declares=declarations,
)
