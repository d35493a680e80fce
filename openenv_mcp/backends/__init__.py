"""What every backend offers the runtime: a readiness ping and a close."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Backend"]


@runtime_checkable
class Backend(Protocol):
    """A sim or prod implementation of a server's backend protocol.

    Servers add their own operations (``query``, ``send``...) on top; the runtime only
    needs these two. ``ping`` raises :class:`~openenv_mcp.errors.BackendUnavailable` with the
    reason when the backend cannot serve.
    """

    async def ping(self) -> None: ...

    async def aclose(self) -> None: ...
