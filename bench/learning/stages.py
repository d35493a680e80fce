"""The stages of a learning run, in order, each resumable: plan, base, reference, sft, warm_start, rl, trained,
report. :func:`run` does the next stages until its deadline, writing the ledger after every unit of work (an
episode, an SFT step, an RL iteration's phase) and, with ``commit``, committing the run's files after each stage
and at the end of the piece."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.learning import adapter, episodes, examples, llama
from bench.learning.layout import Layout
from bench.learning.ledger import Ledger
from bench.learning.plan import Plan, Training, full_plan

__all__ = ["STAGES", "Context", "archive", "run"]


@dataclass
class Context:
    """A piece of the run: where it lives, the venv that trains, the plan, the ledger, and when to stop."""

    layout: Layout
    python: Path  # the learning venv's python (scripts/learning-deps)
    plan: Plan
    ledger: Ledger
    deadline: float  # time.monotonic() value
    commit: bool = False

    def left(self) -> float:
        return self.deadline - time.monotonic()


def _label(plan: Plan, arm: str) -> str:
    return plan.model if arm == "base" else f"{plan.model}+{arm}"


def _arm(ctx: Context, arm: str, lora: Path | None) -> bool:
    plan, layout = ctx.plan, ctx.layout
    args = episodes.eval_args(plan, split=plan.split, trials=plan.trials, seed=plan.seed)
    with llama.servers(plan, logs=layout.scratch / arm, lora=lora) as urls:
        complete = episodes.play(
            args,
            tasks=list(plan.test_tasks),
            urls=urls,
            model=_label(plan, arm),
            out=layout.arm(arm),
            deadline=ctx.deadline,
            store=layout.scratch / f"{arm}.db",
        )
    played = episodes.collect(layout.arm(arm))
    ctx.ledger.stage(arm).update(episodes=len(played), of=plan.episodes)
    return complete and len(played) == plan.episodes


def stage_base(ctx: Context) -> bool:
    return _arm(ctx, "base", None)


def stage_warm_start(ctx: Context) -> bool:
    return _arm(ctx, "warm_start", ctx.layout.adapter("warm_start"))


def stage_trained(ctx: Context) -> bool:
    return _arm(ctx, "trained", ctx.layout.adapter("trained"))


def _export(store: Path, target: Path, *, min_reward: float, done_only: bool) -> list[dict[str, Any]]:
    """The store's episodes with at least ``min_reward`` (and finished by the environment, with ``done_only``),
    through ``openenv-mcp trajectories export``."""
    command = [sys.executable, "-m", "openenv_mcp.cli", "trajectories", "export", "--url", f"sqlite:///{store}"]
    command += ["--min-reward", str(min_reward), "-o", str(target), *(["--done-only"] if done_only else [])]
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(command, check=True, cwd=llama.ROOT, stderr=subprocess.DEVNULL)
    return [json.loads(line) for line in target.read_text().splitlines() if line.strip()]


def stage_reference(ctx: Context) -> bool:
    """The scripted policy plays every train task through ``openenv-mcp eval``; the recorded episodes are exported,
    checked solved, and rendered and tokenized as the served model reads them."""
    plan, layout, record = ctx.plan, ctx.layout, ctx.ledger.stage("reference")
    folder = layout.reference
    store = folder / "store.db"
    args = [plan.environment, "--split", "train", "--trials", "1", "--seed", str(plan.seed), "--policy", "scripted"]
    args += ["--concurrency", "4", "--no-progress", "--out", str(folder / "eval")]
    args += [item for task in plan.train_tasks for item in ("--task", task)]
    environment = {**os.environ, "OPENENV_TRAJECTORIES": f"sqlite:///{store}"}
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "openenv_mcp.cli", "eval", *args],
        check=True,
        cwd=llama.ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
    )
    exported = _export(store, layout.scratch / "reference.jsonl", min_reward=1.0, done_only=True)
    solved = {str(r["task_id"]): r for r in exported if r.get("split") == "train"}
    wanted = set(plan.train_tasks)
    record.update(train_tasks=len(wanted), solved=len(wanted & set(solved)))
    if wanted - set(solved):
        raise RuntimeError(f"Reference solutions did not solve {sorted(wanted - set(solved))[:5]}...")
    with llama.servers(plan, logs=layout.scratch / "reference", count=1) as urls:
        markup = llama.added_tokens(ctx.python, llama.model_file(plan.model))
        renderer = examples.Renderer(urls[0], markup=markup)
        try:
            examples.check_format(renderer, solved[plan.train_tasks[0]])
            made = [renderer.example(solved[task], max_length=plan.sft.max_length) for task in plan.train_tasks]
        finally:
            renderer.close()
    _write_jsonl(folder / "examples.jsonl", made)
    record.update(
        examples=len(made),
        tokens=sum(e["tokens"] for e in made),
        trained_tokens=sum(sum(e["mask"]) for e in made),
        cut=sum(e["tokens"] > len(e["ids"]) for e in made),
    )
    (store).unlink(missing_ok=True)  # the examples are the checkpoint; the conversations can be played again
    return True


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _update(ctx: Context, *, data: Path, out: Path, settings: Training, init: Path | None) -> bool:
    """One LoRA update (``bench.learning.sft`` in the learning venv), stopping itself at the deadline; True when
    every step is done."""
    command = [str(ctx.python), "-m", "bench.learning.sft", "--model", str(llama.model_file(ctx.plan.model))]
    command += [
        "--examples",
        str(data),
        "--out",
        str(out),
        "--rank",
        str(settings.rank),
        "--alpha",
        str(settings.alpha),
    ]
    command += ["--targets", ",".join(settings.targets), "--learning-rate", str(settings.learning_rate)]
    command += ["--epochs", str(settings.epochs), "--max-examples", str(settings.max_examples)]
    command += ["--seed", str(settings.seed), "--threads", str(settings.threads)]
    command += ["--deadline", str(time.time() + ctx.left())]
    if init is not None:
        command += ["--init", str(init)]
    out.mkdir(parents=True, exist_ok=True)
    with (out / "train.log").open("ab") as log:
        subprocess.run(
            command, check=True, cwd=llama.ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=max(ctx.left(), 0) + 1800
        )
    state = json.loads((out / "checkpoint" / "state.json").read_text())
    return bool(state["step"] >= state["steps"])


def stage_sft(ctx: Context) -> bool:
    layout = ctx.layout
    done = _update(ctx, data=layout.reference / "examples.jsonl", out=layout.sft, settings=ctx.plan.sft, init=None)
    state = json.loads((layout.sft / "checkpoint" / "state.json").read_text())
    ctx.ledger.stage("sft").update(step=state["step"], steps=state["steps"], parameters=state["parameters"])
    print(f"sft: step {state['step']}/{state['steps']}", flush=True)
    if done:
        adapter.convert(ctx.python, layout.sft, layout.adapter("warm_start"))
    return done


def stage_rl(ctx: Context) -> bool:
    """Reward-filtered fine-tuning: each iteration samples train tasks with the current adapter (captured tokens),
    keeps the rewarded episodes and fine-tunes the adapter on them."""
    from openenv_mcp.environment.tasks import stratified_sample

    plan, layout = ctx.plan, ctx.layout
    record = ctx.ledger.stage("rl")
    iterations = record.setdefault("iterations", [])
    current, current_dir = layout.adapter("warm_start"), layout.sft / "checkpoint" / "adapter"
    for number in range(1, plan.rl_iterations + 1):
        folder = layout.iteration(number)
        if len(iterations) >= number and iterations[number - 1].get("done"):
            current, current_dir = folder / "adapter.gguf", folder / "update" / "checkpoint" / "adapter"
            continue
        if len(iterations) < number:
            iterations.append({"iteration": number})
        it = iterations[number - 1]
        tasks = sorted(
            stratified_sample(list(plan.train_tasks), plan.rl_tasks, seed=plan.seed + number, key=lambda _: 0)
        )
        seed = 1000 * number
        args = episodes.eval_args(plan, split="train", trials=1, seed=seed, policy_args=["--capture-tokens"])
        with llama.servers(plan, logs=layout.scratch / f"rl-{number}", lora=current) as urls:
            complete = episodes.play(
                args,
                tasks=tasks,
                urls=urls,
                model=f"{plan.model}+rl-{number}",
                out=folder / "sample",
                deadline=ctx.deadline,
                store=folder / "store.db",
            )
        sampled = episodes.collect(folder / "sample")
        it.update(
            sampled=len(sampled),
            rewarded=sum(t["reward"] >= 1 for t in sampled),
            mean_reward=sum(t["reward"] for t in sampled) / len(sampled) if sampled else 0.0,
        )
        ctx.ledger.save()
        if not complete:
            return False
        records = _export(
            folder / "store.db", layout.scratch / f"rl-{number}.jsonl", min_reward=plan.rl_min_reward, done_only=False
        )
        made = [e for r in records for e in examples.captured_examples(r, max_length=plan.rl.max_length)]
        _write_jsonl(folder / "examples.jsonl", made)
        it["examples"] = len(made)
        if made:
            if not _update(
                ctx, data=folder / "examples.jsonl", out=folder / "update", settings=plan.rl, init=current_dir
            ):
                return False
            adapter.convert(ctx.python, folder / "update", folder / "adapter.gguf")
            current, current_dir = folder / "adapter.gguf", folder / "update" / "checkpoint" / "adapter"
        it["done"] = True
        ctx.ledger.save()
    target = layout.adapter("trained")
    target.write_bytes(current.read_bytes())
    return True


def stage_report(ctx: Context) -> bool:
    from bench.learning import report

    report.write(ctx.layout, ctx.plan, ctx.ledger, python=ctx.python)
    return True


STAGES: dict[str, Callable[[Context], bool]] = {
    "base": stage_base,
    "reference": stage_reference,
    "sft": stage_sft,
    "warm_start": stage_warm_start,
    "rl": stage_rl,
    "trained": stage_trained,
    "report": stage_report,
}


def load_plan(layout: Layout, make: Callable[[], Plan] = full_plan) -> Plan:
    """The run's plan, drawn and written by the plan stage the first time."""
    if not layout.plan.exists():
        make().save(layout.plan)
    return Plan.load(layout.plan)


