"""The LoRA update, run in the learning venv: ``python -m bench.learning.sft --model GGUF --examples JSONL --out DIR``.

The base model is the GGUF file the servers play, dequantised by transformers (``gguf_file=``, kept beside the
file after the first time); the adapter is a
peft LoRA on the plan's projections. One example is one step (its loss on the masked tokens: the model's own).
After every step the adapter, the optimiser's state (dropped once the last step is done) and the position in the
shuffled data are written to
``DIR/checkpoint`` (a new folder swapped in whole), so an interrupted update resumes at the next example; it stops
on its own between steps at ``--deadline`` (Unix time). ``DIR/base`` keeps the base model's config (what the GGUF
converter needs). Imports only torch, transformers, peft and the standard library.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", type=Path, required=True, help="the base model's GGUF file")
    parser.add_argument("--examples", type=Path, required=True, help="JSON lines with ids and mask")
    parser.add_argument("--out", type=Path, required=True, help="the update's folder (checkpoint, base, log)")
    parser.add_argument("--init", type=Path, help="an adapter folder to start from (default: a new LoRA)")
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--alpha", type=int, default=16)
    parser.add_argument("--targets", default="q_proj,k_proj,v_proj,o_proj")
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-examples", type=int, default=0, help="use at most this many examples (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--deadline", type=float, default=0.0, help="stop between steps after this Unix time")
    return parser.parse_args()


def _order(count: int, *, epochs: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    order: list[int] = []
    for _ in range(epochs):
        indices = list(range(count))
        rng.shuffle(indices)
        order += indices
    return order


def _load_examples(path: Path, limit: int, seed: int) -> list[dict[str, Any]]:
    examples = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    examples = [e for e in examples if any(e["mask"])]
    if limit and len(examples) > limit:
        examples = random.Random(seed).sample(examples, limit)
    return examples


def main() -> int:
    args = _parse()
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    started = time.monotonic()
    base = _load_base(args.model)
    loaded = round(time.monotonic() - started, 1)
    (args.out / "base").mkdir(parents=True, exist_ok=True)
    base.config.architectures = [type(base).__name__]  # the converter picks its model class by this name
    base.config.save_pretrained(args.out / "base")
    checkpoint = args.out / "checkpoint"
    if not checkpoint.exists() and (args.out / "checkpoint.old").exists():
        (args.out / "checkpoint.old").rename(checkpoint)  # interrupted while swapping: the previous one is whole
    if checkpoint.exists():
        model = PeftModel.from_pretrained(base, checkpoint / "adapter", is_trainable=True)
        state = json.loads((checkpoint / "state.json").read_text())
    elif args.init is not None:
        model = PeftModel.from_pretrained(base, args.init, is_trainable=True)
        state = {"step": 0, "losses": []}
    else:
        lora = LoraConfig(
            r=args.rank,
            lora_alpha=args.alpha,
            target_modules=args.targets.split(","),
            lora_dropout=0.0,
            bias="none",
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(base, lora)
        state = {"step": 0, "losses": []}
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trainable, lr=args.learning_rate, weight_decay=0.0)
    if (checkpoint / "optimiser.pt").exists():
        optimiser.load_state_dict(torch.load(checkpoint / "optimiser.pt", weights_only=True))
    examples = _load_examples(args.examples, args.max_examples, args.seed)
    order = _order(len(examples), epochs=args.epochs, seed=args.seed)
    state.update(examples=len(examples), steps=len(order), parameters=sum(p.numel() for p in trainable))
    state.setdefault("load_seconds", []).append(loaded)
    print(json.dumps({"resuming_at": state["step"], "of": len(order), "load_seconds": loaded}), flush=True)
    model.train()
    while state["step"] < len(order):
        if args.deadline and time.time() > args.deadline:
            break
        tick = time.monotonic()
        example = examples[order[state["step"]]]
        ids = torch.tensor([example["ids"]])
        labels = torch.tensor([[i if m else -100 for i, m in zip(example["ids"], example["mask"], strict=True)]])
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)
        state["step"] += 1
        state["losses"].append(
            {
                "step": state["step"],
                "loss": round(float(loss.detach()), 5),
                "tokens": len(example["ids"]),
                "seconds": round(time.monotonic() - tick, 2),
            }
        )
        _save(model, optimiser, state, args.out)
        print(json.dumps(state["losses"][-1]), flush=True)
    if not checkpoint.exists():
        _save(model, optimiser, state, args.out)
    if state["step"] >= len(order):  # a finished update is never resumed: its 9 MB of optimiser state is not kept
        (checkpoint / "optimiser.pt").unlink(missing_ok=True)
    return 0


def _load_base(gguf: Path) -> Any:
    """The model transformers dequantises from ``gguf``, kept beside the file as safetensors after the first load:
    reading a GGUF file's metadata in Python costs about 20 s a pass and transformers makes two, where the saved
    copy loads in seconds. Keyed by the transformers release that dequantised it."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    cached = gguf.parent / f"dequantised-transformers-{transformers.__version__}"
    if (cached / "config.json").exists():
        return AutoModelForCausalLM.from_pretrained(str(cached), dtype=torch.float32)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    partial = cached.with_name(cached.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    partial.rename(cached)
    return model


def _save(model: Any, optimiser: Any, state: dict[str, Any], out: Path) -> None:
    import torch

    fresh = out / "checkpoint.new"
    shutil.rmtree(fresh, ignore_errors=True)
    model.save_pretrained(fresh / "adapter")
    torch.save(optimiser.state_dict(), fresh / "optimiser.pt")
    (fresh / "state.json").write_text(json.dumps(state, indent=1) + "\n")
    current, old = out / "checkpoint", out / "checkpoint.old"
    if current.exists():
        current.rename(old)
    fresh.rename(current)
    shutil.rmtree(old, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
