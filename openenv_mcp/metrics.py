"""Prometheus metrics of one server, in a registry of its own (several servers may share a process)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Tool calls by tool and outcome, their latency, resets, and open episodes."""

    def __init__(self, *, server: str, mode: str, open_episodes: Callable[[], int]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = {"server": server, "mode": mode}
        self.tool_calls = Counter(
            "openenv_tool_calls",
            "Tool calls, by tool and outcome (ok, tool_failed, or an error code)",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.tool_latency = Histogram(
            "openenv_tool_call_seconds", "Tool call latency", ["tool"], buckets=_BUCKETS, registry=self.registry
        )
        self.resets = Counter("openenv_resets", "Episodes opened by reset", registry=self.registry)
        self.reset_latency = Histogram(
            "openenv_reset_seconds", "Reset latency", buckets=_BUCKETS, registry=self.registry
        )
        self._children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        episodes = Gauge("openenv_open_episodes", "Open sim episodes", registry=self.registry)
        episodes.set_function(lambda: float(open_episodes()))
        info = Gauge("openenv_server_info", "The server and its mode", list(labels), registry=self.registry)
        info.labels(**labels).set(1)

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        # labels() costs a lookup and a lock each time; the children are kept per (tool, outcome).
        key = (tool, outcome)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (self.tool_calls.labels(tool, outcome), self.tool_latency.labels(tool))
        children[0].inc()
        children[1].observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
