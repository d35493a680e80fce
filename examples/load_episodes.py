"""Load exported episodes with the datasets library, as a GRPO or SFT trainer would.

    openenv-mcp trajectories export --format jsonl --output episodes.jsonl
    .venv/bin/python examples/load_episodes.py episodes.jsonl

Each row is one episode: "messages" (system, user, then assistant tool calls and tool results),
"tools" (OpenAI function schemas), "reward" and per-step "rewards", and where it came from.
"""

from __future__ import annotations

import argparse
import json

import datasets


def main(path: str) -> None:
    datasets.disable_progress_bars()
    episodes = datasets.load_dataset("json", data_files=path, split="train")
    rewards = episodes["reward"]
    print(f"{episodes.num_rows} episodes, mean reward {sum(rewards) / len(rewards):.3f}")
    first = episodes[0]
    print("roles:", " ".join(message["role"] for message in first["messages"]))
    print("tools:", ", ".join(tool["function"]["name"] for tool in first["tools"]))
    call = first["messages"][2]["tool_calls"][0]["function"]
    print(f"first call: {call['name']}({json.loads(call['arguments'])})")
    # A GRPO trainer takes the prompt (system + user) and scores its own completions with the
    # environment; an SFT trainer takes whole conversations, here the successful ones:
    prompts = episodes.map(lambda row: {"prompt": row["messages"][:2]}, remove_columns=episodes.column_names)
    solved = episodes.filter(lambda row: row["reward"] >= 1.0)
    print(f"{prompts.num_rows} prompts, {solved.num_rows} solved conversations")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?", default="episodes.jsonl")
    main(parser.parse_args().path)
