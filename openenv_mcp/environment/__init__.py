"""The authoring contract: what an environment's author declares, and how servers are found.

- ``spec.py``: :class:`Environment` (tools, tasks, backends per mode, grading) and its production services.
- ``tools.py``: tools declared decorator-first; a :class:`Toolbox` is the one tool table every door lists and calls.
- ``tasks.py``: tasks, task sets in splits, and the :class:`Grade` a step earns.
- ``declarations.py``: what an environment declares for the toolkit beyond its tools (``Environment.declares``):
  parity's normaliser and stage, mining, container and cluster needs.
- ``catalog.py``: the installed servers (the ``openenv_mcp.servers`` entry point).
"""
