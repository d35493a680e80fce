"""``scripts/learn``: the learning run of issue 33 (docs/learning.md).

    scripts/learn run --hours 2.5 [--commit]   # the next stages until 2.5 h are spent; resumable
    scripts/learn status                        # where the run stands, what it cost so far
    scripts/learn dev --label NAME [...]        # try settings on the dev slice of the train split (never test)
    scripts/learn rerun --seed 7 [--commit]     # base vs the committed adapter on other test tasks and seeds
    scripts/learn archive NAME --why TEXT [--keep base]   # set the run aside (listed in the next one's results)

``--root DIR`` keeps a run elsewhere than ``bench/learning`` (the toy test's); ``--toy`` makes its plan the toy one.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path

from bench.learning import episodes, llama, report, stages
from bench.learning.layout import Layout
from bench.learning.ledger import Ledger
from bench.learning.plan import Plan, Sampling, full_plan, toy_plan
from bench.learning.venv import require

DEFAULT_ROOT = Path(__file__).resolve().parent


def _free_ports(count: int) -> tuple[int, ...]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for one in sockets:
            one.bind(("127.0.0.1", 0))
        return tuple(one.getsockname()[1] for one in sockets)
    finally:
        for one in sockets:
            one.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/learn", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the run's folder (bench/learning)")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="do the next stages until --hours are spent (checkpoints as it goes)")
    run.add_argument("--hours", type=float, required=True, help="this piece's budget (at most 2.5 on the CPU)")
    run.add_argument("--commit", action="store_true", help="git-commit the run's files after each stage and at the end")
    run.add_argument("--toy", action="store_true", help="a new run uses the toy plan (the CI test's)")
    commands.add_parser("status", help="where the run stands and what it cost so far")
    dev = commands.add_parser("dev", help="play the dev slice of the train split with some settings")
    dev.add_argument("--label", required=True, help="a name for this try (its folder under run/dev/)")
    dev.add_argument("--adapter", type=Path, help="a GGUF adapter to serve (default: the base model)")
    dev.add_argument("--temperature", type=float)
    dev.add_argument("--max-tokens", type=int)
    dev.add_argument("--max-turns", type=int)
    rerun = commands.add_parser("rerun", help="base vs the manifest's adapter on another sample of test tasks")
    rerun.add_argument("--seed", type=int, required=True, help="draws the tasks; trial i plays with seed SEED+i")
    rerun.add_argument("--commit", action="store_true", help="git-commit the rerun and the report it updates")
    archive = commands.add_parser("archive", help="move the run so far to runs/NAME; the next run starts again")
    archive.add_argument("name", help="the archived run's folder under runs/")
    archive.add_argument("--why", required=True, help="why it was set aside (kept in runs/NAME/why.json)")
    archive.add_argument("--keep", action="append", default=[], help="an arm to carry into the new run (base)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    layout = Layout(args.root.resolve())
    if args.command == "status":
        return _status(layout)
    if args.command == "archive":
        try:
            target = stages.archive(layout, args.name, args.why, tuple(args.keep))
        except (FileExistsError, ValueError) as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"archived to {target}; `scripts/learn run` starts the next run on the same plan")
        return 0
    python = require()
    if args.command == "run":
        make = (lambda: toy_plan(ports=_free_ports(2))) if args.toy else full_plan
        finished = stages.run(layout, python=python, hours=args.hours, commit=args.commit, make=make)
        _status(layout)
        return 0 if finished else 3
    plan = Plan.load(layout.plan)
    if args.command == "dev":
        return _dev(layout, plan, args)
    return _rerun(layout, plan, args.seed, python=python, commit=args.commit)


def _status(layout: Layout) -> int:
    if not layout.plan.exists():
        print(f"No run in {layout.root} yet: `scripts/learn run --hours H` starts one")
        return 0
    plan, ledger = Plan.load(layout.plan), Ledger(layout.state)
    print(
        f"plan: {plan.environment} {plan.difficulty}, {plan.model}, {len(plan.test_tasks)} test tasks x "
        f"{plan.trials} seeds = {plan.episodes} held-out episodes per arm, {len(plan.train_tasks)} train tasks"
    )
    for name in ["plan", *stages.STAGES]:
        record = ledger.stage(name)
        extra = ""
        if name in report.ARMS:
            extra = f"{len(episodes.collect(layout.arm(name)))}/{plan.episodes} episodes"
        elif name == "sft" and (layout.sft / "checkpoint" / "state.json").exists():
            state = json.loads((layout.sft / "checkpoint" / "state.json").read_text())
            extra = f"step {state['step']}/{state['steps']}"
        elif name == "rl":
            extra = f"{sum(1 for it in record.get('iterations', []) if it.get('done'))}/{plan.rl_iterations} iterations"
        status = "done" if record["done"] else "to do"
        print(f"  {name:<11}{status:<7}{record['wall'] / 3600:6.2f} h wall {record['cpu'] / 3600:6.2f} h CPU  {extra}")
    pieces = ledger.data["pieces"]
    print(f"pieces: {len(pieces)}, {sum(p.get('wall', 0) for p in pieces) / 3600:.2f} h of wall time in all")
    return 0


def _dev(layout: Layout, plan: Plan, args: argparse.Namespace) -> int:
    """Play the dev slice (train tasks kept out of training) with the given settings; append to dev.json."""
    sampling = Sampling(
        temperature=args.temperature if args.temperature is not None else plan.sampling.temperature,
        max_tokens=args.max_tokens or plan.sampling.max_tokens,
        max_turns=args.max_turns or plan.sampling.max_turns,
        timeout=plan.sampling.timeout,
    )
    tried = replace(plan, sampling=sampling)
    out = layout.run / "dev" / args.label
    command = episodes.eval_args(tried, split="train", trials=1, seed=plan.seed)
    with llama.servers(tried, logs=layout.scratch / "dev", lora=args.adapter) as urls:
        episodes.play(
            command,
            tasks=list(plan.dev_tasks),
            urls=urls,
            model=f"{plan.model}+dev-{args.label}",
            out=out,
            deadline=time.monotonic() + 24 * 3600,
            store=layout.scratch / "dev.db",
        )
    summary = report.arm_summary(episodes.collect(out))
    summary.pop("episodes")
    entry = {
        "label": args.label,
        "adapter": str(args.adapter) if args.adapter else None,
        "sampling": sampling.__dict__,
        **summary,
    }
    listed = layout.root / "dev.json"
    tries = json.loads(listed.read_text()) if listed.exists() else []
    listed.write_text(json.dumps([*tries, entry], indent=1) + "\n")
    print(json.dumps(entry, indent=1))
    return 0


def _rerun(layout: Layout, plan: Plan, seed: int, *, python: Path, commit: bool) -> int:
    """The held-out comparison again, from the manifest, on another draw of the tier's test tasks with other seeds.
    Played episodes are kept, so a stopped rerun resumes; a finished one is added to the run's results."""
    from openenv_mcp.environment.catalog import load_environment
    from openenv_mcp.environment.tasks import stratified_sample

    if seed < plan.seed + plan.trials and plan.seed < seed + plan.trials:
        print(f"Seeds {seed}..{seed + plan.trials - 1} overlap the plan's; give another --seed", file=sys.stderr)
        return 2
    manifest = json.loads(layout.manifest.read_text())
    tier = load_environment(plan.environment).tasks().select(split=plan.split, difficulty=plan.difficulty)
    tasks = sorted(stratified_sample([t.id for t in tier], len(plan.test_tasks), seed=seed, key=lambda _: 0))
    folder = layout.rerun(seed)
    adapter_path = Path(manifest["adapter"])
    adapter_path = adapter_path if adapter_path.is_absolute() else llama.ROOT / adapter_path
    arms = {}
    for arm, lora in (("base", None), ("trained", adapter_path)):
        command = episodes.eval_args(plan, split=plan.split, trials=plan.trials, seed=seed)
        with llama.servers(plan, logs=layout.scratch / f"rerun-{seed}", lora=lora) as urls:
            episodes.play(
                command,
                tasks=tasks,
                urls=urls,
                model=f"{plan.model}+{arm}" if lora else plan.model,
                out=folder / arm,
                deadline=time.monotonic() + 24 * 3600,
                store=layout.scratch / "rerun.db",
            )
        arms[arm] = report.arm_summary(episodes.collect(folder / arm))
    summary = {
        "seed": seed,
        "tasks": tasks,
        "shared_with_plan": len(set(tasks) & set(plan.test_tasks)),
        "arms": arms,
        "trained_vs_base": report.compare(arms["trained"], arms["base"]),
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    difference = report.compare(arms["trained"], arms["base"])
    print(
        f"rerun seed {seed}: base {arms['base']['pass_rate']:.2f}, trained {arms['trained']['pass_rate']:.2f}, "
        f"difference {difference['pass_rate']:+.2f} (95% {difference['pass_rate_95'][0]:+.2f} to "
        f"{difference['pass_rate_95'][1]:+.2f})"
    )
    ledger = Ledger(layout.state)
    if ledger.done("report"):
        report.write(layout, plan, ledger, python=python)
    if commit:
        stages.commit_files(
            layout, f"learning run: rerun on seed {seed} ({difference['pass_rate']:+.2f} trained vs base)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
