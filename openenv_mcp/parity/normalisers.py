"""What each environment's comparison forgives: the normaliser it declares (``Environment.declares.parity``).

Two answers are *identical* when the observations are equal as sent (content blocks, structured content, error
flag); *equivalent* when they differ but their normalised forms are equal; *different* otherwise. A normaliser
forgives only what an agent cannot act on differently; each one says what, in :attr:`Normaliser.forgives`.

Every normaliser forgives the wording of an error and collapses runs of whitespace in text (:data:`COMMON`); the
rest is the environment's own, declared in its package (:class:`~openenv_mcp.environment.declarations.Parity`).
The types live in :mod:`openenv_mcp.environment.declarations`; they are re-exported here, where they always were.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.environment.catalog import load_environment
from openenv_mcp.environment.declarations import COMMON, DEFAULT, Normaliser, Rule
from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import ConfigError

__all__ = ["COMMON", "DEFAULT", "Normaliser", "Rule", "normaliser_for"]


def normaliser_for(environment: Environment[Any, Any] | str) -> Normaliser:
    """The normaliser ``environment`` declares (given, or installed under that name); :data:`DEFAULT` when it
    declares none, or no server of that name is installed."""
    if isinstance(environment, str):
        try:
            environment = load_environment(environment)
        except ConfigError:
            return DEFAULT
    return environment.declares.parity.normaliser
