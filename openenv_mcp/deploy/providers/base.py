"""The provider protocol: ``start()`` -> URL once ready, ``stop()``, and the client context managers."""

from __future__ import annotations

import abc
import socket
import time
from types import TracebackType

import anyio.to_thread
import httpx

from openenv_mcp.client import AsyncEnvClient, EnvClient
from openenv_mcp.errors import OpenEnvError

__all__ = ["STOP_GRACE", "Provider", "ProviderError", "free_port", "http_url"]

STOP_GRACE = 10.0


class ProviderError(OpenEnvError):
    """A provider could not start its server (or the server died before it was ready)."""

    code = "provider_error"
    status = 500


class Provider(abc.ABC):
    """A server somewhere: ``start()`` returns its URL once ready, ``stop()`` removes it.

    As a context manager it starts the server and yields an :class:`EnvClient` (``with``) or an
    :class:`AsyncEnvClient` (``async with``) connected to it.
    """

    startup_timeout: float
    _url: str | None = None
    _client: EnvClient | None = None
    _aclient: AsyncEnvClient | None = None

    @property
    def url(self) -> str:
        """The server's base URL (after :meth:`start`)."""
        if self._url is None:
            raise ProviderError(f"{self!r} is not started: call start() or enter it with 'with'")
        return self._url

    @abc.abstractmethod
    def start(self) -> str:
        """Start the server and wait until it is ready; its base URL."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop and remove what :meth:`start` started; safe to call twice or after a failed start."""

    async def astart(self) -> str:
        return await anyio.to_thread.run_sync(self.start)

    async def astop(self) -> None:
        await anyio.to_thread.run_sync(self.stop)

    def __enter__(self) -> EnvClient:
        url = self.start()
        try:
            self._client = EnvClient(url)
        except BaseException:
            self.stop()
            raise
        return self._client

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        try:
            if self._client is not None:
                self._client.close()
        finally:
            self._client = None
            self.stop()

    async def __aenter__(self) -> AsyncEnvClient:
        url = await self.astart()
        try:
            self._aclient = AsyncEnvClient(url)
        except BaseException:
            await self.astop()
            raise
        return self._aclient

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        try:
            if self._aclient is not None:
                await self._aclient.aclose()
        finally:
            self._aclient = None
            with anyio.CancelScope(shield=True):
                await self.astop()

    def _died(self) -> str | None:
        """Why the server being started is gone (it cannot become ready), or ``None`` while it may still."""
        return None

    def _ready(self, url: str) -> str:
        """Wait for the server just started at ``url``; then it is this provider's URL. If it never gets ready,
        :meth:`stop` removes what was started and the ProviderError saying why is raised."""
        try:
            self._wait_ready(url)
        except BaseException:
            self.stop()
            raise
        self._url = url
        return url

    def _wait_ready(self, url: str) -> None:
        """Poll ``url``/readyz until 200; raise ProviderError if :meth:`_died` names a reason or time runs out."""
        deadline = time.monotonic() + self.startup_timeout
        last = "no answer yet"
        with httpx.Client(timeout=5.0) as http:
            while True:
                try:
                    response = http.get(f"{url}/readyz")
                    if response.status_code == 200:
                        return
                    last = f"/readyz answered {response.status_code}: {response.text[:300]}"
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}: {exc}"
                reason = self._died()
                if reason is not None:
                    raise ProviderError(reason)
                if time.monotonic() > deadline:
                    raise ProviderError(f"{self!r} was not ready at {url} within {self.startup_timeout:.0f} s ({last})")
                time.sleep(0.1)


def http_url(host: str, port: int) -> str:
    """The base URL of a server listening on ``host`` (an IPv6 address goes in brackets) and ``port``."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
