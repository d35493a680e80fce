"""How a world's workers are started and spoken to: one configuration, built once from a server's settings."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WorkerConfig"]


@dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    """How a world's workers are started and spoken to; built once from a server's settings.

    Attributes:
        world: The world's name, for messages and logs (``"worker"``, ``"scienceworld"``).
        command: The worker's command line.
        image: Run ``command`` in a container of this image, one per worker (``None``: a local process).
        engine: The container command line client (``podman``, ``docker``).
        run_options: More options for ``ENGINE run`` (``--memory=1g``, ``--network=none``).
        volumes: ``-v`` mounts for the container (``host:container[:mode]``).
        env: Variables added to the worker's environment (the container's with ``-e``).
        pool_size: Workers kept started and idle, ready for the next reset.
        reuse: Whether a worker whose episode ended takes the next episode (sent ``init`` again).
        warm: Whether a new worker is sent ``init`` of ``warm_task`` before it joins the pool, so a world that
            loads on its first ``init`` (a JVM, game files) is loaded before a reset needs it.
        init_timeout: Seconds an ``init`` may take (a fresh world's first load included).
        step_timeout: Seconds a ``step`` may take before the worker counts as hung and is killed.
        stderr_lines: Lines of the worker's stderr kept for the log when it fails.
        max_line_bytes: The longest answer line read from a worker.
    """

    world: str
    command: tuple[str, ...]
    image: str | None = None
    engine: str = "podman"
    run_options: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    pool_size: int = 2
    reuse: bool = True
    warm: bool = True
    init_timeout: float = 120.0
    step_timeout: float = 60.0
    stderr_lines: int = 40
    max_line_bytes: int = 16 * 1024 * 1024
