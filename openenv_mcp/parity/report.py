"""A parity run's findings: per tool, how many calls answered identically, equivalently or differently, with the
first example of each kind; as a table, as ``parity.json`` and as ``parity.html``."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["KINDS", "Example", "ParityReport", "ToolParity"]

Kind = Literal["identical", "equivalent", "different"]
KINDS: tuple[Kind, ...] = ("identical", "equivalent", "different")


@dataclass(frozen=True, slots=True)
class Example:
    """One compared call: where it came from, and what each side answered."""

    kind: Kind
    source: str
    label: str
    step: int
    tool: str
    arguments: dict[str, Any]
    sim: Any
    prod: Any

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source": self.source,
            "label": self.label,
            "step": self.step,
            "tool": self.tool,
            "arguments": self.arguments,
            "sim": self.sim,
            "prod": self.prod,
        }


@dataclass
class ToolParity:
    """One tool's counts, and the first example of each kind."""

    calls: int = 0
    identical: int = 0
    equivalent: int = 0
    different: int = 0
    examples: list[Example] = field(default_factory=list)

    @property
    def gap(self) -> float:
        """The share of calls whose answers differ after normalisation (0 when there were no calls)."""
        return self.different / self.calls if self.calls else 0.0

    def add(self, example: Example) -> None:
        self.calls += 1
        setattr(self, example.kind, getattr(self, example.kind) + 1)
        if all(seen.kind != example.kind for seen in self.examples):
            self.examples.append(example)

    def as_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "identical": self.identical,
            "equivalent": self.equivalent,
            "different": self.different,
            "gap": round(self.gap, 6),
            "examples": [example.as_json() for example in self.examples],
        }


@dataclass
class ParityReport:
    """What one parity run found, per tool and per source of calls.

    Attributes:
        environment: The environment's name.
        tools: Per tool, its counts (every tool of the environment, called or not).
        sources: Per source (``tasks``, ``trajectories``, ``random``), the same counts over all tools.
        forgives: What the normaliser forgave (one line each).
        notes: What the run could not measure, and why (a source with no calls, scripts cut short).
    """

    environment: str
    tools: dict[str, ToolParity]
    sources: dict[str, ToolParity] = field(default_factory=dict)
    forgives: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    def add(self, example: Example) -> None:
        self.tools.setdefault(example.tool, ToolParity()).add(example)
        self.sources.setdefault(example.source, ToolParity()).add(example)

    @property
    def calls(self) -> int:
        return sum(tool.calls for tool in self.tools.values())

    @property
    def gap(self) -> float:
        """The environment's gap: differing calls over all calls, every tool and source together."""
        calls = self.calls
        return sum(tool.different for tool in self.tools.values()) / calls if calls else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "gap": round(self.gap, 6),
            "calls": self.calls,
            "tools": {name: tool.as_json() for name, tool in self.tools.items()},
            "sources": {name: _counts(counts) for name, counts in self.sources.items()},
            "forgives": list(self.forgives),
            "notes": self.notes,
        }

    def render(self) -> str:
        """The table a terminal shows: a row per tool, a row per source, then the environment's gap."""
        width = max([len(name) for name in (*self.tools, *self.sources)] + [6])
        head = f"{'':<{width}}  {'calls':>6} {'identical':>9} {'equivalent':>10} {'different':>9} {'gap':>7}"
        lines = [f"{self.environment}: sim vs prod", head]

        def row(name: str, counts: ToolParity) -> str:
            return (
                f"{name:<{width}}  {counts.calls:>6} {counts.identical:>9} {counts.equivalent:>10} "
                f"{counts.different:>9} {counts.gap:>7.3f}"
            )

        lines += [row(name, counts) for name, counts in self.tools.items()]
        if self.sources:
            lines.append("source")
            lines += [row(name, counts) for name, counts in self.sources.items()]
        lines.append(f"gap {self.gap:.3f} over {self.calls} calls")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def html(self) -> str:
        """A page with the counts and every tool's first differing (and equivalent) example side by side,
        escaped."""
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{t.calls}</td><td>{t.identical}</td><td>{t.equivalent}</td>"
            f"<td>{t.different}</td><td>{t.gap:.3f}</td></tr>"
            for name, t in self.tools.items()
        )
        sections = []
        for name, counts in self.tools.items():
            for example in counts.examples:
                if example.kind == "identical":
                    continue
                sections.append(
                    f"<h3>{html.escape(name)}: {example.kind} ({html.escape(example.source)} "
                    f"{html.escape(example.label)}, step {example.step})</h3>"
                    f"<pre class=args>{_pretty(example.arguments)}</pre>"
                    f"<table class=side><tr><th>sim</th><th>prod</th></tr><tr><td><pre>{_pretty(example.sim)}</pre>"
                    f"</td><td><pre>{_pretty(example.prod)}</pre></td></tr></table>"
                )
        forgiven = "".join(f"<li>{html.escape(line)}</li>" for line in self.forgives)
        notes = "".join(f"<li>{html.escape(line)}</li>" for line in self.notes)
        title = html.escape(f"{self.environment}: sim-to-prod parity")
        return (
            f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title><style>"
            "body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}"
            "table{border-collapse:collapse}table.side td{width:50%}pre{white-space:pre-wrap;margin:0}"
            f"</style></head><body><h1>{title}</h1><p>gap {self.gap:.3f} over {self.calls} calls</p>"
            "<table><tr><th>tool</th><th>calls</th><th>identical</th><th>equivalent</th><th>different</th>"
            f"<th>gap</th></tr>{rows}</table><h2>Forgiven</h2><ul>{forgiven}</ul>"
            + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
            + f"<h2>Examples</h2>{''.join(sections) or '<p>none: every call answered identically</p>'}</body></html>"
        )


def _counts(counts: ToolParity) -> dict[str, Any]:
    return {key: value for key, value in counts.as_json().items() if key != "examples"}


def _pretty(value: Any) -> str:
    return html.escape(json.dumps(value, indent=2, ensure_ascii=False, default=str))
