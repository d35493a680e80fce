"""``openenv-mcp tasks NAME``: an environment's task set (counts per split and difficulty, a few samples) and its
check (hygiene, and reference solutions played to reward 1.0 through the one path)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from openenv_mcp.cli.runs import positive
from openenv_mcp.environment.tasks import by_difficulty

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``tasks`` to the ``openenv-mcp`` parser."""
    tasks = commands.add_parser(
        "tasks",
        help="an environment's tasks: counts per split and difficulty, samples, and --check that plays them",
        description="Without --check: the counts and a few tasks. With --check: the hygiene of the whole set (unique "
        "ids and prompts, a difficulty on every task, the tiers easy, medium and hard) and each sampled task's "
        "reference solution played in process through the one path to reward 1.0; the exit code is 1 when "
        "anything fails.",
    )
    tasks.set_defaults(handler=_tasks)
    tasks.add_argument("target", help="an installed server's NAME, or a project PATH (with pyproject.toml)")
    tasks.add_argument("--split", help="show and check only this split")
    tasks.add_argument("--difficulty", help="show and check only this difficulty")
    tasks.add_argument("--show", type=int, default=3, help="tasks to show (default 3; 0 for none)")
    tasks.add_argument("--check", action="store_true", help="check the task set by playing its references")
    played = tasks.add_mutually_exclusive_group()
    played.add_argument("--sample", type=positive, default=50, help="with --check: references to play (default 50)")
    played.add_argument("--all", action="store_true", help="with --check: play every task's reference")
    tasks.add_argument("--seed", type=int, default=0, help="the draw of the samples and the episodes' seed (0)")
    tasks.add_argument("--concurrency", "-c", type=positive, default=4, help="episodes at once (default 4)")
    tasks.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    tasks.add_argument("--no-progress", action="store_true", help="no progress bar")


def _tasks(args: argparse.Namespace) -> int:
    from openenv_mcp.authoring.tasksets import check_task_set
    from openenv_mcp.cli.authoring import load_target
    from openenv_mcp.environment.tasks import stratified_sample

    env, _ = load_target(args.target)
    task_set = env.tasks()
    chosen = task_set.select(split=args.split, difficulty=args.difficulty)
    shown = stratified_sample(chosen, args.show, seed=args.seed, key=lambda t: (t.split, t.difficulty or "-"))
    document: dict[str, Any] = {
        "environment": env.name,
        "tasks": len(chosen),
        "counts": _counts(chosen),
        "samples": [{"id": t.id, "split": t.split, "difficulty": t.difficulty, "prompt": t.prompt} for t in shown],
    }
    if not args.json:
        print(_render(document))
    if not args.check:
        if args.json:
            print(json.dumps(document, indent=2))
        return 0
    report = check_task_set(
        env,
        tasks=chosen,
        sample=None if args.all else args.sample,
        seed=args.seed,
        concurrency=args.concurrency,
        tiers=None if args.split or args.difficulty else ("easy", "medium", "hard"),
        on_played=_progress(min(len(chosen), args.sample) if not args.all else len(chosen), args.no_progress),
    )
    if args.json:
        print(json.dumps({**document, "check": report.as_json()}, indent=2))
    else:
        print(report.render(counts=False))
    return 0 if report.ok else 1


def _counts(tasks: list[Any]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for task in tasks:
        tiers = counts.setdefault(task.split, {})
        tiers[task.difficulty or "-"] = tiers.get(task.difficulty or "-", 0) + 1
    return {split: dict(sorted(tiers.items(), key=lambda kv: by_difficulty(kv[0]))) for split, tiers in counts.items()}


def _render(document: dict[str, Any]) -> str:
    tiers = sorted({tier for by_tier in document["counts"].values() for tier in by_tier}, key=by_difficulty)
    lines = [f"{document['environment']}: {document['tasks']} tasks", f"  {'split':<10}{'all':>7}"]
    lines[-1] += "".join(f"{tier:>9}" for tier in tiers)
    for split, by_tier in document["counts"].items():
        row = f"  {split:<10}{sum(by_tier.values()):>7}" + "".join(f"{by_tier.get(t, 0):>9}" for t in tiers)
        lines.append(row)
    for task in document["samples"]:
        first = task["prompt"].splitlines()[0] if task["prompt"] else ""
        lines.append(f"- {task['id']} ({task['split']}, {task['difficulty'] or 'no difficulty'}): {first[:160]}")
    return "\n".join(lines)


def _progress(total: int, off: bool) -> Any:
    from tqdm import tqdm

    bar = tqdm(total=total, unit="task", file=sys.stderr, disable=off, dynamic_ncols=True, leave=False)

    def played(task: Any, failure: str | None) -> None:
        bar.update()
        if failure is not None:
            bar.write(f"failed: {failure}", file=sys.stderr)
        if bar.n >= total:
            bar.close()

    return played
