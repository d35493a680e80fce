"""ORS, the Open Reward Standard: every sim-mode server also speaks its HTTP protocol.

ORS tasks and splits are the runtime's tasks, an ORS session is one of our episodes, and every
ORS tool call takes the one path (:meth:`~openenv_mcp.runtime.Runtime.call`). ``docs/ors.md``
has the route table and where the reference client departs from the written spec.
"""

from openenv_mcp.doors.ors.routes import ORS_ERRORS, ors_router

__all__ = ["ORS_ERRORS", "ors_router"]
