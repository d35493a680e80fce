"""What desktop declares for the toolkit: its image with the display stack, the host's X server in prod, and why a
recorded prod session is not mined."""

from __future__ import annotations

from openenv_mcp.environment.declarations import ContainerNeeds, Declarations, Mining

__all__ = ["declarations"]

declarations = Declarations(
    mining=Mining(
        why_not="a desktop task is graded from the documents the editor saves and its window title in a display the "
        "sim starts; a prod session drives someone's real screen, whose applications and files a recording of "
        "screenshots, keys and clicks does not hold"
    ),
    # Prod attaches to the host's X server: its sockets, and its cookie file when XAUTHORITY is set (else an empty
    # file: a server without access control needs none).
    container=ContainerNeeds(
        target="display",
        mount_environment={"XAUTHORITY": "/run/openenv/Xauthority"},
        prod_mounts=(
            "${OPENENV_X11_SOCKETS:-/tmp/.X11-unix}:/tmp/.X11-unix:ro",
            "${XAUTHORITY:-/dev/null}:/run/openenv/Xauthority:ro",
        ),
    ),
)
"""desktop's declarations (``Environment.declares``)."""
