"""Production traffic to sim tasks: recorded prod sessions (:mod:`openenv_mcp.trajectories.sessions`) become tasks
the sim grades, each checked by replaying it.

For each recorded session of an environment that declares a miner
(:class:`Environment.declares.mining <openenv_mcp.environment.declarations.Mining>`):

- the **prompt** is the one given (the recording holds tool calls, not what the user asked);
- the **start** is the state prod held when the session opened, where the environment declares an opening call
  (:attr:`Mining.opening <openenv_mcp.environment.declarations.Mining.opening>`; the recording then holds its
  answer); otherwise the environment's miner knows where prod starts (sql: the one read-only database);
- the **reference** is the recorded calls, up to where the miner says the task is done;
- the **grade** comes from what prod answered, as the miner reads it (sql: the gold query is the last accepted
  ``submit_answer`` query; memory: the graph the session left);
- the **check** replays the reference through a sim runtime that has the mined task (loaded from the file the
  way ``OPENENV_EXTRA_TASKS`` loads it): every call must answer as prod did (the declared normaliser's verdict:
  identical or equivalent) and the episode must end with reward 1.0. A session that fails is rejected with the
  reason; that is the parity gap, seen from the other side.

An environment that declares no miner is answered with the reason it declares (:attr:`Mining.why_not`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_mcp.environment.declarations import Recorded, Rejected
from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Task, task_record
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.models import Observation
from openenv_mcp.parity.normalisers import normaliser_for
from openenv_mcp.parity.run import compare
from openenv_mcp.settings import Settings

__all__ = ["Mined", "Rejected", "mine", "unmineable", "write_tasks"]

Record = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Mined:
    """What one recorded session became: a checked task and its reference, or the reason it was rejected."""

    server: str
    session: str | None
    calls: int
    task: Task | None = None
    reference: tuple[tuple[str, dict[str, Any]], ...] = ()
    rejected: str | None = None


def write_tasks(path: Path, mined: Sequence[Mined]) -> int:
    """Write the mined tasks as ``OPENENV_EXTRA_TASKS`` reads them (one JSON object a line); how many."""
    lines = [
        json.dumps(
            {"task": task_record(m.task), "reference": [list(call) for call in m.reference], "session": m.session},
            ensure_ascii=False,
            default=_json,
        )
        for m in mined
        if m.task is not None
    ]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def unmineable(environment: Environment[Any, Any]) -> str | None:
    """Why ``environment``'s recorded sessions cannot become tasks (``None``: it declares a miner)."""
    mining = environment.declares.mining
    return None if mining.miner is not None else f"{environment.name} cannot be mined: {mining.why_not}"


async def mine(
    environment: Environment[Any, Any], sessions: Sequence[tuple[str | None, Sequence[Record]]], *, prompt: str
) -> list[Mined]:
    """Turn ``sessions`` (each ``(session id, its recorded records)``) of ``environment`` into checked tasks."""
    miner = environment.declares.mining.miner
    template = next(iter(environment.tasks()))
    drafts: list[Mined] = []
    recorded: dict[str, Sequence[Record]] = {}
    for session, records in sessions:
        opening = next((r for r in records if r.get("opening")), None)
        calls = [r for r in records if not r.get("opening")]
        if miner is None:
            drafts.append(Mined(environment.name, session, len(calls), rejected=unmineable(environment)))
            continue
        digest = hashlib.sha256(json.dumps([session, list(records)], sort_keys=True, default=str).encode()).hexdigest()
        try:
            task, steps = miner(template, Recorded(calls, opening), f"mined-{environment.name}-{digest[:12]}", prompt)
        except Rejected as exc:
            drafts.append(Mined(environment.name, session, len(calls), rejected=str(exc)))
            continue
        reference = tuple((str(c["tool"]), dict(c["arguments"])) for c in calls[:steps])
        drafts.append(Mined(environment.name, session, len(calls), task, reference))
        recorded[task.id] = calls
    candidates = [draft for draft in drafts if draft.task is not None]
    verdicts = await _replay(environment, candidates, recorded) if candidates else {}
    return [
        dataclasses.replace(draft, task=None, rejected=verdicts[draft.task.id])
        if draft.task is not None and verdicts.get(draft.task.id)
        else draft
        for draft in drafts
    ]


def _json(value: Any) -> Any:
    """A task field JSON has no type for: a set as a sorted list, a dataclass as its fields (a task class reads
    them back as it types them)."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"a task field of type {type(value).__name__} cannot be written as JSON")


async def _replay(
    environment: Environment[Any, Any], mined: Sequence[Mined], recorded: Mapping[str, Sequence[Record]]
) -> dict[str, str | None]:
    """Each mined task's reason for rejection after its replay in the sim (``None``: it scored 1.0, answering as
    prod did)."""
    from openenv_mcp.runtime import build_runtime

    normalise = normaliser_for(environment)
    with tempfile.TemporaryDirectory(prefix="openenv-mined-") as where:
        path = Path(where) / "mined.jsonl"
        write_tasks(path, mined)
        settings = Settings(mode="sim", trajectories="off", curriculum=False, extra_tasks=path)
        verdicts: dict[str, str | None] = {}
        async with build_runtime(environment, settings).run() as runtime:
            for m in mined:
                assert m.task is not None
                verdicts[m.task.id] = await _check(runtime, m, recorded[m.task.id], normalise)
    return verdicts


async def _check(runtime: Any, mined: Mined, calls: Sequence[Record], normalise: Any) -> str | None:
    assert mined.task is not None
    opened = await runtime.reset(task_id=mined.task.id, seed=0)
    total, done = 0.0, False
    try:
        for step, ((tool, arguments), record) in enumerate(zip(mined.reference, calls, strict=False), start=1):
            try:
                outcome = await runtime.call(tool, arguments, opened.episode_id)
            except OpenEnvError as exc:
                return f"step {step} ({tool}) was refused in the sim: {exc.message}"
            prod = Observation.model_validate(
                {
                    "content": [{"type": "text", "text": record.get("text") or ""}],
                    "structured_content": record.get("structured_content"),
                    "is_error": bool(record.get("is_error")),
                }
            )
            if compare(tool, arguments, outcome.observation, prod, normalise) == "different":
                sim = json.dumps(outcome.observation.structured_content or outcome.observation.text, default=str)
                theirs = json.dumps(prod.structured_content or prod.text, default=str)
                return f"step {step} ({tool}) answers differently in the sim: sim {sim[:200]}, prod {theirs[:200]}"
            total, done = outcome.episode.total_reward, outcome.done
    finally:
        await runtime.close_episode(opened.episode_id)
    if not done or abs(total - 1.0) > 1e-6:
        return f"the replay earned {total:g}{'' if done else ' and left the episode open'}, not 1.0"
    return None
