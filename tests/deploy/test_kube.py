"""The Kubernetes manifests: generated from the catalog, validated offline with kubernetes-validate --strict."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from openenv_mcp.deploy.compose import COMPOSE_DIR
from openenv_mcp.deploy.kube import KUBE_DESKTOP_IMAGE, KUBE_IMAGE, build_manifests, dump_manifests, resource_name
from openenv_mcp.deploy.stacks import shipped_servers
from tests.support import require_service

FILES = [COMPOSE_DIR / "k8s" / "openenv-sim.yaml", COMPOSE_DIR / "k8s" / "openenv-prod.yaml"]


def _validate(*paths: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("kubernetes-validate") or str(Path(sys.executable).parent / "kubernetes-validate")
    if not Path(tool).exists():
        require_service("kubernetes-validate (the dev extra installs it)", FileNotFoundError(tool))
    return subprocess.run([tool, "--strict", *map(str, paths)], capture_output=True, text=True, timeout=120)


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_committed_manifests_pass_strict_validation() -> None:
    done = _validate(*FILES)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("passed") == 2 * 2 * len(shipped_servers())


def test_strict_validation_can_fail(tmp_path: Path) -> None:
    [deployment, service] = build_manifests(["sql"], "sim")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["paht"] = "/readyz"
    path = tmp_path / "broken.yaml"
    path.write_text(dump_manifests([deployment, service]))
    done = _validate(path)
    assert done.returncode != 0
    assert "paht" in done.stdout + done.stderr


@pytest.mark.parametrize("path", FILES, ids=["sim", "prod"])
def test_each_server_has_a_probed_limited_deployment_and_a_headless_service(path: Path) -> None:
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _documents(path)}
    mode = "prod" if "prod" in path.name else "sim"
    for name in shipped_servers():
        deployment = docs["Deployment", resource_name(name)]
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert container["args"] == ["serve", name]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["MODE"] == mode
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["resources"]["requests"] and container["resources"]["limits"]
        if mode == "prod":
            assert container["envFrom"] == [{"secretRef": {"name": resource_name(name), "optional": False}}]
        service = docs["Service", resource_name(name)]
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_servers_run_as_non_root_unless_their_sandbox_needs_root() -> None:
    for doc in build_manifests(["sql"], "sim"):
        if doc["kind"] == "Deployment":
            pod = doc["spec"]["template"]["spec"]
            assert pod["securityContext"]["runAsNonRoot"] is True
            assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True


def test_desktop_runs_the_image_with_the_display_stack_and_the_others_the_slim_one() -> None:
    for doc in build_manifests(shipped_servers(), "prod"):
        if doc["kind"] != "Deployment":
            continue
        [container] = doc["spec"]["template"]["spec"]["containers"]
        wanted = KUBE_DESKTOP_IMAGE if doc["metadata"]["name"] == "openenv-desktop" else KUBE_IMAGE
        assert container["image"] == wanted, doc["metadata"]["name"]
