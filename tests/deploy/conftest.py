"""Fixtures for the container tests (tests/deploy/test_*_stack.py); the machinery is in tests/support/containers.py.

One engine and one set of images per session; one stack per module, down before the next comes up.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.containers import (
    PROD_SERVERS,
    SIM_SERVERS,
    Engine,
    Stack,
    build_images,
    prod_variables,
    running_engine,
    stack_up,
    unpublished,
)


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """Podman's Docker API on a socket of our own; stopped when the session ends."""
    with running_engine(tmp_path_factory.mktemp("engine")) as running:
        yield running


@pytest.fixture(scope="session")
def images(engine: Engine) -> Engine:
    """The project's slim and desktop images and the PostgreSQL stand-in, built (or found in the cache)."""
    return build_images(engine)


@pytest.fixture(scope="module")
def sim_stack(images: Engine) -> Iterator[Stack]:
    """The committed sim file, up: every server, sql with two replicas (the pool's fault test)."""
    with stack_up(images, "sim", {**unpublished(SIM_SERVERS), "OPENENV_REPLICAS_SQL": "2"}, []) as stack:
        yield stack


@pytest.fixture(scope="module")
def prod_stack(images: Engine) -> Iterator[Stack]:
    """The committed prod file with its bundled PostgreSQL: sql, search and coding."""
    with stack_up(images, "prod", prod_variables(), PROD_SERVERS) as stack:
        yield stack
