"""Sim-to-prod parity: the same calls through an environment's sim and prod runtimes, answers compared.

    from openenv_mcp.parity import from_tasks, measure
    report = await measure(sim_runtime, prod_runtime, from_tasks(environment, sample=20, seed=0))
    print(report.render())                        # per tool: calls, identical, equivalent, different, gap

Calls come from :mod:`~openenv_mcp.parity.scripts` (task references, recorded trajectories, a seeded generator
over the input schemas); :mod:`~openenv_mcp.parity.normalisers` says what each environment's comparison forgives;
:mod:`~openenv_mcp.parity.run` plays them through the one path; :mod:`~openenv_mcp.parity.report` counts and
writes ``parity.json`` and ``parity.html``. ``openenv-mcp parity NAME`` is the command (docs/parity.md).
"""

from __future__ import annotations

from openenv_mcp.parity.normalisers import Normaliser, normaliser_for
from openenv_mcp.parity.report import ParityReport, ToolParity
from openenv_mcp.parity.run import measure
from openenv_mcp.parity.scripts import SOURCES, Script, comparable, from_random, from_tasks, from_trajectories

__all__ = [
    "SOURCES",
    "Normaliser",
    "ParityReport",
    "Script",
    "ToolParity",
    "comparable",
    "from_random",
    "from_tasks",
    "from_trajectories",
    "measure",
    "normaliser_for",
]
