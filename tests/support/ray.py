"""A real Ray cluster of several nodes on this machine, for the Ray pool's tests and its benchmark.

Each node is its own ``ray start --block`` process (the head first, then workers joining its address), in a
process group of its own: the head's GCS and raylet, each worker node's raylet, and every worker process
Ray starts for actors belong to their node's group. A node is taken down by signalling its group, which
ends exactly what it started. ``ray stop`` is never used: it ends every Ray process on the machine,
other users' clusters included. Each node has a custom resource named after it (``node_head`` ...), so a
test can tell which node an actor landed on and ask for one.

Kept cheap for 2 cores: 2 logical CPUs and a small object store per node, no dashboard UI.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import free_port

__all__ = ["RayCluster", "RayNode", "ray_cluster"]

RAY = Path(sys.executable).parent / "ray"
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # Ray's floor is 75 MiB; the pool passes nothing big through it
NODE_CPUS = 2  # logical: what Ray schedules by, not cores (this machine has 2 for everything)
START_TIMEOUT = 60.0
STOP_GRACE = 1.0  # a head drains for up to 30 s on SIGTERM; nothing here needs that


@dataclass
class RayNode:
    """One node: its ``ray start --block`` process (leader of the node's process group) and its log."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def resource(self) -> str:
        """The custom resource only this node has (one unit per logical CPU)."""
        return f"node_{self.name}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else "(no output)"

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
            os.killpg(self.process.pid, sig)

    def stop(self) -> None:
        """SIGTERM the node's group, then SIGKILL what is left after a grace (Ray drains for up to 30 s)."""
        self.signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_GRACE)
        self.signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_GRACE)


@dataclass
class RayCluster:
    """A head and its worker nodes; ``address`` is what ``ray.init`` and ``ray start --address`` take."""

    root: Path
    port: int
    nodes: list[RayNode] = field(default_factory=list)
    start_seconds: float = 0.0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def node(self, name: str) -> RayNode:
        return next(n for n in self.nodes if n.name == name)

    def start_node(self, name: str, *, head: bool = False) -> RayNode:
        argv = [
            str(RAY), "start", "--block", f"--num-cpus={NODE_CPUS}",
            f"--resources={json.dumps({f'node_{name}': NODE_CPUS})}",
            f"--object-store-memory={OBJECT_STORE_BYTES}", "--disable-usage-stats",
        ]  # fmt: skip
        if head:
            argv += ["--head", f"--port={self.port}", f"--temp-dir={self.root / 'ray'}", "--include-dashboard=false"]
        else:
            argv += [f"--address={self.address}"]
        log = self.root / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        node = RayNode(name, process, log)
        self.nodes.append(node)
        deadline = time.monotonic() + START_TIMEOUT
        while "Ray runtime started" not in node.output():
            if process.poll() is not None:
                raise RuntimeError(f"ray start ({name}) exited with {process.returncode}: {node.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"ray start ({name}) not up within {START_TIMEOUT:.0f} s: {node.output()}")
            time.sleep(0.1)
        return node

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()

    def leftovers(self) -> list[str]:
        """Live processes still in a node's group (GCS, raylets, workers): none once stopped."""
        groups = {node.process.pid for node in self.nodes}
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):
                state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
                if int(pgrp) in groups and state != "Z":
                    found.append(stat.read_text().split(")", 1)[0] + ")")
        return found


@contextlib.contextmanager
def ray_cluster(workers: tuple[str, ...] = ("worker",)) -> Iterator[RayCluster]:
    """A head node named ``head`` and one worker node per name, each a process group of its own; all ended after."""
    with tempfile.TemporaryDirectory(prefix="ray-", dir="/tmp") as tmp:  # short: Ray's socket paths have a limit
        cluster = RayCluster(Path(tmp), free_port())
        started = time.monotonic()
        try:
            cluster.start_node("head", head=True)
            for name in workers:
                cluster.start_node(name)
            cluster.start_seconds = time.monotonic() - started
            yield cluster
        finally:
            cluster.stop()
        deadline = time.monotonic() + START_TIMEOUT
        while cluster.leftovers():
            if time.monotonic() > deadline:
                raise RuntimeError(f"Ray processes outlived their cluster: {cluster.leftovers()}")
            time.sleep(0.1)
