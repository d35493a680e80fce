"""The one error for an exception out of an environment's own code (a bug), logged once under an incident id."""

from __future__ import annotations

import logging
import secrets

from openenv_mcp.errors import EnvironmentCrashed

__all__ = ["crashed"]

log = logging.getLogger("openenv_mcp.runtime")


def crashed(what: str, exc: Exception, consequence: str, *, detail: bool = True) -> EnvironmentCrashed:
    """The error for an exception that is not ours out of the environment's code (a bug): logged with its
    traceback here under an incident id, answered as one clear error at every door (raise it ``from exc``).

    ``detail=False`` (prod) leaves the exception's text out of the answer, keeping its type: a real service's
    error can hold host names, user names or data the caller must not see; the log has it, found by the id.
    """
    incident = secrets.token_hex(4)
    log.error("%s raised inside the server (incident %s)", what, incident, exc_info=exc)
    kind = f"{type(exc).__name__}: {exc}" if detail else type(exc).__name__
    return EnvironmentCrashed(
        f"{what} crashed inside the server ({kind}); {consequence}. This is a bug in the environment: its "
        f"traceback is in the server's log, incident {incident}"
    )
