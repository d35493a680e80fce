"""Episodes played through the one path, ``openenv-mcp eval``, spread over the run's llama-servers.

``eval`` takes one endpoint, so an arm's tasks are dealt round-robin to one ``eval`` process per server, each with
its own ``--out`` (``OUT/part-N/trials.jsonl``). Each keeps its trials as they end and, run again with the same
arguments, skips those already there: an interrupted piece loses at most the episodes in flight. Trial ``i`` of
every task plays with seed ``--seed + i``, so two arms given the same tasks and seed play the same episodes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.learning.llama import ROOT
from bench.learning.plan import Plan

__all__ = ["collect", "eval_args", "play"]


def eval_args(plan: Plan, *, split: str, trials: int, seed: int, policy_args: list[str] | None = None) -> list[str]:
    """``openenv-mcp eval`` arguments every part of an arm shares (the part adds its endpoint, tasks and --out)."""
    sampling = plan.sampling
    args = [plan.environment, "--split", split, "--trials", str(trials), "--seed", str(seed)]
    args += ["--policy", "openai", "--temperature", str(sampling.temperature), "--max-tokens", str(sampling.max_tokens)]
    args += ["--max-turns", str(sampling.max_turns), "--timeout", str(sampling.timeout), "--tool-parser", "auto"]
    args += ["--concurrency", "1", "--no-progress", *(policy_args or [])]
    return args


def play(
    args: list[str],
    *,
    tasks: list[str],
    urls: list[str],
    model: str,
    out: Path,
    deadline: float,
    store: Path,
    attempts: int = 3,
) -> bool:
    """Play every trial of ``tasks`` (``args`` from :func:`eval_args`) over ``urls``; True when all have ended
    without an error, False when ``deadline`` (a ``time.monotonic()`` value) came first."""
    parts = [tasks[index :: len(urls)] for index in range(len(urls))]
    environment = {**os.environ, "OPENENV_TRAJECTORIES": f"sqlite:///{store}"}
    store.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(attempts):
        processes = []
        for number, (url, part) in enumerate(zip(urls, parts, strict=True)):
            if not part:
                continue
            command = [sys.executable, "-m", "openenv_mcp.cli", "eval", *args, "--base-url", f"{url}/v1"]
            command += ["--model", model, "--out", str(out / f"part-{number}")]
            command += [item for task in part for item in ("--task", task)]
            (out / f"part-{number}").mkdir(parents=True, exist_ok=True)
            log = (out / f"part-{number}" / "eval.log").open("ab")
            processes.append(
                (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=environment), log)
            )
        finished = _wait(processes, deadline, progress=lambda: _progress(out, len(tasks) * _trials(args)))
        if not finished:
            return False
        if all(process.returncode == 0 for process, _ in processes):
            return True
    return False


def _trials(args: list[str]) -> int:
    return int(args[args.index("--trials") + 1])


def _progress(out: Path, total: int) -> str:
    played = collect(out)
    rewarded = sum(t["reward"] >= 1 for t in played)
    return f"{out.name}: {len(played)}/{total} episodes, {rewarded} rewarded"


def _wait(
    processes: list[tuple[subprocess.Popen[bytes], Any]], deadline: float, *, progress: Callable[[], str]
) -> bool:
    """Wait for every process, printing ``progress()`` when it changes; at ``deadline`` interrupt them all (their
    finished trials are kept) and say so."""
    shown = ""
    try:
        while any(process.poll() is None for process, _ in processes):
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("openenv-mcp eval", 0)
            if (line := progress()) != shown:
                print(line, flush=True)
                shown = line
            time.sleep(2)
        return True
    except subprocess.TimeoutExpired:
        for process, _ in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process, _ in processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        return False
    finally:
        for _, log in processes:
            log.close()


def collect(out: Path) -> list[dict[str, Any]]:
    """The trials that ended without an error, from every part under ``out``, in task and trial order."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for path in sorted(out.glob("part-*/trials.jsonl")):
        lines = path.read_text().splitlines()[1:]
        for line in lines:
            if line.strip():
                trial = json.loads(line)
                found[(trial["task_id"], trial["index"])] = trial  # a later line (a replayed failure) wins
    return [trial for _, trial in sorted(found.items()) if trial.get("error") is None]
