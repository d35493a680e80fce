"""The result rows: the table printed at the end and the JSON written to ``bench/results/``."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

# How a checked row passes: its ratio at most / at least the limit, or its own value at most / at least it.
Check = Literal["ratio<=", "ratio>=", "value<=", "value>="]


@dataclass(frozen=True)
class Row:
    """One figure of ours, next to its baseline (when it has one); checked when ``limit`` is set."""

    section: str
    metric: str
    ours: float
    unit: str
    baseline: str = ""  # which baseline the ratio is to
    baseline_value: float | None = None
    limit: float | None = None
    check: Check = "ratio<="
    paired_ratio: float | None = None  # median over rounds of ours/baseline, when both were measured in each round
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.paired_ratio is not None:
            return self.paired_ratio
        if self.baseline_value is None or self.baseline_value == 0:
            return None
        return self.ours / self.baseline_value

    @property
    def target(self) -> str:
        if self.limit is None:
            return "-"
        what, op = self.check[:-2], self.check[-2:]
        sign = "<=" if op == "<=" else ">="
        return f"ratio {sign} {self.limit:g}" if what == "ratio" else f"{sign} {self.limit:g} {self.unit}"

    @property
    def verdict(self) -> str:
        if self.limit is None:
            return "info"
        value = self.ratio if self.check.startswith("ratio") else self.ours
        if value is None:
            return "FAIL"
        ok = value <= self.limit if self.check.endswith("<=") else value >= self.limit
        return "PASS" if ok else "FAIL"

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "target": self.target, "result": self.verdict}


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit in ("steps/s", "episodes"):
        return f"{value:,.0f}"
    if unit in ("MB", "KB", "us"):
        return f"{value:,.1f}"
    if unit == "s":
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(rows: list[Row]) -> str:
    header = ("section", "metric", "ours", "unit", "baseline", "base value", "ratio", "target", "result")
    body = [
        (
            r.section,
            r.metric,
            _number(r.ours, r.unit),
            r.unit,
            r.baseline or "-",
            _number(r.baseline_value, r.unit),
            "-" if r.ratio is None else f"{r.ratio:.2f}",
            r.target,
            r.verdict,
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]
    left = {0, 1, 3, 4, 7}
    lines = [
        "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in (header, *body)
    ]
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)


def write_json(path: Path, rows: list[Row], details: dict[str, Any], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"meta": meta, "rows": [r.as_json() for r in rows], "details": details}
    path.write_text(json.dumps(document, indent=2) + "\n")
