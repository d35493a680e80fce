"""``openenv-mcp new``: what it writes, and what it refuses (its end-to-end run is tests/authoring/test_guide.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_mcp.authoring.scaffold import names_for, scaffold
from openenv_mcp.cli import main
from openenv_mcp.errors import ConfigError


def test_new_writes_a_complete_package_with_the_names_filled_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "bird-watch", "--dir", str(tmp_path)]) == 0
    root = tmp_path / "bird-watch"
    written = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert written == [
        "README.md",
        "bird_watch_env/__init__.py",
        "bird_watch_env/backends.py",
        "bird_watch_env/data/tasks.json",
        "bird_watch_env/py.typed",
        "bird_watch_env/settings.py",
        "bird_watch_env/tasks.py",
        "bird_watch_env/tools.py",
        "pyproject.toml",
        "tests/test_bird_watch_env.py",
    ]
    text = "".join(p.read_text() for p in root.rglob("*") if p.is_file())
    assert "{{" not in text
    assert 'bird-watch = "bird_watch_env:environment"' in (root / "pyproject.toml").read_text()
    assert 'env_prefix="BIRD_WATCH_"' in (root / "bird_watch_env" / "settings.py").read_text()
    for source in root.rglob("*.py"):
        compile(source.read_text(), str(source), "exec")
    assert "pip install -e ." in capsys.readouterr().out


def test_new_refuses_a_bad_name_and_a_folder_in_use(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="lowercase letters"):
        names_for("Bad Name")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="exists and is not empty"):
        scaffold("taken", tmp_path)
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
