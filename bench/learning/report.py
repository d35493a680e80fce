"""The run's results (``results.json``), its manifest (``manifest.json``, issue 33's format) and its curve.

Every arm's held-out episodes are listed (task id, seed, reward, end reason) with its pass rate (Wilson 95%),
mean reward (95%), end reasons, and the differences between arms (Newcombe 95%); beside them the training curve
(SFT loss by step, RL's sampled reward by iteration), every evaluation run made (reruns included: none is left
out), what each stage cost (wall and CPU), and the versions of everything that ran.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from bench.learning import adapter, episodes, llama
from bench.learning.layout import Layout
from bench.learning.ledger import Ledger
from bench.learning.plan import Plan
from bench.learning.stats import mean_interval, newcombe_interval, wilson_interval

__all__ = ["arm_summary", "compare", "earlier", "manifest", "write"]

ARMS = ("base", "warm_start", "trained")


def arm_summary(trials: list[dict[str, Any]], *, threshold: float = 1.0) -> dict[str, Any]:
    """An arm's episodes and figures."""
    rewards = [float(t["reward"]) for t in trials]
    passed = sum(r >= threshold for r in rewards)
    mean, low, high = mean_interval(rewards)
    return {
        "episodes": [
            {"task_id": t["task_id"], "seed": t["seed"], "reward": t["reward"], "end_reason": t.get("end_reason")}
            for t in trials
        ],
        "n": len(trials),
        "passed": passed,
        "pass_rate": passed / len(trials) if trials else 0.0,
        "pass_rate_95": list(wilson_interval(passed, len(trials))),
        "mean_reward": mean,
        "mean_reward_95": [low, high],
        "end_reasons": dict(Counter(t.get("end_reason") or "?" for t in trials).most_common()),
        "seconds": sum(float(t.get("seconds", 0.0)) for t in trials),
    }


def compare(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """``after`` minus ``before``: pass rate difference with Newcombe's 95% interval, mean reward difference."""
    low, high = newcombe_interval(after["passed"], after["n"], before["passed"], before["n"])
    return {
        "pass_rate": after["pass_rate"] - before["pass_rate"],
        "pass_rate_95": [low, high],
        "mean_reward": after["mean_reward"] - before["mean_reward"],
        "same_episodes": sorted((e["task_id"], e["seed"]) for e in after["episodes"])
        == sorted((e["task_id"], e["seed"]) for e in before["episodes"]),
    }


def manifest(layout: Layout, plan: Plan) -> dict[str, Any]:
    """What re-runs the held-out comparison: issue 33's fields, plus the model's name in scripts/small_model.py."""
    model = llama.model_file(plan.model)
    trained = layout.adapter("trained")
    return {
        "environment": plan.environment,
        "split": plan.split,
        "difficulty": plan.difficulty,
        "base_model": {
            "packages": llama.model_pins(plan.model),
            "file": f"{plan.model}.gguf",
            "sha256": adapter.sha256(model),
            "name": plan.model,
        },
        "adapter": llama.from_root(trained),
        "llama_server_args": llama.server_args(plan, lora=llama.from_root(trained)),
        "eval_args": episodes.eval_args(plan, split=plan.split, trials=plan.trials, seed=plan.seed)
        + [item for task in plan.test_tasks for item in ("--task", task)],
        "results": llama.from_root(layout.results),
    }


def _runs(layout: Layout) -> list[dict[str, Any]]:
    """Every evaluation made under the run: its folder, what it was (its trial log's first line) and its count."""
    found = []
    for log in sorted(layout.run.rglob("trials.jsonl")):
        lines = log.read_text().splitlines()
        if not lines:
            continue
        found.append({"path": llama.from_root(log), "run": json.loads(lines[0])["run"], "trials": len(lines) - 1})
    return found


def earlier(layout: Layout) -> list[dict[str, Any]]:
    """Every run set aside before this one (``scripts/learn archive``): why, and its arms' and differences' figures."""
    found = []
    for why in sorted(layout.earlier.glob("*/why.json")):
        results = why.parent / "results.json"
        summary: dict[str, Any] = {**json.loads(why.read_text()), "results": llama.from_root(results)}
        if results.exists():
            made = json.loads(results.read_text())
            keys = ("n", "passed", "pass_rate", "pass_rate_95", "mean_reward", "end_reasons")
            summary["arms"] = {arm: {k: a[k] for k in keys} for arm, a in made["arms"].items()}
            summary["differences"] = {
                name: {k: d[k] for k in ("pass_rate", "pass_rate_95")} for name, d in made["differences"].items()
            }
            summary["rl_iterations"] = made["curve"]["rl_iterations"]
        found.append(summary)
    return found


def _versions(python: Path) -> dict[str, Any]:
    code = (
        "import importlib.metadata as m, json, sys; print(json.dumps({n: m.version(n) for n in "
        "['torch', 'transformers', 'peft', 'gguf', 'numpy', 'matplotlib', 'safetensors', 'accelerate']} "
        "| {'python': sys.version.split()[0]}))"
    )
    learning = json.loads(subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout)
    frozen = subprocess.run([str(python), "-m", "pip", "freeze"], check=True, capture_output=True, text=True).stdout
    learning["freeze"] = frozen.split()
    from importlib.metadata import version

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=llama.ROOT, capture_output=True, text=True).stdout
    return {
        "learning_venv": learning,
        "llama.cpp": llama.llama_version(),
        "openenv-mcp": version("openenv-mcp"),
        "commit": commit.strip(),
    }


