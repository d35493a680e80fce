"""Rubrics: a reward declared as named, weighted components, with gates and per-step and terminal parts.

A :class:`Rubric` is a grade function (``Environment.grade``) built from components. On each graded step it
scores its components and returns a :class:`~openenv_mcp.environment.tasks.Grade` whose ``reward`` is their weighted sum
and whose ``scores`` name each component's value, so a reward explains itself::

    rubric = Rubric(
        Gate("submitted", lambda s: s.call.tool.name == "submit_answer"),
        Criterion("exact", exact_match, weight=0.5),
        Criterion("f1", token_f1, weight=0.5),
        LLMJudge("clarity", prompt="...", weight=0.0),  # openenv_mcp.rewards.judge: reported, not paid
        done=lambda s: s.call.tool.name == "submit_answer",
    )

One step, in order: ``tools`` and ``graded`` say whether the rubric grades this step at all (others earn 0 and report no
scores); ``prepare`` computes what several components share (``Scoring.data``); the per-step components are
scored in declaration order; ``done`` says whether the step ends the episode; if it does, the terminal components
are scored. A gate that scores below its threshold zeroes the step's total: the components after it are not
scored (no judge is asked; declare gates first) and only the scores so far are reported. The total is the
weighted sum in declaration order, rounded to ``ndigits``. With ``progress`` the reward is the change of the
total since the previous graded step (potential-based shaping: an episode's rewards add up to its final total),
the total so far kept on the episode's backend under that attribute name (so a forked backend carries it).

A component that fails raises; a judge that fails raises :class:`~openenv_mcp.errors.JudgeUnavailable` and the
step answers 503 (the runtime keeps the step for a retry: ``docs/rewards.md``). Nothing is stored until every
component has scored, so a failed step leaves the rubric's state as it was.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.environment.tasks import Grade
from openenv_mcp.environment.tools import BoundCall
from openenv_mcp.models import Observation

__all__ = ["Component", "Criterion", "Gate", "Rubric", "Scoring", "bind_grade"]


@dataclass(slots=True)
class Scoring:
    """What a component sees of one step.

    Attributes:
        task: The episode's task.
        backend: The episode's backend, after the call.
        call: The validated call (``call.tool.name``, ``call.arguments``).
        observation: What the call returned.
        data: What the rubric's ``prepare`` returned (``None`` without one).
        scores: The components scored so far in this step, by name.
        reasons: Why, for the components that say (an LLM judge's reason), by name.
        done: Whether this step ends the episode (known to terminal components and to ``done`` itself: False).
    """

    task: Any
    backend: Any
    call: BoundCall
    observation: Observation
    data: Any = None
    scores: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    done: bool = False

    @property
    def text(self) -> str:
        """The observation's text blocks, joined by newlines."""
        return "\n".join(getattr(block, "text", "") for block in self.observation.content if block.type == "text")


class Component:
    """One named part of a reward: a value (usually 0..1) times a weight.

    Attributes:
        name: How it is reported (``info["scores"][name]``); unique within a rubric.
        weight: Its share of the total; 0 reports it without paying it.
        gate: When it scores below ``threshold``, the step's total is 0 and the later components are skipped.
        threshold: The gate's pass mark.
        terminal: Scored only on the step that ends the episode (else on every graded step).
    """

    __slots__ = ("gate", "name", "terminal", "threshold", "weight")

    def __init__(
        self, name: str, *, weight: float = 1.0, gate: bool = False, threshold: float = 1.0, terminal: bool = False
    ) -> None:
        if not name or not isinstance(name, str):
            raise TypeError("A rubric component needs a non-empty name (it is how its score is reported)")
        self.name, self.weight, self.gate = name, float(weight), gate
        self.threshold, self.terminal = threshold, terminal

    async def score(self, scoring: Scoring) -> float:
        """This component's value for one step."""
        raise TypeError(f"{type(self).__name__} {self.name!r} does not define score(); use Criterion(name, function)")

    def bind(self, settings: Any) -> Component:
        """This component configured from the server's settings (a judge takes its endpoint from them)."""
        return self

    def describe(self) -> dict[str, Any]:
        """Name, weight and role, for documentation and checks."""
        return {"name": self.name, "weight": self.weight, "gate": self.gate, "terminal": self.terminal}


ScoreFunction = Callable[[Scoring], "float | bool | Awaitable[float | bool]"]


class Criterion(Component):
    """A component computed by a function of the step (sync or async), returning a number or a bool."""

    __slots__ = ("function",)

    def __init__(
        self,
        name: str,
        function: ScoreFunction,
        *,
        weight: float = 1.0,
        gate: bool = False,
        threshold: float = 1.0,
        terminal: bool = False,
    ) -> None:
        if not callable(function):
            raise TypeError(f"Criterion {name!r}: pass the function that scores it, e.g. Criterion(name, fn)")
        super().__init__(name, weight=weight, gate=gate, threshold=threshold, terminal=terminal)
        self.function = function

    async def score(self, scoring: Scoring) -> float:
        value = self.function(scoring)
        if inspect.isawaitable(value):
            value = await value
        return float(value)


def Gate(
    name: str, function: ScoreFunction, *, threshold: float = 1.0, weight: float = 0.0, terminal: bool = False
) -> Criterion:
    """A criterion that must pass (score at least ``threshold``; a bool passes when true) for anything to count."""
    return Criterion(name, function, weight=weight, gate=True, threshold=threshold, terminal=terminal)


_Predicate = Callable[[Scoring], "bool | Awaitable[bool]"]
_UNGRADED = Grade()  # frozen: one instance serves every step a rubric does not grade


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Rubric:
    """A grade function built from components (pass it as ``Environment(grade=...)``).

    Args:
        components: The parts, in the order they are scored and summed.
        tools: Grade calls of these tools only (checked first, at no cost to the other steps: they earn 0 and
            report no scores); default all.
        graded: Which of those steps the rubric grades (default: all); the others earn 0 and report no scores.
        prepare: Computes, once per graded step, what components share (``Scoring.data``); may be async.
        done: Whether the step ends the episode, after the per-step components (their values are in
            ``Scoring.scores``); default never (the step limit ends it).
        progress: The backend attribute holding the total so far: each step then earns the change of the total,
            not the total. ``None`` (or absent) before the first graded step means ``start``.
        start: With ``progress``, the total before the first graded step (e.g. the score of the episode's
            initial state, so a step is not paid for what was true from the start); default 0.
        ndigits: Digits the total (and, with ``progress``, the reward) is rounded to; ``None``: not rounded.
    """

    def __init__(
        self,
        *components: Component,
        tools: Iterable[str] | None = None,
        graded: _Predicate | None = None,
        prepare: Callable[[Scoring], Any] | None = None,
        done: _Predicate | None = None,
        progress: str | None = None,
        start: Callable[[Scoring], float] | None = None,
        ndigits: int | None = 4,
    ) -> None:
        if not components:
            raise TypeError("A Rubric needs at least one component")
        names = [component.name for component in components]
        if len(set(names)) != len(names):
            raise TypeError(f"Rubric component names must be unique; got {names}")
        self.components = components
        self.tools = frozenset(tools) if tools is not None else None
        self.graded, self.prepare, self.done = graded, prepare, done
        self.progress, self.start, self.ndigits = progress, start, ndigits
        self._step = tuple(c for c in components if not c.terminal)
        self._terminal = tuple(c for c in components if c.terminal)

    @property
    def names(self) -> list[str]:
        return [component.name for component in self.components]

    def describe(self) -> list[dict[str, Any]]:
        """Each component's name, weight and role."""
        return [component.describe() for component in self.components]

    def bind(self, settings: Any) -> Rubric:
        """This rubric with every component configured from the server's settings (a judge's endpoint)."""
        bound = [component.bind(settings) for component in self.components]
        if all(new is old for new, old in zip(bound, self.components, strict=True)):
            return self
        return Rubric(
            *bound,
            tools=self.tools,
            graded=self.graded,
            prepare=self.prepare,
            done=self.done,
            progress=self.progress,
            start=self.start,
            ndigits=self.ndigits,
        )

    async def __call__(self, task: Any, backend: Any, call: BoundCall, observation: Observation) -> Grade:
        if self.tools is not None and call.tool.name not in self.tools:
            return _UNGRADED  # most steps of most environments: kept to a set lookup
        scoring = Scoring(task, backend, call, observation)
        if self.graded is not None and not await _maybe(self.graded(scoring)):
            return _UNGRADED
        if self.prepare is not None:
            scoring.data = await _maybe(self.prepare(scoring))
        total, passed = await self._score(self._step, scoring, 0.0)
        done = bool(await _maybe(self.done(scoring))) if self.done is not None else False
        if done and passed and self._terminal:
            scoring.done = True
            total, passed = await self._score(self._terminal, scoring, total)
        if not passed:
            total = 0.0
        if self.ndigits is not None:
            total = round(total, self.ndigits)
        reward = total
        if self.progress is not None:
            before = getattr(backend, self.progress, None)
            if before is None:
                before = self.start(scoring) if self.start is not None else 0.0
            reward = total - float(before)
            if self.ndigits is not None:
                reward = round(reward, self.ndigits)
            setattr(backend, self.progress, total)
        return Grade(reward=reward, done=done, scores=scoring.scores or None, reasons=scoring.reasons or None)

    @staticmethod
    async def _score(components: tuple[Component, ...], scoring: Scoring, total: float) -> tuple[float, bool]:
        """Score ``components`` in order onto ``total``; False once a gate fails (the rest are skipped)."""
        scores = scoring.scores
        for component in components:
            value = await component.score(scoring)
            scores[component.name] = value
            if component.gate and value < component.threshold:
                return total, False
            total += component.weight * value
        return total, True


def bind_grade(grade: Callable[..., Awaitable[Grade]], settings: Any) -> Callable[..., Awaitable[Grade]]:
    """The grade function a runtime calls: a rubric bound to the server's settings, any other as it is."""
    if isinstance(grade, Rubric):
        return grade.bind(settings)
    return grade
