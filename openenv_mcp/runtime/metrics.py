"""Prometheus metrics of one server, in a registry of its own (several servers may share a process)."""

from __future__ import annotations

import bisect
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import prometheus_client.metrics
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

if TYPE_CHECKING:
    from openenv_mcp.rewards.judge import LLMJudge

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
_SCORE_BUCKETS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _ToolCalls(Collector):
    """``openenv_tool_calls`` and ``openenv_tool_call_seconds``, exposed exactly as a prometheus_client ``Counter``
    (labels tool, outcome) and ``Histogram`` (label tool) would, but counted in plain Python numbers.

    Every tool call updates both; prometheus_client's children take a lock per update and some bookkeeping (about
    1.3 us a call, a tenth of a batched step). Here an update is a dict lookup and two additions. Updates and
    scrapes both run on the server's event loop.
    """

    CALLS = "openenv_tool_calls"
    CALLS_HELP = "Tool calls, by tool and outcome (ok, tool_failed, or an error code)"
    SECONDS = "openenv_tool_call_seconds"
    SECONDS_HELP = "Tool call latency"

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self._bounds = buckets
        self._le = [str(floatToGoString(b)) for b in buckets] + ["+Inf"]  # type: ignore[no-untyped-call]
        self._calls: dict[tuple[str, str], list[float]] = {}  # (tool, outcome) -> [count, created]
        self._seconds: dict[str, list[float]] = {}  # tool -> [per-bucket counts..., +Inf count, sum, created]

    def observe(self, tool: str, outcome: str, seconds: float) -> None:
        calls = self._calls.get((tool, outcome))
        if calls is None:
            calls = self._calls[(tool, outcome)] = [0.0, time.time()]
        calls[0] += 1.0
        latency = self._seconds.get(tool)
        if latency is None:
            latency = self._seconds[tool] = [0.0] * (len(self._le) + 1) + [time.time()]
        latency[bisect.bisect_left(self._bounds, seconds)] += 1.0  # the first bucket whose bound >= seconds
        latency[-2] += seconds

    def collect(self) -> Iterator[Metric]:
        created = prometheus_client.metrics._use_created  # PROMETHEUS_DISABLE_CREATED_SERIES, as for the others
        calls = Metric(self.CALLS, self.CALLS_HELP, "counter")
        for (tool, outcome), (count, since) in list(self._calls.items()):
            labels = {"tool": tool, "outcome": outcome}
            calls.add_sample(self.CALLS + "_total", labels, count)
            if created:
                calls.add_sample(self.CALLS + "_created", dict(labels), since)
        yield calls
        seconds = Metric(self.SECONDS, self.SECONDS_HELP, "histogram")
        for tool, latency in list(self._seconds.items()):
            total = 0.0
            for le, count in zip(self._le, latency, strict=False):
                total += count
                seconds.add_sample(self.SECONDS + "_bucket", {"tool": tool, "le": le}, total)
            seconds.add_sample(self.SECONDS + "_count", {"tool": tool}, total)
            seconds.add_sample(self.SECONDS + "_sum", {"tool": tool}, latency[-2])
            if created:
                seconds.add_sample(self.SECONDS + "_created", {"tool": tool}, latency[-1])
        yield seconds


class _Judges(Collector):
    """``openenv_judge_verdicts`` (labels judge, source: answered, cached, joined, failed) and
    ``openenv_judge_request_seconds`` (label judge) of a rubric's LLM judges, read from their own counts at scrape."""

    def __init__(self, server: str, judges: Sequence[LLMJudge]) -> None:
        self._server, self._judges = server, judges

    def collect(self) -> Iterator[Metric]:
        verdicts = Metric("openenv_judge_verdicts", "LLM judge verdicts, by judge and how they were got", "counter")
        seconds = Metric("openenv_judge_request_seconds", "LLM judge requests (retries included)", "summary")
        for judge in self._judges:
            for source, count in judge.verdicts.items():
                labels = {"server": self._server, "judge": judge.name, "source": source}
                verdicts.add_sample("openenv_judge_verdicts_total", labels, float(count))
            labels = {"server": self._server, "judge": judge.name}
            seconds.add_sample("openenv_judge_request_seconds_count", labels, float(judge.seconds[0]))
            seconds.add_sample("openenv_judge_request_seconds_sum", dict(labels), float(judge.seconds[1]))
        yield verdicts
        yield seconds


class Metrics:
    """Tool calls by tool and outcome, their latency, resets, and open episodes."""

    def __init__(self, *, server: str, mode: str, open_episodes: Callable[[], int]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = {"server": server, "mode": mode}
        self._tool_calls = _ToolCalls(_BUCKETS)
        self.registry.register(self._tool_calls)
        self.resets = Counter("openenv_resets", "Episodes opened by reset", registry=self.registry)
        self.reset_latency = Histogram(
            "openenv_reset_seconds", "Reset latency", buckets=_BUCKETS, registry=self.registry
        )
        episodes = Gauge("openenv_open_episodes", "Open sim episodes", registry=self.registry)
        episodes.set_function(lambda: float(open_episodes()))
        info = Gauge("openenv_server_info", "The server and its mode", list(labels), registry=self.registry)
        info.labels(**labels).set(1)
        self._server = server
        self._scores = Histogram(
            "openenv_reward_component",
            "Graded steps' reward component values (a rubric's named scores), by server and component",
            ["server", "component"],
            buckets=_SCORE_BUCKETS,
            registry=self.registry,
        )
        self._score_children: dict[str, Histogram] = {}
        self._mcp_sessions: Gauge | None = None

    def count_mcp_sessions(self, open_sessions: Callable[[], int]) -> None:
        """Report the open stateful MCP sessions (``openenv_mcp_sessions``), counted by ``open_sessions``
        (the app built last for this runtime counts)."""
        if self._mcp_sessions is None:
            self._mcp_sessions = Gauge(
                "openenv_mcp_sessions", "Open stateful MCP sessions (2025-era protocol)", registry=self.registry
            )
        self._mcp_sessions.set_function(lambda: float(open_sessions()))

    def count_judges(self, grade: object) -> None:
        """Report the verdicts of the LLM judges among a rubric's components (``grade``, bound to this server's
        settings). None when no judge module was ever imported: not paid for."""
        judge = sys.modules.get("openenv_mcp.rewards.judge")
        if judge is None:
            return
        judges = [c for c in getattr(grade, "components", ()) if isinstance(c, judge.LLMJudge)]
        if judges:
            self.registry.register(_Judges(self._server, judges))

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        self._tool_calls.observe(tool, outcome, seconds)

    def observe_scores(self, scores: Mapping[str, float]) -> None:
        """Count one graded step's named scores."""
        children = self._score_children
        for name, value in scores.items():
            child = children.get(name)
            if child is None:
                child = children[name] = self._scores.labels(self._server, name)
            child.observe(value)

    def render(self) -> bytes:
        return generate_latest(self.registry)
