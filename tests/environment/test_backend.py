"""The backend contract sits beside the environment contract: one ``Backend``, the same object wherever it is
imported from, met by any class with an async ``ping`` and ``aclose`` and by no class without them."""

from __future__ import annotations

import openenv_mcp
import openenv_mcp.backends
from openenv_mcp.environment.backend import Backend


class _Notebook:
    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def titles(self) -> list[str]:
        return []


class _NoClose:
    async def ping(self) -> None:
        return None


def test_the_backend_contract_is_one_object_under_each_public_name() -> None:
    assert openenv_mcp.Backend is Backend
    assert openenv_mcp.backends.Backend is Backend


def test_a_backend_is_anything_with_a_ping_and_a_close() -> None:
    assert isinstance(_Notebook(), Backend)
    assert not isinstance(_NoClose(), Backend)
