"""Helpers for an environment's own tests: serve it for real, on a free port, in a background thread.

from openenv_mcp.authoring.testing import serving

with serving(environment, mode="prod") as url:     # http://127.0.0.1:PORT, /mcp beside it
    ...                                            # any HTTP or MCP client
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from openenv_mcp.environment.spec import Environment
from openenv_mcp.errors import ConfigError
from openenv_mcp.settings import Settings

__all__ = ["serving"]


@contextmanager
def serving(env: Environment[Any, Any], *, mode: str = "sim", timeout: float = 30.0, **settings: Any) -> Iterator[str]:
    """Serve ``env`` with uvicorn as ``openenv-mcp serve`` does; yield its base URL; stop it after.

    The environment's own settings come from the process environment (set them with pytest's
    ``monkeypatch.setenv`` first); ``settings`` are toolkit settings (``max_episodes=...``).

    Raises:
        ConfigError: The server did not start in ``timeout`` seconds (a missing prod setting, say).
    """
    import uvicorn

    from openenv_mcp.doors.http import build_app
    from openenv_mcp.runtime import build_runtime

    runtime = build_runtime(env, Settings(mode=mode, port=0, **settings))  # type: ignore[arg-type]
    server = uvicorn.Server(uvicorn.Config(build_app(runtime), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name=f"serving-{env.name}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise ConfigError(f"{env.name} did not start in {mode} mode within {timeout:g} s (see the log above)")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=timeout)