def _curve(layout: Layout, ledger: Ledger) -> dict[str, Any]:
    sft_state = layout.sft / "checkpoint" / "state.json"
    losses = json.loads(sft_state.read_text())["losses"] if sft_state.exists() else []
    iterations = ledger.stage("rl").get("iterations", [])
    updates = []  # each iteration's update: the loss by step on its rewarded samples
    for it in iterations:
        state = layout.iteration(it["iteration"]) / "update" / "checkpoint" / "state.json"
        if state.exists():
            updates.append({"iteration": it["iteration"], "losses": json.loads(state.read_text())["losses"]})
    return {"sft_loss": losses, "rl_iterations": iterations, "rl_loss": updates}


def write(layout: Layout, plan: Plan, ledger: Ledger, *, python: Path) -> dict[str, Any]:
    """Write results.json, manifest.json and curve.png; return the results."""
    arms = {arm: arm_summary(episodes.collect(layout.arm(arm))) for arm in ARMS}
    described = manifest(layout, plan)
    results: dict[str, Any] = {
        "plan": llama.from_root(layout.plan),
        "environment": plan.environment,
        "split": plan.split,
        "difficulty": plan.difficulty,
        "arms": arms,
        "differences": {
            "trained_vs_base": compare(arms["trained"], arms["base"]),
            "warm_start_vs_base": compare(arms["warm_start"], arms["base"]),
            "trained_vs_warm_start": compare(arms["trained"], arms["warm_start"]),
        },
        "curve": _curve(layout, ledger),
        "runs": _runs(layout),
        "reruns": [json.loads(p.read_text()) for p in sorted(layout.run.glob("reruns/*/summary.json"))],
        "earlier_runs": earlier(layout),
        "reference": ledger.stage("reference"),
        "costs": {name: {"wall": s.get("wall"), "cpu": s.get("cpu")} for name, s in ledger.data["stages"].items()},
        "pieces": ledger.data["pieces"],
        "adapters": {
            name: {
                "path": llama.from_root(layout.adapter(name)),
                "sha256": adapter.sha256(layout.adapter(name)),
                "bytes": layout.adapter(name).stat().st_size,
            }
            for name in ("warm_start", "trained")
            if layout.adapter(name).exists()
        },
        "base_model": described["base_model"],
        "versions": _versions(python),
    }
    layout.results.write_text(json.dumps(results, indent=1) + "\n")
    layout.manifest.write_text(json.dumps(described, indent=1) + "\n")
    command = [str(python), "-m", "bench.learning.curve", str(layout.results), str(layout.curve)]
    subprocess.run(command, check=True, cwd=llama.ROOT, capture_output=True)
    return results
