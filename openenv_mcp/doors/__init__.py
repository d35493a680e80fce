"""The doors: every protocol a server speaks, each a thin translation onto the runtime's one path.

- ``http.py``: the ASGI app (control plane and ``/mcp`` on one port), composed of ``health.py`` (both modes),
  ``episodes.py`` (sim), the other doors and the one error mapping; ``serving.py`` runs it under uvicorn.
- ``mcp.py``: the MCP door, the only module that imports the ``mcp`` SDK; ``mcp_mount.py`` mounts it at ``/mcp``.
- ``websocket.py``: ``/ws``; ``openenv.py``: OpenEnv's wire protocol; ``ors/``: the Open Reward Standard;
  ``web/``: the page for people.
- ``guard.py`` and ``body_limit.py``: what every request passes before any route.
"""