def run(
    layout: Layout,
    *,
    python: Path,
    hours: float,
    commit: bool = False,
    make: Callable[[], Plan] = full_plan,
    say: Callable[[str], None] = print,
) -> bool:
    """Do the next stages until ``hours`` are spent; True when the whole run is done."""
    layout.prepare()
    ledger = Ledger(layout.state)
    with ledger.piece(hours) as piece:
        with ledger.timed("plan"):
            plan = load_plan(layout, make)
        if not ledger.done("plan"):
            ledger.finish("plan")
        ctx = Context(layout, python, plan, ledger, time.monotonic() + hours * 3600, commit)
        for name, stage in STAGES.items():
            if ledger.done(name):
                continue
            if ctx.left() <= 0:
                break
            say(f"stage {name}: starting ({ctx.left() / 60:.0f} min left in this piece)")
            piece["stages"].append(name)
            with ledger.timed(name):
                complete = stage(ctx)
            if not complete:
                say(f"stage {name}: stopped at the piece's end; `scripts/learn run` resumes it")
                break
            ledger.finish(name)
            say(f"stage {name}: done")
            if commit:
                commit_files(layout, f"learning run: stage {name} done ({_spent(ledger)})")
    if commit:
        commit_files(layout, f"learning run: checkpoint at the end of a piece ({_spent(ledger)})")
    return all(ledger.done(name) for name in STAGES)


