"""Train with TRL's GRPOTrainer on an openenv-mcp server: its tools are the model's tools, its reward the reward.

    pip install "openenv-mcp[trl]"                      # trl, transformers, datasets; torch==2.13.0 for a CPU build
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B  # starts `openenv-mcp serve sql` itself
    python examples/trl_grpo.py --server http://127.0.0.1:8000 --model Qwen/Qwen3-0.6B --steps 50
    python examples/trl_grpo.py --prefix '[{"tool": "list_tables"}]'   # also groups from a shared prefix

Without ``--model`` it trains a tiny model built here from a config (no download), with a byte-level tokenizer and
TRL's own Qwen2.5 tool-calling chat template. That model knows nothing: its output is fixed by its weights to a few
whole tool calls (listing the tables, submitting the answer to sql-001, calling a tool the server lacks) or the end
of its turn, sampled at random. It shows the plumbing on a CPU in under a minute: tool calls reach the server as
steps, refused calls come back to the model as messages, the server's rewards are the rewards GRPO learns from, and
no episode is left open. ``--report FILE`` writes what TRL logged (the test reads it).

``--prefix ACTIONS`` (JSON) adds a second row per task: the task after those actions, as a shared-prefix group
(docs/trl.md): the ``--generations`` rollouts of that prompt each continue a fork of one episode that played the
actions once, so GRPO compares continuations of one state.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

TOOL_CALLS = [  # the tiny model's whole vocabulary of actions, one token each (see tiny_model)
    {"name": "list_tables", "arguments": {}},
    {"name": "submit_answer", "arguments": {"sql": "SELECT COUNT(*) FROM customers"}},  # right on sql-001 only
    {"name": "drop_everything", "arguments": {}},  # no such tool: the server's refusal goes back to the model
]


def tiny_model(folder: Path) -> tuple[Any, Any]:
    """A GPT-2 of 16 dimensions whose next token does not depend on its input, and a byte-level tokenizer."""
    import torch
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = iter(range(256, 512))
    vocab = {(chr(b) if b in kept else chr(next(shifted))): b for b in range(256)}  # GPT-2's byte-to-character map
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    template = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"], chat_template=template,
    )  # fmt: skip
    calls = [f"<tool_call>\n{json.dumps(call)}\n</tool_call>" for call in TOOL_CALLS]
    tokenizer.add_tokens(calls)
    tokenizer.padding_side = "left"
    tokenizer.save_pretrained(folder)

    config = GPT2Config(vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=2, n_positions=8192,
                        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():  # the last layer norm outputs a constant vector, so the logits are one fixed row
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.zero_()
        model.transformer.ln_f.bias[0] = 1.0
        column = model.transformer.wte.weight[:, 0]
        column.fill_(-30.0)  # every token unlikely...
        for token in [*tokenizer.convert_tokens_to_ids(calls), tokenizer.eos_token_id]:
            column[token] = 0.0  # ...but the tool calls and the end of the turn, equally likely
    return model, tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", help="a running sim server's URL (default: start `openenv-mcp serve sql`)")
    parser.add_argument("--model", help="a model name or folder (default: a tiny model built here)")
    parser.add_argument("--tasks", default="sql-001,sql-004", help="comma-separated task ids ('' for all of train)")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps")
    parser.add_argument("--generations", type=int, default=4, help="rollouts per prompt (GRPO's group)")
    parser.add_argument("--prefix", help='actions, e.g. \'[{"tool": "list_tables"}]\': add shared-prefix rows')
    parser.add_argument("--report", type=Path, help="write TRL's log history and the run's facts here (JSON)")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    from openenv_mcp.deploy.providers import LocalServer
    from openenv_mcp.training.trl import environment_factory, task_rows

    provider = None if args.server else LocalServer("sql")
    server = args.server or provider
    try:
        run(server, args)
    finally:
        if provider is not None:
            provider.stop()
    _ = environment_factory, task_rows  # imported above so that a missing package fails before the model loads


def run(server: Any, args: argparse.Namespace) -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv_mcp import EnvClient
    from openenv_mcp.training.trl import PREFIX_COLUMNS, environment_factory, task_rows

    Env = environment_factory(server)
    wanted = [t for t in args.tasks.split(",") if t]
    with EnvClient(Env.url) as client:
        tasks = [task for task in client.tasks(split="train").tasks if not wanted or task.id in wanted]
    rows = task_rows(Env.url, tasks=tasks)
    if args.prefix:  # the same tasks after a shared prefix: each row is a group of --generations forks
        rows += task_rows(Env.url, tasks=tasks, prefix=json.loads(args.prefix), group_size=args.generations)
        rows = [{column: None for column in PREFIX_COLUMNS} | row for row in rows]  # one set of columns
    with tempfile.TemporaryDirectory() as scratch:
        if args.model:
            model, tokenizer = args.model, None
        else:
            model, tokenizer = tiny_model(Path(scratch) / "tokenizer")
        config = GRPOConfig(
            output_dir=str(Path(scratch) / "out"), max_steps=args.steps, learning_rate=1e-4,
            per_device_train_batch_size=args.generations, num_generations=args.generations,
            max_completion_length=256, max_tool_calling_iterations=3, logging_steps=1, report_to=[],
            save_strategy="no", use_cpu=True, bf16=False, seed=0, beta=0.0,
        )  # fmt: skip
        trainer = GRPOTrainer(
            model=model, processing_class=tokenizer, args=config,
            train_dataset=Dataset.from_list(rows), environment_factory=Env,
        )  # fmt: skip
        trainer.train()
        closed = Env.close_all()
    history = trainer.state.log_history
    for entry in history:
        if "reward" in entry:
            print(f"step {entry['step']}: reward {entry['reward']:.3f}")
    if args.report:
        facts = {"class": Env.__name__, "server": Env.server, "log_history": history, "closed_at_end": closed,
                 "global_step": trainer.state.global_step, "batch": args.generations}  # fmt: skip
        args.report.write_text(json.dumps(facts, default=str))


if __name__ == "__main__":
    main()
