"""What the wheel installs: the toolkit under one import name, the shipped servers inside it.

A top-level ``servers`` package would collide with a user's own (issue 13: ``ModuleNotFoundError: No
module named 'servers.coding'`` from a directory that has a ``servers`` package of its own).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = {"sql", "email", "search", "desktop", "coding"}


def test_the_wheel_installs_one_import_name_with_the_servers_inside(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = tmp_path.glob("openenv_mcp-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")} == {"openenv_mcp"}
    for server in SHIPPED:
        assert f"openenv_mcp/servers/{server}/__init__.py" in names
        assert f"{server} = openenv_mcp.servers.{server}:environment" in entry_points
    assert "openenv_mcp/servers/sql/data/tasks.json" in names  # the data travels with the code


def test_a_users_own_servers_package_does_not_shadow_ours(tmp_path: Path) -> None:
    own = tmp_path / "servers"
    (own / "coding").mkdir(parents=True)
    (own / "__init__.py").write_text("MINE = True\n", encoding="utf-8")
    (own / "coding" / "__init__.py").write_text(
        "raise ImportError('the user s own servers.coding')\n", encoding="utf-8"
    )
    listed = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "list"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert {line.split()[0] for line in listed.stdout.splitlines() if line and not line[0].isspace()} >= SHIPPED
