"""Play scripts through a sim and a prod runtime of one environment, and compare each call's answers.

Both sides take the one path (:meth:`Runtime.call <openenv_mcp.runtime.Runtime.call>`: the same validation and
dispatch as every door); nothing here calls a backend. The sim side plays each script in an episode of its own,
opened on the script's task with ``seed``; the prod side plays it on the prod backend, in the same order, after the
environment's declared stage (if it has one: :mod:`~openenv_mcp.parity.staging`) made prod hold the episode's start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openenv_mcp.errors import BackendUnavailable, OpenEnvError
from openenv_mcp.models import Observation
from openenv_mcp.parity.normalisers import Normaliser, normaliser_for
from openenv_mcp.parity.report import Example, Kind, ParityReport, ToolParity
from openenv_mcp.parity.scripts import Script
from openenv_mcp.parity.staging import side
from openenv_mcp.runtime import Runtime

__all__ = ["compare", "measure"]


async def measure(
    sim: Runtime, prod: Runtime, scripts: Sequence[Script], *, seed: int = 0, normaliser: Normaliser | None = None
) -> ParityReport:
    """Play ``scripts`` on both runtimes (started here and stopped at the end) and count what agreed.

    Raises:
        BackendUnavailable: A side's backend is not ready, or went away during the run (the message names it).
    """
    normalise = normaliser or normaliser_for(sim.env)
    report = ParityReport(sim.env.name, {name: ToolParity() for name in sim.tools.names}, forgives=normalise.forgives)
    async with sim.run(), prod.run():
        for side, runtime in (("sim", sim), ("prod", prod)):
            problems = {name: why for name, why in (await runtime.readiness()).items() if why != "ok"}
            if problems:
                found = "; ".join(f"{name}: {why}" for name, why in problems.items())
                raise BackendUnavailable(f"The {side} backend of {sim.env.name} is not ready ({found})")
        for script in scripts:
            await _play(sim, prod, script, seed, normalise, report)
    return report


async def _play(
    sim: Runtime, prod: Runtime, script: Script, seed: int, normalise: Normaliser, report: ParityReport
) -> None:
    stage = sim.env.declares.parity.stage
    episode_seed = seed if script.seed is None else script.seed
    opened = await sim.reset(task_id=script.task_id, seed=episode_seed)
    try:
        if stage is not None:
            await stage(side(sim, opened.episode_id), side(prod, None))
        for step, (tool, arguments) in enumerate(script.calls, start=1):
            mine, done = await _call(sim, tool, arguments, opened.episode_id)
            theirs, _ = await _call(prod, tool, arguments, None)
            kind = compare(tool, arguments, mine, theirs, normalise)
            report.add(Example(kind, script.source, script.label, step, tool, arguments, _shown(mine), _shown(theirs)))
            if done and step < len(script.calls):
                # the rest plays on in a fresh episode of the same task (a random script's submit ends its episode)
                if script.source != "random":
                    report.notes.append(
                        f"{script.source} {script.label}: the sim episode ended at step {step} of "
                        f"{len(script.calls)}; the rest was played in a fresh episode of the same task"
                    )
                await sim.close_episode(opened.episode_id)
                opened = await sim.reset(task_id=script.task_id, seed=episode_seed)
                if stage is not None:
                    await stage(side(sim, opened.episode_id), side(prod, None))
    finally:
        await sim.close_episode(opened.episode_id)


async def _call(
    runtime: Runtime, tool: str, arguments: dict[str, Any], episode: str | None
) -> tuple[Observation, bool]:
    """The call's observation (a refusal by the runtime becomes an error observation carrying its code and
    message), and whether it ended the episode."""
    try:
        outcome = await runtime.call(tool, arguments, episode)
    except BackendUnavailable:
        raise  # a service went away mid-run: the comparison would measure the outage, not the backends
    except OpenEnvError as exc:
        text = f"{exc.code}: {exc.message}"
        return Observation.model_validate({"content": [{"type": "text", "text": text}], "is_error": True}), False
    return outcome.observation, outcome.done


def compare(tool: str, arguments: dict[str, Any], sim: Observation, prod: Observation, normalise: Normaliser) -> Kind:
    """``identical`` when the observations are equal as sent, ``equivalent`` when their normal forms are, else
    ``different``."""
    if sim.model_dump() == prod.model_dump():
        return "identical"
    if normalise(tool, arguments, sim) == normalise(tool, arguments, prod):
        return "equivalent"
    return "different"


def _shown(observation: Observation) -> Any:
    if observation.is_error:
        return {"error": observation.text}
    return observation.structured_content if observation.structured_content is not None else observation.text
