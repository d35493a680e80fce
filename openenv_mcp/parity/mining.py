"""Production traffic to sim tasks: recorded prod sessions (:mod:`openenv_mcp.trajectories.sessions`) become tasks
the sim grades, each checked by replaying it.

For each recorded session of an environment that has a miner (:data:`MINERS`):

- the **prompt** is the one given (the recording holds tool calls, not what the user asked);
- the **reference** is the recorded calls, up to the last accepted answer;
- the **grade** comes from what prod answered: for sql, the task's gold query is the submitted query, so the
  gold rows are the rows prod returned (checked in the replay);
- the **check** replays the reference through a sim runtime that has the mined task (loaded from the file the
  way ``OPENENV_EXTRA_TASKS`` loads it): every call must answer as prod did (the parity normaliser's verdict:
  identical or equivalent) and the episode must end with reward 1.0. A session that fails is rejected with the
  reason; that is the parity gap, seen from the other side.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.environment.tasks import Task, task_record
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.models import Observation
from openenv_mcp.parity.normalisers import normaliser_for
from openenv_mcp.parity.run import compare
from openenv_mcp.settings import Settings

__all__ = ["MINERS", "Mined", "Rejected", "mine", "write_tasks"]

Record = Mapping[str, Any]


class Rejected(Exception):
    """A session that makes no task, and why."""


@dataclass(frozen=True, slots=True)
class Mined:
    """What one recorded session became: a checked task and its reference, or the reason it was rejected."""

    server: str
    session: str | None
    calls: int
    task: Task | None = None
    reference: tuple[tuple[str, dict[str, Any]], ...] = ()
    rejected: str | None = None


_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def _sql(template: Task, calls: Sequence[Record], task_id: str, prompt: str) -> tuple[Task, int]:
    """A sql task whose gold query is the session's last accepted ``submit_answer`` query."""
    answers = [n for n, c in enumerate(calls) if c["tool"] == "submit_answer" and not c.get("is_error")]
    if not answers:
        raise Rejected("no accepted submit_answer: there is no answer to grade by")
    last = answers[-1]
    gold = calls[last]["arguments"].get("sql")
    if not isinstance(gold, str):
        raise Rejected("the answer was submitted as rows, not as a query: the sim cannot recompute it")
    steps = last + 1
    difficulty = "easy" if steps <= 3 else "medium" if steps <= 6 else "hard"
    fields: dict[str, Any] = {"id": task_id, "prompt": prompt, "difficulty": difficulty, "split": "train"}
    fields |= {"gold_sql": gold, "ordered": bool(_ORDER_BY.search(gold)), "family": "mined"}  # SqlTask's own
    return dataclasses.replace(template, **fields), steps


MINERS: dict[str, Callable[[Task, Sequence[Record], str, str], tuple[Task, int]]] = {"sql": _sql}
"""Per environment: ``(a task of it, the session's calls, task id, prompt) -> (the task, reference length)``."""


def write_tasks(path: Path, mined: Sequence[Mined]) -> int:
    """Write the mined tasks as ``OPENENV_EXTRA_TASKS`` reads them (one JSON object a line); how many."""
    lines = [
        json.dumps(
            {"task": task_record(m.task), "reference": [list(call) for call in m.reference], "session": m.session},
            ensure_ascii=False,
        )
        for m in mined
        if m.task is not None
    ]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


async def mine(
    environment: Environment[Any, Any], sessions: Sequence[tuple[str | None, Sequence[Record]]], *, prompt: str
) -> list[Mined]:
    """Turn ``sessions`` (each ``(session id, its recorded calls)``) of ``environment`` into checked tasks."""
    miner = MINERS.get(environment.name)
    template = next(iter(environment.tasks()))
    drafts: list[Mined] = []
    recorded: dict[str, Sequence[Record]] = {}
    for session, calls in sessions:
        if miner is None:
            why = f"no miner for {environment.name} (tasks are mined from: {', '.join(sorted(MINERS))})"
            drafts.append(Mined(environment.name, session, len(calls), rejected=why))
            continue
        digest = hashlib.sha256(json.dumps([session, list(calls)], sort_keys=True, default=str).encode()).hexdigest()
        try:
            task, steps = miner(template, calls, f"mined-{environment.name}-{digest[:12]}", prompt)
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


async def _replay(
    environment: Environment[Any, Any], mined: Sequence[Mined], recorded: Mapping[str, Sequence[Record]]
) -> dict[str, str | None]:
    """Each mined task's reason for rejection after its replay in the sim (``None``: it scored 1.0, answering as
    prod did)."""
    from openenv_mcp.runtime import build_runtime

    normalise = normaliser_for(environment.name)
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
