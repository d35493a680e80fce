"""``openenv-mcp eval SERVER``: k trials of every task of a split, pass@k and pass^k, JSON and HTML reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from openenv_mcp.cli.rollout import add_policy_arguments, positive

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
    evaluate.add_argument(
        "server", help="a running sim server's URL (http://host:port), or an installed server's name to start here"
    )
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
    import anyio

    return anyio.run(_main, args)


async def _main(args: argparse.Namespace) -> int:
    import json
    from contextlib import AsyncExitStack

    from tqdm import tqdm

    from openenv_mcp.cli.rollout import choose_policy, scripted_for
    from openenv_mcp.client import AsyncEnvClient
    from openenv_mcp.client.discovery import ServerProcess, discover
    from openenv_mcp.environment.tasks import stratified_sample
    from openenv_mcp.errors import ConfigError, EpisodeError
    from openenv_mcp.evaluation.report import render_html
    from openenv_mcp.evaluation.run import Trial, TrialLog, evaluate
    from openenv_mcp.settings import Settings, load_settings

    settings = load_settings(Settings)
    token = settings.auth_token.get_secret_value() if settings.auth_token is not None else None
    async with AsyncExitStack() as stack:
        chosen = await choose_policy(args, settings, stack)
        url = args.server
        if not url.startswith(("http://", "https://")):
            from openenv_mcp.environment.catalog import load_environment

            load_environment(url)  # an unknown name fails here, listing the installed ones
            url = (await stack.enter_async_context(ServerProcess(args.server))).url
        server = await discover(url, token=token)
        policy = chosen if chosen is not None else scripted_for(server)
        async with AsyncEnvClient(url, token=token) as client:
            try:
                listed = await client.tasks(split=args.split, difficulty=args.difficulty)
            except EpisodeError as exc:  # no such split or difficulty: the message lists those there are
                raise ConfigError(f"Server {server.name!r}: {exc.message}") from None
        task_ids = [t.id for t in listed.tasks]
        if args.tasks:
            unknown = sorted(set(args.tasks) - set(task_ids))
            if unknown:
                raise ConfigError(f"No task {', '.join(unknown)} in split {args.split!r} of {server.name!r}")
            task_ids = [t for t in task_ids if t in set(args.tasks)]
        difficulties = {t.id: t.difficulty for t in listed.tasks}
        if args.sample is not None:
            drawn = stratified_sample(task_ids, args.sample, seed=args.seed, key=lambda i: difficulties[i] or "-")
            task_ids = sorted(drawn)
        run = {
            "server": server.name,
            "split": args.split,
            "k": args.trials,
            "policy": args.policy,
            "seed": args.seed,
            "threshold": args.success_threshold,
            "tasks": task_ids,
        }
        trials_file = args.out / "trials.jsonl"
        if args.restart:
            trials_file.unlink(missing_ok=True)
        log = TrialLog(trials_file, run)
        todo = len(task_ids) * args.trials - len(log.finished())
        print(
            f"eval: {server.name} at {url}, split {args.split}, {len(task_ids)} tasks x {args.trials} trials, "
            f"policy {args.policy}; {todo} to run ({len(task_ids) * args.trials - todo} already in {trials_file})",
            file=sys.stderr,
        )
        bar = tqdm(total=todo, unit="trial", file=sys.stderr, disable=args.no_progress, dynamic_ncols=True)

        def advance(trial: Trial) -> None:
            bar.update()

        try:
            result = await evaluate(
                url,
                policy,
                task_ids=task_ids,
                k=args.trials,
                log=log,
                seed=args.seed,
                concurrency=args.concurrency,
                server=server,
                threshold=args.success_threshold,
                on_trial=advance,
                token=token,
                difficulties=difficulties,
            )
        finally:
            bar.close()
    (args.out / "results.json").write_text(json.dumps(result.as_json(), indent=2) + "\n")
    (args.out / "report.html").write_text(render_html(result))
    print(result.render())
    print(f"results: {args.out / 'results.json'}, report: {args.out / 'report.html'}", file=sys.stderr)
    return 1 if result.errors else 0
