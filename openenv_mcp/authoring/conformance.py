"""The conformance check every server passes (in the spirit of Gymnasium's ``check_env``).

    from openenv_mcp.authoring.conformance import check_environment
    check_environment(my_environment)   # raises ConformanceError listing every problem

It is :func:`openenv_mcp.authoring.validate.validate_environment` (what ``openenv-mcp validate``
runs) as an assertion: every finding of severity error, with its fix, in one exception.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import OpenEnvError

__all__ = ["ConformanceError", "check_environment"]


class ConformanceError(OpenEnvError):
    code = "not_conformant"


def check_environment(env: Environment[Any, Any]) -> None:
    """Run every check; raise :class:`ConformanceError` naming each problem found."""
    from openenv_mcp.authoring.validate import validate_environment

    report = validate_environment(env)
    errors = [f"{f.check}: {f.message}" for f in report.findings if f.severity == "error"]
    if errors:
        raise ConformanceError(f"{env.name}: " + "; ".join(errors) + "\n" + report.render())
