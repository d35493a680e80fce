"""The runtime: one environment bound to one mode, and the one path every door's call takes.

:class:`Runtime` (``runtime.py``) validates a call against the tool table, finds its episode, runs the tool on the
episode's backend, grades the step and counts it. Episodes (``episodes.py``) hold each sim instance's state; forks
and snapshots copy them; observers (the trajectory recorder) and metrics watch every step. Nothing here imports a
door: the doors (``openenv_mcp.doors``) import this. :func:`build_runtime` binds an environment to a mode and
``Runtime.run()`` serves it (the one lifecycle); every door keeps its sessions in ``runtime.sessions``
(``sessions.py``: the one binding of sessions to episodes).
"""

from openenv_mcp.runtime._gc import Collector
from openenv_mcp.runtime.episodes import Outcome
from openenv_mcp.runtime.runtime import DEFAULT_EPISODE, ForkVia, Runtime, build_runtime
from openenv_mcp.runtime.sessions import SessionKey, Sessions

__all__ = ["DEFAULT_EPISODE", "Collector", "ForkVia", "Outcome", "Runtime", "SessionKey", "Sessions", "build_runtime"]
