"""The page for people: play a sim episode in a browser (``/web``), or replay recorded ones.

A door like the others: the page calls the control plane (``/tasks``, ``/reset``, ``/step``,
``/state``) as any client does, so a person's calls take the one path, with its validation, grading,
metrics and recording. The page is three static files shipped in the package (no build step); its
assets are the only routes besides the probes that need no bearer token, since they hold no data
(the page asks for the token when a call answers 401). Sim mode only.
"""

from openenv_mcp.doors.web.pages import ASSETS, page, web_router
from openenv_mcp.doors.web.replay import replay_app

__all__ = ["ASSETS", "page", "replay_app", "web_router"]
