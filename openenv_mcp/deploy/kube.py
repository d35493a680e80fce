"""Kubernetes manifests from the catalog: per server a Deployment and a headless Service.

    from openenv_mcp.deploy.kube import build_manifests, dump_manifests

    text = dump_manifests(build_manifests(["sql"], "sim"))   # kubectl apply -f -

The same image and settings as the compose stacks (:mod:`openenv_mcp.deploy.stacks`): ``MODE`` picks
the mode, the server listens on 0.0.0.0:8000, readiness is ``/readyz`` (backends answer),
liveness ``/healthz`` (the process serves), with resource requests and limits and a
non-root, read-only-root-filesystem security context. The Service is headless
(``clusterIP: None``): its DNS name resolves to every ready pod, which is what
:class:`~openenv_mcp.client.pool.EnvPool` needs to keep each episode on its pod. In prod, every
variable of the server's settings comes from a Secret named like the Deployment (created by
the operator); nothing is bundled: bring your own PostgreSQL and the like. In sim that Secret
is optional (``OPENENV_AUTH_TOKEN`` goes there). The probes stay open without the token.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from openenv_mcp.deploy.stacks import CONTAINER_PORT
from openenv_mcp.environment.catalog import load_environment
from openenv_mcp.environment.declarations import ClusterNeeds, ContainerNeeds
from openenv_mcp.settings import Mode

__all__ = ["KUBE_DESKTOP_IMAGE", "KUBE_IMAGE", "build_manifests", "dump_manifests", "resource_name"]

KUBE_IMAGE = "openenv-mcp:latest"
"""The slim image the manifests name; point it at your registry with kustomize ``images:`` or ``kubectl set image``."""
KUBE_DESKTOP_IMAGE = "openenv-mcp-desktop:latest"
"""The image with the display stack (the Dockerfile's ``display`` target), for the servers that declare it."""
_SERVER_UID = 10001


def resource_name(name: str) -> str:
    """The Deployment, Service and Secret name of server ``name`` (``openenv-sql``)."""
    return f"openenv-{name}".replace("_", "-")


def build_manifests(
    names: Sequence[str],
    mode: Mode,
    *,
    image: str = KUBE_IMAGE,
    desktop_image: str = KUBE_DESKTOP_IMAGE,
    replicas: int = 2,
) -> list[dict[str, Any]]:
    """A Deployment and a headless Service for each server in ``names``, in ``mode``.

    Servers whose declared container needs the display stack run ``desktop_image``, the others ``image``; a
    server that declares at most so many prod replicas (:class:`ClusterNeeds`) gets no more in prod.
    """
    if mode not in ("sim", "prod"):
        raise ValueError(f"mode must be 'sim' or 'prod', not {mode!r}")
    docs: list[dict[str, Any]] = []
    for name in names:
        env = load_environment(name)
        needs, cluster = env.declares.container, env.declares.cluster
        runs = desktop_image if needs.target == "display" else image
        count = replicas
        if mode == "prod" and cluster.prod_replicas is not None:
            count = min(replicas, cluster.prod_replicas)
        docs.append(_deployment(name, mode, image=runs, replicas=count, needs=needs, cluster=cluster))
        docs.append(_service(name, mode))
        if mode == "prod":
            required = [v.name for v in env.variables() if v.required and v.name not in needs.prod_environment]
            docs[-2]["metadata"]["annotations"] = {
                "openenv-mcp/secret-keys": ", ".join(required) or "(none required)",
            }
            adds = [*needs.system_packages, *(s.upstream.package for s in env.prod_services if s.upstream is not None)]
            if adds:  # what the image must add to its target (compose: x-system-packages, x-upstream)
                docs[-2]["metadata"]["annotations"]["openenv-mcp/image-adds"] = ", ".join(adds)
            if count < replicas:
                docs[-2]["metadata"]["annotations"]["openenv-mcp/replicas"] = f"at most {count}: {cluster.why}"
    return docs


def _labels(name: str, mode: Mode) -> dict[str, str]:
    return {"app.kubernetes.io/name": "openenv-mcp", "app.kubernetes.io/instance": name, "openenv-mcp/mode": mode}


def _mib(mib: int) -> str:
    """A Kubernetes quantity: ``1Gi`` for whole GiB, else ``256Mi``."""
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def _deployment(
    name: str, mode: Mode, *, image: str, replicas: int, needs: ContainerNeeds, cluster: ClusterNeeds
) -> dict[str, Any]:
    resource = resource_name(name)
    selector = {"app.kubernetes.io/name": "openenv-mcp", "app.kubernetes.io/instance": name}
    environment = {
        "MODE": mode,
        "OPENENV_HOST": "0.0.0.0",
        "OPENENV_PORT": str(CONTAINER_PORT),
        "OPENENV_ALLOWED_HOSTS": json.dumps([resource, f"{resource}:*"]),
    }
    mounts = [{"name": "tmp", "mountPath": "/tmp"}, {"name": "data", "mountPath": "/data"}]
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]
    init: list[dict[str, Any]] = []
    if mode == "prod":
        environment.update(needs.prod_environment)
        taken = set(needs.prod_volumes.values())  # a prod volume replaces the default mount at its path
        mounts = [mount for mount in mounts if mount["mountPath"] not in taken]
        kept = {mount["name"] for mount in mounts}
        volumes = [volume for volume in volumes if volume["name"] in kept]
        for volume, path in needs.prod_volumes.items():
            mounts.append({"name": volume, "mountPath": path})
            volumes.append({"name": volume, "emptyDir": {}})
            if needs.volume_owner is not None:
                init.append(_chown(volume, path, needs.volume_owner, image))
    else:
        environment["OPENENV_TRAJECTORIES"] = "sqlite:////data/trajectories.db"
    container: dict[str, Any] = {
        "name": "server",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["serve", name],
        "env": [{"name": key, "value": value} for key, value in environment.items()],
        "ports": [{"name": "http", "containerPort": CONTAINER_PORT, "protocol": "TCP"}],
        "readinessProbe": _probe("/readyz", period=5, failures=3),
        "livenessProbe": _probe("/healthz", period=10, failures=3),
        "startupProbe": _probe("/healthz", period=2, failures=60),
        "resources": {
            "requests": dict(cpu="250m", memory=_mib(needs.memory_reserved_mb)),
            "limits": dict(cpu="1", memory=_mib(needs.memory_mb)),
        },
        "securityContext": _security(needs),
        "volumeMounts": mounts,
    }
    # prod: the server's settings; sim: optional, e.g. OPENENV_AUTH_TOKEN (then every route but the probes needs it)
    container["envFrom"] = [{"secretRef": {"name": resource, "optional": mode == "sim"}}]
    pod: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "terminationGracePeriodSeconds": 30,
        "containers": [container],
        "volumes": volumes,
    }
    if init:
        pod["initContainers"] = init
    if cluster.node_selector:
        pod["nodeSelector"] = dict(cluster.node_selector)
    if needs.user is None:
        pod["securityContext"].update({"runAsNonRoot": True, "runAsUser": _SERVER_UID, "runAsGroup": _SERVER_UID})
        pod["securityContext"]["fsGroup"] = _SERVER_UID
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": resource, "labels": _labels(name, mode)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {"metadata": {"labels": _labels(name, mode)}, "spec": pod},
        },
    }


