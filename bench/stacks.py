"""The images and the compose stacks, measured: ``.venv/bin/python -m bench.stacks [--cold] [--steps N]``.

Figures, all from one run on this machine (podman's Docker API and Compose v2, set up by scripts/containers):

* image build time: cached (nothing changed) and, with ``--cold``, each target from scratch (``--no-cache``);
* image sizes (slim, desktop);
* time from ``compose up`` of the sim stack to every server's ``/readyz`` 200;
* RSS of each container once ready, and of desktop after one episode;
* ``/step`` latency of sql (``list_tables``) through the container's published port against the same
  server run on the host (``openenv-mcp serve sql``), interleaved, as a ratio.

Writes ``bench/results/stacks.json`` and prints a table. Builds use CPU: on a shared machine, run it once.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
BASE_IMAGE = os.environ.get("OPENENV_BASE_IMAGE", "localhost/openenv-python:3.11-bookworm")
SLIM = "localhost/openenv-mcp:bench"
DESKTOP = "localhost/openenv-mcp-desktop:bench"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
SERVERS = ["sql", "email", "search", "coding", "desktop"]


@contextmanager
def engine() -> Iterator[dict[str, str]]:
    """scripts/containers, then podman's Docker API on a socket of our own; the environment that reaches it."""
    state = ROOT / ".containers"
    subprocess.run([str(ROOT / "scripts" / "containers"), str(state)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        sock = Path(tmp) / "podman.sock"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OPENENV_PORT_")},
            "CONTAINERS_CONF": str(state / "containers.conf"),
            "DOCKER_CONFIG": str(state / "docker"),
            "DOCKER_HOST": f"unix://{sock}",
            "COMPOSE_BAKE": "false",
            "DOCKER_BUILDKIT": "0",
            "OPENENV_IMAGE": SLIM,
            "OPENENV_DESKTOP_IMAGE": DESKTOP,
            **{f"OPENENV_PORT_{name.upper()}": "" for name in SERVERS},
        }
        service = subprocess.Popen(
            ["podman", "system", "service", "--time=0", f"unix://{sock}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not sock.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError("podman system service did not start")
                time.sleep(0.05)
            yield env
        finally:
            service.terminate()
            service.wait(timeout=20)


def build(env: dict[str, str], tag: str, target: str, *, cold: bool = False) -> float:
    argv = ["podman", "build", "--format", "docker", "--network=host", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}"]
    if HOST_CA.is_file():
        argv += ["--secret", f"id=ca-certificates,src={HOST_CA}"]
    argv += [*(["--no-cache"] if cold else []), "--target", target, "-f", "compose/Dockerfile", "-t", tag, "."]
    started = time.monotonic()
    subprocess.run(argv, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


def size_mb(env: dict[str, str], tag: str) -> float:
    out = subprocess.run(["podman", "image", "inspect", "--format", "{{.Size}}", tag], env=env, text=True,
                         capture_output=True, check=True).stdout  # fmt: skip
    return int(out.strip()) / 1e6


def compose(env: dict[str, str], project: str, *args: str) -> str:
    argv = ["docker", "compose", "-f", str(ROOT / "compose" / "docker-compose.sim.yml"), "-p", project, *args]
    return subprocess.run(argv, env=env, text=True, capture_output=True, check=True).stdout


def ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def rss_mb(env: dict[str, str], project: str) -> dict[str, float]:
    out = subprocess.run(["podman", "stats", "--no-stream", "--format", "json"], env=env, text=True,
                         capture_output=True, check=True).stdout  # fmt: skip
    figures = {}
    for row in json.loads(out):
        name = str(row.get("name") or row.get("Name"))
        if name.startswith(f"{project}-"):
            usage = str(row.get("mem_usage") or row.get("MemUsage")).split("/")[0].strip()
            figures[name.removeprefix(f"{project}-").rsplit("-", 1)[0]] = _megabytes(usage)
    return figures


def _megabytes(text: str) -> float:
    units = {"kB": 1e-3, "KB": 1e-3, "KiB": 1.024e-3, "MB": 1.0, "MiB": 1.048576}
    units.update({"GB": 1e3, "GiB": 1073.741824, "B": 1e-6})
    for unit, factor in units.items():
        if text.endswith(unit):
            return round(float(text[: -len(unit)]) * factor, 1)
    return float(text)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def step_latency(urls: dict[str, str], steps: int) -> dict[str, float]:
    """Median and p90 of sql list_tables /step at each URL, the URLs taking turns call by call."""
    times: dict[str, list[float]] = {name: [] for name in urls}
    with httpx.Client(timeout=10) as http:
        episodes: dict[str, str] = {}

        def fresh(name: str) -> None:  # episodes have a step budget: a new one every 10 steps (not timed)
            episodes[name] = http.post(f"{urls[name]}/reset", json={"task_id": "sql-001"}).json()["episode_id"]

        for name, url in urls.items():
            fresh(name)
            for _ in range(5):  # warm up
                http.post(f"{url}/step", json={"action": {"tool": "list_tables"}},
                          headers={"X-Episode-Id": episodes[name]})  # fmt: skip
        for index in range(steps):
            for name, url in urls.items():
                if index % 10 == 0:
                    fresh(name)
                started = time.perf_counter()
                answer = http.post(f"{url}/step", json={"action": {"tool": "list_tables"}},
                                   headers={"X-Episode-Id": episodes[name]})  # fmt: skip
                times[name].append((time.perf_counter() - started) * 1000)
                answer.raise_for_status()
    figures = {}
    for name, values in times.items():
        values.sort()
        figures[f"{name}_median_ms"] = round(statistics.median(values), 3)
        figures[f"{name}_p90_ms"] = round(values[int(len(values) * 0.9)], 3)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stacks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="also build from scratch (--no-cache): minutes of CPU")
    parser.add_argument("--steps", type=int, default=300, help="/step calls per side (default 300)")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    with engine() as env:
        if args.cold:
            figures["build_cold_slim_s"] = round(build(env, SLIM, "slim", cold=True), 1)
            figures["build_cold_desktop_s"] = round(build(env, DESKTOP, "display", cold=True), 1)
            print(figures, flush=True)
        else:
            build(env, SLIM, "slim")
            build(env, DESKTOP, "display")
        figures["build_cached_both_s"] = round(build(env, SLIM, "slim") + build(env, DESKTOP, "display"), 1)
        figures["size_slim_mb"] = round(size_mb(env, SLIM), 1)
        figures["size_desktop_mb"] = round(size_mb(env, DESKTOP), 1)
        project = f"openenv-bench-{uuid.uuid4().hex[:6]}"
        started = time.monotonic()
        compose(env, project, "up", "-d")
        try:
            urls = {}
            for name in SERVERS:
                port = compose(env, project, "port", name, "8000").strip().rsplit(":", 1)[1]
                urls[name] = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 180
            waiting = set(SERVERS)
            while waiting and time.monotonic() < deadline:
                waiting = {name for name in waiting if not ready(urls[name])}
                time.sleep(0.1)
            if waiting:
                raise RuntimeError(f"not ready after 180 s: {sorted(waiting)}")
            figures["up_to_every_readyz_s"] = round(time.monotonic() - started, 1)
            figures["rss_ready_mb"] = rss_mb(env, project)
            with httpx.Client(timeout=60) as http:
                episode = http.post(f"{urls['desktop']}/reset", json={}).json()["episode_id"]
                http.post(f"{urls['desktop']}/step", json={"action": {"tool": "screenshot"}},
                          headers={"X-Episode-Id": episode})  # fmt: skip
            figures["rss_desktop_after_episode_mb"] = rss_mb(env, project).get("desktop")
            host_port = free_port()
            host = subprocess.Popen(
                [sys.executable, "-m", "openenv_mcp.cli", "serve", "sql", "--mode", "sim", "--port", str(host_port)],
                env={**os.environ, "OPENENV_TRAJECTORIES": "sqlite:///" + str(Path(tempfile.mkdtemp()) / "t.db")},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                host_url = f"http://127.0.0.1:{host_port}"
                deadline = time.monotonic() + 60
                while not ready(host_url):
                    if time.monotonic() > deadline:
                        raise RuntimeError("the host sql server did not become ready")
                    time.sleep(0.1)
                latency = step_latency({"container": urls["sql"], "host": host_url}, args.steps)
            finally:
                os.killpg(host.pid, signal.SIGTERM)
                host.wait(timeout=20)
            figures.update(latency)
            figures["step_container_over_host"] = round(latency["container_median_ms"] / latency["host_median_ms"], 2)
        finally:
            compose(env, project, "down", "--volumes", "--remove-orphans")
    figures["load_after"] = os.getloadavg()[0]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "stacks.json").write_text(json.dumps(figures, indent=2) + "\n")
    for key, value in figures.items():
        print(f"{key:<32} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
