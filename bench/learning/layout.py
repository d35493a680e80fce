"""Where a run keeps its files. ``ROOT/plan.json``, ``state.json``, ``manifest.json``, ``results.json`` and
``curve.png`` at the top (for the real run ``bench/learning/``); what the stages make under ``ROOT/run/``, all of it
committed with the checkpoints but ``run/scratch/`` (servers' logs, the held-out arms' conversation stores)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Layout"]

_IGNORED = "scratch/\n*.log\ncheckpoint.new/\ncheckpoint.old/\n*.partial\n"


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def plan(self) -> Path:
        return self.root / "plan.json"

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def results(self) -> Path:
        return self.root / "results.json"

    @property
    def curve(self) -> Path:
        return self.root / "curve.png"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def scratch(self) -> Path:
        return self.run / "scratch"

    def arm(self, name: str) -> Path:
        return self.run / "arms" / name

    @property
    def reference(self) -> Path:
        return self.run / "reference"

    @property
    def sft(self) -> Path:
        return self.run / "sft"

    def adapter(self, name: str) -> Path:
        return self.run / "adapters" / f"{name}.gguf"

    def iteration(self, number: int) -> Path:
        return self.run / "rl" / f"iter-{number}"

    @property
    def earlier(self) -> Path:
        """Where ``scripts/learn archive`` keeps the runs made before this one, a folder each."""
        return self.root / "runs"

    def rerun(self, seed: int) -> Path:
        return self.run / "reruns" / f"seed-{seed}"

    def prepare(self) -> None:
        self.run.mkdir(parents=True, exist_ok=True)
        ignore = self.run / ".gitignore"
        if not ignore.exists():
            ignore.write_text(_IGNORED)