def _probe(path: str, *, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": 3,
        "failureThreshold": failures,
    }


def _security(needs: ContainerNeeds) -> dict[str, Any]:
    if needs.user is None:
        return {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
    # A server that must be root (the coding sandbox drops to per-episode uids itself).
    context: dict[str, Any] = {"runAsUser": 0, "runAsNonRoot": False}
    if needs.cap_add:
        context["capabilities"] = {"add": list(needs.cap_add)}
    if any(option.startswith("apparmor=unconfined") for option in needs.security_opt):
        context["appArmorProfile"] = {"type": "Unconfined"}
    return context


def _chown(volume: str, path: str, owner: str, image: str) -> dict[str, Any]:
    return {
        "name": f"own-{volume}",
        "image": image,
        "command": ["sh", "-c", f"chown {owner} {path} && chmod 0700 {path}"],
        "securityContext": {
            "runAsUser": 0,
            "runAsNonRoot": False,
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER"]},
        },
        "volumeMounts": [{"name": volume, "mountPath": path}],
    }


def _service(name: str, mode: Mode) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": resource_name(name), "labels": _labels(name, mode)},
        "spec": {
            "clusterIP": "None",
            "selector": {"app.kubernetes.io/name": "openenv-mcp", "app.kubernetes.io/instance": name},
            "ports": [{"name": "http", "port": CONTAINER_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def dump_manifests(docs: Sequence[dict[str, Any]]) -> str:
    """The manifests as one multi-document YAML stream, after a comment header."""
    lines = [
        "# Generated by openenv_mcp.deploy.kube (openenv-mcp compose generate); edit the generator, not this file."
    ]
    for doc in docs:
        keys = doc["metadata"].get("annotations", {}).get("openenv-mcp/secret-keys")
        if keys:
            name = doc["metadata"]["name"]
            lines.append(
                f"# {name} reads Secret {name}: kubectl create secret generic {name} --from-literal=KEY=... ({keys})"
            )
    body = "---\n".join(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=200) for doc in docs)
    return "\n".join(lines) + "\n---\n" + body
