"""``openenv-mcp new``: what it writes, and what it refuses (its end-to-end run is tests/authoring/test_guide.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_mcp.authoring.scaffold import names_for, scaffold
from openenv_mcp.cli import main
from openenv_mcp.deploy.kube import build_manifests
from openenv_mcp.deploy.stacks import build_stack
from openenv_mcp.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


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
        "bird_watch_env/declarations.py",
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


def _installed(root: Path, name: str, module: str) -> None:
    """Register the package at ``root`` as pip would (a dist-info folder with its entry point), for whoever puts
    ``root`` on the path: the catalog then finds it like any installed environment."""
    info = root / f"{module}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[openenv_mcp.servers]\n{name} = {module}:environment\n")


def test_a_new_environment_gets_containers_and_a_manifest_from_its_own_declarations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = scaffold("kiln", tmp_path)
    declared = made.root / made.module / "declarations.py"
    text = declared.read_text()  # what an author adds: a device, a Debian package, a node to run on
    text = text.replace("memory_mb=512,", 'memory_mb=512, devices=("/dev/kvm",), system_packages=("ffmpeg",),')
    declared.write_text(text.replace("ClusterNeeds(", 'ClusterNeeds(node_selector={"kvm": "yes"}, '))
    _installed(made.root, "kiln", made.module)
    monkeypatch.syspath_prepend(str(made.root))
    service = build_stack(["kiln"], "prod")["services"]["kiln"]
    assert service["environment"]["KILN_DATABASE"] == "/data/notes.db"  # so compose asks for no value
    assert service["volumes"] == ["kiln-notes:/data"]
    assert service["deploy"]["resources"]["limits"]["memory"] == "512M"
    assert (service["devices"], service["x-system-packages"]) == (["/dev/kvm"], ["ffmpeg"])
    deployment, _ = build_manifests(["kiln"], "prod", replicas=3)
    assert deployment["spec"]["replicas"] == 1
    annotations = deployment["metadata"]["annotations"]
    assert annotations["openenv-mcp/replicas"] == "at most 1: the prod notebook is one SQLite file that one pod owns"
    assert annotations["openenv-mcp/image-adds"] == "ffmpeg"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kvm": "yes"}
    [container] = pod["containers"]
    assert container["resources"]["limits"]["memory"] == "512Mi"
    assert {"name": "kiln-notes", "mountPath": "/data"} in container["volumeMounts"]


@pytest.mark.timeout(600)
def test_a_new_environments_own_tests_run_parity_on_its_normaliser_and_mine_a_prod_session(tmp_path: Path) -> None:
    made = scaffold("bird-watch", tmp_path)
    _installed(made.root, "bird-watch", made.module)
    environ = {**os.environ, "PYTHONPATH": f"{made.root}{os.pathsep}{ROOT}", "OPENENV_TRAJECTORIES": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=made.root, env=environ, capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "7 passed" in done.stdout