def archive(layout: Layout, name: str, why: str, keep: tuple[str, ...] = ()) -> Path:
    """Move the run made so far to ``runs/NAME`` (its results, manifest, curve, ledger, files, and a copy of the
    plan), with ``why`` it was set aside, so that the next ``run`` starts again on the same plan; the arms in
    ``keep`` (the base model's: nothing trained changes it) are copied back, done, marked as played in that run.
    The report lists every archived run beside the new one."""
    target = layout.earlier / name
    if target.exists():
        raise FileExistsError(f"{target} exists; give the archive another name")
    ledger = Ledger(layout.state)
    for arm in keep:
        if not ledger.done(arm):
            raise ValueError(f"The {arm} arm is not done; only a finished arm can be kept")
    target.mkdir(parents=True)
    for path in (layout.results, layout.manifest, layout.curve, layout.state, layout.run):
        if path.exists():
            shutil.move(path, target / path.name)
    shutil.copy(layout.plan, target / layout.plan.name)
    moved = Layout(target)
    for path in (moved.results, moved.manifest):  # the paths they name moved with them
        if path.exists():
            path.write_text(_moved(path.read_text(), layout.root, target))
    (target / "why.json").write_text(json.dumps({"name": name, "why": why, "kept": list(keep)}, indent=1) + "\n")
    fresh = Ledger(layout.state)
    fresh.data["stages"]["plan"] = ledger.stage("plan")
    for arm in keep:
        shutil.copytree(moved.arm(arm), layout.arm(arm))
        fresh.data["stages"][arm] = {**ledger.stage(arm), "played_in": str(target.relative_to(layout.root))}
    layout.prepare()
    fresh.save()
    return target


def _moved(text: str, root: Path, target: Path) -> str:
    """``text`` with the run's files named where ``archive`` put them (as :func:`llama.from_root` names them)."""
    for before, after in ((root.resolve(), target.resolve()), (root, target)):
        for prefix, moved in ((str(before), str(after)), (llama.from_root(before), llama.from_root(after))):
            for name in ("run/", "results.json", "manifest.json", "plan.json", "curve.png"):
                text = text.replace(f'"{prefix}/{name}', f'"{moved}/{name}')
    return text


def _spent(ledger: Ledger) -> str:
    wall = sum(p.get("wall", 0.0) for p in ledger.data["pieces"]) / 3600
    return f"{wall:.2f} h of wall time in {len(ledger.data['pieces'])} pieces so far"


def commit_files(layout: Layout, message: str) -> None:
    """Commit the run's files (the scratch folder is ignored), when anything changed."""
    root = str(layout.root)
    subprocess.run(["git", "add", "-A", "--", root], check=True, cwd=layout.root)
    staged = subprocess.run(["git", "diff", "--cached", "--quiet", "--", root], cwd=layout.root)
    if staged.returncode:
        subprocess.run(["git", "commit", "-q", "-m", message, "--", root], check=True, cwd=layout.root)
