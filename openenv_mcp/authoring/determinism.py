"""The determinism audit: every sim episode must be a function of its task, its seed and its actions.

    from openenv_mcp.authoring.determinism import audit_determinism
    problems = audit_determinism(my_environment, sequences=20)   # [] when deterministic

Hypothesis draws random action sequences (from the environment's ``examples``, or the ``actions`` given), a seed
and a step to fork at. Each sequence is played through the HTTP door, in process:

1. twice from the same seed: every observation (content blocks, so a screenshot's bytes too), reward and done
   flag, and the final state, must be identical;
2. again, forked at the drawn step (through the environment's fast path when it declares one, and by replay), the
   fork then taking the rest of the actions: the source's prefix plus the fork's continuation must be identical to
   the first run. This checks that a fork is in the source's state, and that replay reproduces it.

Forks and snapshots rely on this property (docs/episodes.md). Needs ``hypothesis`` (the ``audit`` extra).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import ConfigError, OpenEnvError
from openenv_mcp.settings import Settings

__all__ = ["DeterminismError", "audit_determinism"]

Action = tuple[str, dict[str, Any]]
Step = tuple[str, Any, float, bool]  # tool, observation, reward, done


class DeterminismError(OpenEnvError):
    """An environment whose episodes are not a function of task, seed and actions."""

    code = "not_deterministic"


@dataclass(frozen=True)
class _Run:
    steps: list[Step]
    final: tuple[int, float, bool]  # step_count, total_reward, done


class _Differs(Exception):
    pass


def audit_determinism(
    environment: Environment[Any, Any],
    *,
    actions: Sequence[Action] | None = None,
    sequences: int = 20,
    max_length: int = 8,
    seed: int = 0,
    settings: Settings | None = None,
) -> list[str]:
    """Play random action sequences twice and forked; return what differed (empty when deterministic).

    Args:
        environment: The environment to audit (sim mode, in process).
        actions: The actions sequences are drawn from; the environment's ``examples`` by default.
        sequences: How many sequences Hypothesis draws.
        max_length: The longest sequence.
        seed: Seed of Hypothesis' draws (the audit is reproducible).
        settings: Toolkit settings for the server (sim mode, no trajectories by default).

    Returns:
        One message per problem found (the first failing sequence, with its seed, actions and step).
    """
    try:
        import hypothesis
        from hypothesis import strategies as st
    except ImportError:  # pragma: no cover - hypothesis ships with the dev and audit extras
        raise ConfigError("The determinism audit needs hypothesis: pip install 'openenv-mcp[audit]'") from None
    from anyio.from_thread import start_blocking_portal

    from openenv_mcp.doors.http import build_app
    from openenv_mcp.runtime import build_runtime

    pool = list(actions if actions is not None else environment.examples)
    if not pool:
        return ["no actions to draw from: declare examples on the environment, or pass actions="]
    settings = settings or Settings(mode="sim", max_episodes=16, trajectories="off")
    runtime = build_runtime(environment, settings)
    vias = ["auto", "replay"] if environment.sim_fork is not None else ["replay"]
    app = build_app(runtime)
    problems: list[str] = []

    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", timeout=120)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(app.router.lifespan_context(app)),
        portal.wrap_async_context_manager(client) as http,
    ):
        player = _Player(http)

        @hypothesis.settings(
            max_examples=sequences,
            database=None,
            deadline=None,
            phases=(hypothesis.Phase.explicit, hypothesis.Phase.generate),
            suppress_health_check=list(hypothesis.HealthCheck),
        )
        @hypothesis.seed(seed)
        @hypothesis.given(
            task_seed=st.integers(0, 2**16),
            picks=st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=max_length),
            fork_at=st.integers(0, max_length),
        )
        def audit(task_seed: int, picks: list[int], fork_at: int) -> None:
            sequence = [pool[i] for i in picks]
            where = f"seed {task_seed}, actions {[name for name, _ in sequence]}"
            try:
                first = portal.call(player.play, task_seed, sequence)
                _compare(f"two runs of {where}", first, portal.call(player.play, task_seed, sequence))
                for via in vias:
                    forked = portal.call(player.play_forked, task_seed, sequence, fork_at, via)
                    _compare(f"a fork ({via}) at step {fork_at} of {where}", first, forked)
            except _Differs as exc:
                problems.append(str(exc))
                raise

        with contextlib.suppress(_Differs):
            audit()
    return problems[:1]


class _Player:
    """Plays action sequences through the HTTP door, from a reset or forked from another episode part-way."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self._http = http

    async def play(self, task_seed: int, sequence: list[Action]) -> _Run:
        episode = await self._reset(task_seed)
        steps = await self._steps(episode, sequence, [])
        return await self._finish(episode, steps)

    async def play_forked(self, task_seed: int, sequence: list[Action], at: int, via: str) -> _Run:
        source = await self._reset(task_seed)
        steps = await self._steps(source, sequence[:at], [])
        forked = await self._http.post(f"/episodes/{source}/fork", params={"via": via})
        if forked.status_code != 200:
            raise _Differs(f"fork ({via}) at step {len(steps)} answered {forked.status_code}: {forked.text[:300]}")
        episode = str(forked.json()["episode_id"])
        await self._http.delete(f"/episodes/{source}")
        steps = await self._steps(episode, sequence[len(steps) :], steps)
        return await self._finish(episode, steps)

    async def _reset(self, task_seed: int) -> str:
        answer = await self._http.post("/reset", json={"seed": task_seed})
        if answer.status_code != 200:
            raise _Differs(f"/reset answered {answer.status_code}: {answer.text[:300]}")
        return str(answer.json()["episode_id"])

    async def _steps(self, episode: str, actions: list[Action], steps: list[Step]) -> list[Step]:
        """``steps`` followed by those of ``actions`` played on ``episode``, up to the one that finds it done."""
        for action in actions:
            result = await self._step(episode, action)
            if result is None:
                break
            steps.append(result)
        return steps

    async def _step(self, episode: str, action: Action) -> Step | None:
        tool, arguments = action
        answer = await self._http.post(
            "/step", headers={"X-Episode-Id": episode}, json={"action": {"tool": tool, "arguments": arguments}}
        )
        if answer.status_code == 409:
            return None  # the episode is done: the rest of the sequence is not played
        if answer.status_code != 200:
            raise _Differs(f"{tool} answered {answer.status_code}: {answer.text[:300]}")
        body = answer.json()
        return tool, body["observation"], body["reward"], body["done"]

    async def _finish(self, episode: str, steps: list[Step]) -> _Run:
        state = (await self._http.get("/state", headers={"X-Episode-Id": episode})).json()
        await self._http.delete(f"/episodes/{episode}")
        return _Run(steps, (state["step_count"], state["total_reward"], state["done"]))


def _compare(what: str, first: _Run, other: _Run) -> None:
    for index, (mine, theirs) in enumerate(zip(first.steps, other.steps, strict=False), 1):
        if mine != theirs:
            part = "observation" if mine[1] != theirs[1] else "reward or done flag"
            raise _Differs(f"{what}: step {index} ({mine[0]}) gave another {part}")
    if len(first.steps) != len(other.steps):
        raise _Differs(f"{what}: {len(first.steps)} steps played, then {len(other.steps)}")
    if first.final != other.final:
        raise _Differs(f"{what}: final state (steps, total reward, done) {first.final} then {other.final}")
