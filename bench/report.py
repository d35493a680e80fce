"""The result rows: the table printed at the end and the JSON written to bench/results/latest.json."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

Check = Literal["ratio", "absolute"]


@dataclass(frozen=True)
class Row:
    """One metric: ours against a baseline (or alone); checked when ``limit`` is set, else informational."""

    metric: str
    ours_ms: float
    baseline_ms: float | None = None
    limit: float | None = None
    check: Check = "ratio"
    baseline: str = ""
    paired_ratio: float | None = None  # median over rounds of ours/baseline, when measured in rounds

    @property
    def ratio(self) -> float | None:
        if self.paired_ratio is not None:
            return self.paired_ratio
        return None if self.baseline_ms is None else self.ours_ms / self.baseline_ms

    @property
    def target(self) -> str:
        if self.limit is None:
            return "-"
        return f"ratio <= {self.limit:g}" if self.check == "ratio" else f"<= {self.limit:g} ms"

    @property
    def verdict(self) -> str:
        if self.limit is None:
            return "info"
        value = self.ratio if self.check == "ratio" else self.ours_ms
        return "PASS" if value is not None and value <= self.limit else "FAIL"

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "target": self.target, "result": self.verdict}


def table(rows: list[Row]) -> str:
    header = ("metric", "ours ms", "baseline ms", "ratio", "target", "result")
    body = [
        (
            r.metric,
            f"{r.ours_ms:.3f}",
            "-" if r.baseline_ms is None else f"{r.baseline_ms:.3f}",
            "-" if r.ratio is None else f"{r.ratio:.2f}",
            r.target,
            r.verdict,
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in (header, *body)
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def write_json(path: Path, rows: list[Row], details: dict[str, Any], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"meta": meta, "rows": [r.as_json() for r in rows], "details": details}
    path.write_text(json.dumps(document, indent=2) + "\n")
