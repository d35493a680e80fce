"""A generator's table is made once and read back at later starts, from the cache directory the settings name."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_mcp.environment.cache import cache_dir, cached_table, source_fingerprint


def test_a_table_is_made_once_then_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_CACHE_HOME", str(tmp_path))
    made: list[int] = []

    def build() -> list[dict[str, int]]:
        made.append(1)
        return [{"id": 1}, {"id": 2}]

    assert cached_table("tasks", "abc", build) == [{"id": 1}, {"id": 2}]
    assert cached_table("tasks", "abc", build) == [{"id": 1}, {"id": 2}] and made == [1]
    assert (tmp_path / "openenv-mcp" / "tasks-abc.json").is_file() and cache_dir() == tmp_path / "openenv-mcp"
    cached_table("tasks", "def", build)  # another fingerprint: another generator, made again
    assert made == [1, 1]


def test_an_unwritable_cache_still_gives_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("OPENENV_CACHE_HOME", str(blocked))
    assert cached_table("tasks", "abc", lambda: [1, 2, 3]) == [1, 2, 3]


def test_the_fingerprint_follows_the_source_and_the_extra() -> None:
    one = source_fingerprint("openenv_mcp.environment", ["cache.py"], extra="v1")
    assert one == source_fingerprint("openenv_mcp.environment", ["cache.py"], extra="v1")
    assert one != source_fingerprint("openenv_mcp.environment", ["cache.py"], extra="v2")
    assert one != source_fingerprint("openenv_mcp.environment", ["cache.py", "tasks.py"], extra="v1")
