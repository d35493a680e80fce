"""The backend contract: what every sim and prod backend offers the runtime, a readiness ping and a close.

A server's own backend protocol extends it with the server's operations::

    class MailBackend(Backend, Protocol):
        async def send(self, message: Draft) -> Sent: ...

and :class:`~openenv_mcp.environment.spec.Environment` binds its backend type to it.
"""

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
