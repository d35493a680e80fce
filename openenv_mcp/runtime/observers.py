"""Episode observers: what else wants to see every reset, step and close (recorders, exporters); and call
recorders, what sees every prod call (session recording), and :class:`SessionOpenings`, which shows them the state
each prod session starts from (the environment's declared opening call, made when a session's first call arrives).

The runtime calls observers after the step is done and graded, outside the episode's lock.
``on_*`` methods must not block: an observer that writes to disk or a database queues the event
and writes from its own task (started by ``start``, flushed by ``stop``). Such an observer may also
have a ``pace() -> Awaitable[None] | None`` method: the runtime calls it before each step runs and awaits
what it returns, so that a writer that has fallen behind slows the steps down (a bounded wait, in
the stepping request only) instead of losing them. ``None`` (room in the queue) costs nothing. Between a
step and its ``on_step`` nothing waits: ``on_step`` sees the episode as that step left it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from openenv_mcp.environment.tools import BoundCall, Toolbox
    from openenv_mcp.models import Observation
    from openenv_mcp.runtime.episodes import Episode, Outcome

__all__ = ["CallRecorder", "EpisodeObserver", "SessionOpenings"]


class EpisodeObserver(Protocol):
    async def start(self) -> None:
        """Called when the server starts, before any episode."""

    async def stop(self) -> None:
        """Called when the server stops, after every episode is closed: flush here."""

    def on_reset(self, episode: Episode, observation: Observation) -> None:
        """An episode was opened; ``observation`` is its first."""

    def on_step(self, episode: Episode, call: BoundCall, outcome: Outcome, seconds: float) -> None:
        """A tool call ran on ``episode`` and was graded; ``seconds`` is the tool's run time."""

    def on_close(self, episode: Episode) -> None:
        """An episode was closed (explicitly, reaped, or at shutdown)."""


class CallRecorder(Protocol):
    """What sees every prod call on the shared backend (session recording): started and stopped with the
    server; ``on_call`` must not block (queue the write)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def on_call(
        self, session: str | None, call: BoundCall, observation: Observation, *, opening: bool = False
    ) -> None: ...


class SessionOpenings:
    """Makes the environment's declared opening call (``Environment.declares.mining.opening``, read-only) on the
    prod backend when a session's first call arrives, before that call runs, and shows its answer to the call
    recorders as the session's opening: the state the session started from, which a miner starts its task from.

    The sessions seen are remembered up to ``remember`` (the oldest forgotten first); a sessionless call has no
    opening. The opening runs inside the call, on the same backend: when it fails, the call fails as it would have
    (a backend that is down), and the session goes unopened."""

    def __init__(self, opening: tuple[str, Mapping[str, Any]] | None, *, remember: int = 10_000) -> None:
        self.opening = opening
        self.remember = remember
        self._seen: OrderedDict[str, None] = OrderedDict()

    async def open(
        self, session: str | None, tools: Toolbox[Any], backend: Any, recorders: Sequence[CallRecorder]
    ) -> None:
        if self.opening is None or session is None or not recorders or session in self._seen:
            return
        self._seen[session] = None  # first: a concurrent first call of the same session makes no second opening
        if len(self._seen) > self.remember:
            self._seen.popitem(last=False)
        tool, arguments = self.opening
        bound = tools.bind(tool, dict(arguments))
        observation = await bound.run(backend)
        for recorder in recorders:
            recorder.on_call(session, bound, observation, opening=True)
