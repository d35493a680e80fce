"""``openenv-mcp eval SERVER``: k trials of every task of a split, pass@k and pass^k, JSON and HTML reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openenv_mcp.cli.runs import add_policy_arguments, add_server_argument, positive, run_stoppable

if TYPE_CHECKING:
    from openenv_mcp.cli.runs import Run
    from openenv_mcp.evaluation.run import Evaluation, TrialLog

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``eval`` to the ``openenv-mcp`` parser."""
    evaluate = commands.add_parser(
        "eval",
        help="run k trials of every task of a split with a policy; report pass@k, pass^k and mean reward",
        description="Trials go to OUT/trials.jsonl as they end; running the same command again resumes an "
        "interrupted run without redoing finished trials. OUT/results.json and OUT/report.html hold the results.",
    )
    evaluate.set_defaults(handler=_eval)
    add_server_argument(evaluate, "a running sim server's URL")
    evaluate.add_argument("--split", default="test", help="the split whose tasks are evaluated (default test)")
    evaluate.add_argument("--trials", "-k", type=positive, default=3, help="trials per task (default 3)")
    evaluate.add_argument("--task", action="append", dest="tasks", help="only this task (repeatable)")
    evaluate.add_argument("--difficulty", help="only the tasks of this difficulty tier")
    evaluate.add_argument(
        "--sample", type=positive, help="only this many tasks, drawn with --seed, every difficulty tier first"
    )
    evaluate.add_argument("--seed", type=int, default=0, help="trial i of each task runs with seed SEED+i (0)")
    evaluate.add_argument("--concurrency", "-c", type=positive, default=4, help="episodes at once (default 4)")
    evaluate.add_argument("--success-threshold", type=float, default=1.0, help="reward that counts as a success (1)")
    evaluate.add_argument("--out", type=Path, default=Path("eval-results"), help="results directory (eval-results)")
    evaluate.add_argument("--restart", action="store_true", help="discard the trials already in OUT and start over")
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_policy_arguments(evaluate)


def _eval(args: argparse.Namespace) -> int:
    return run_stoppable(_main, args)


async def _main(args: argparse.Namespace) -> int:
    from contextlib import AsyncExitStack

    from tqdm import tqdm

    from openenv_mcp.cli.runs import open_run
    from openenv_mcp.evaluation.run import Trial, evaluate

    async with AsyncExitStack() as stack:
        run = await open_run(args, stack)
        task_ids, difficulties = await _task_ids(args, run)
        log = _trial_log(args, run, task_ids)
        todo = len(task_ids) * args.trials - len(log.finished())
        print(
            f"eval: {run.server.name} at {run.where}, split {args.split}, "
            f"{len(task_ids)} tasks x {args.trials} trials, "
            f"{_policy(run)}; {todo} to run ({len(task_ids) * args.trials - todo} already in {log.path})",
            file=sys.stderr,
        )
        bar = tqdm(total=todo, unit="trial", file=sys.stderr, disable=args.no_progress, dynamic_ncols=True)

        def advance(trial: Trial) -> None:
            bar.update()

        try:
            result = await evaluate(
                run.urls,
                run.policy,
                task_ids=task_ids,
                k=args.trials,
                log=log,
                seed=args.seed,
                batch=run.batch(args),
                on_trial=advance,
                difficulties=difficulties,
            )
        finally:
            bar.close()
    _write_reports(args.out, result)
    print(result.render())
    if result.resumes:
        from openenv_mcp.rollout.runner import resumed

        print(f"resumed: {resumed(result.resumes)}", file=sys.stderr)
    print(f"results: {args.out / 'results.json'}, report: {args.out / 'report.html'}", file=sys.stderr)
    return 1 if result.infra else 0  # trials left to play again


async def _task_ids(args: argparse.Namespace, run: Run) -> tuple[list[str], dict[str, str | None]]:
    """The tasks of ``--split`` and ``--difficulty`` (only those of ``--task`` when given; a seeded sample of every
    tier with ``--sample``), checked against the server's list; and each task's difficulty."""
    from openenv_mcp.client import AsyncEnvClient
    from openenv_mcp.environment.tasks import stratified_sample
    from openenv_mcp.errors import ConfigError, EpisodeError

    name = run.server.name
    async with AsyncEnvClient(run.url, token=run.token) as client:
        try:
            listed = await client.tasks(split=args.split, difficulty=args.difficulty)
        except EpisodeError as exc:  # no such split or difficulty: the message lists those there are
            raise ConfigError(f"Server {name!r}: {exc.message}") from None
    task_ids = [t.id for t in listed.tasks]
    if args.tasks:
        unknown = sorted(set(args.tasks) - set(task_ids))
        if unknown:
            raise ConfigError(f"No task {', '.join(unknown)} in split {args.split!r} of {name!r}")
        task_ids = [t for t in task_ids if t in set(args.tasks)]
    difficulties = {t.id: t.difficulty for t in listed.tasks}
    if args.sample is not None:
        drawn = stratified_sample(task_ids, args.sample, seed=args.seed, key=lambda i: difficulties[i] or "-")
        task_ids = sorted(drawn)
    return task_ids, difficulties


def _trial_log(args: argparse.Namespace, run: Run, task_ids: list[str]) -> TrialLog:
    """``OUT/trials.jsonl`` for this run (emptied first with ``--restart``): what resuming starts from."""
    from openenv_mcp.evaluation.run import TrialLog

    described = {
        "server": run.server.name,
        "split": args.split,
        "k": args.trials,
        **run.identity,  # the policy; a chat model's name, endpoint, sampling settings, turn cap and parser
        "seed": args.seed,
        "threshold": args.success_threshold,
        "tasks": task_ids,
    }
    trials_file = args.out / "trials.jsonl"
    if args.restart:
        trials_file.unlink(missing_ok=True)
    return TrialLog(trials_file, described)


def _policy(run: Run) -> str:
    """The policy as the header line names it."""
    identity = run.identity
    if "model" not in identity:
        return f"policy {identity.get('policy')}"
    if "harness" in identity:
        return (
            f"harness {identity['harness']}, model {identity['model']} behind a capture proxy at {identity['base_url']}"
        )
    return f"model {identity['model']} at {identity['base_url']} (tool parser {identity['tool_parser']})"


def _write_reports(out: Path, result: Evaluation) -> None:
    import json

    from openenv_mcp.evaluation.report import render_html

    (out / "results.json").write_text(json.dumps(result.as_json(), indent=2) + "\n")
    (out / "report.html").write_text(render_html(result))
