"""verl's tools over an openenv-mcp server: its tool config, its registry, its ToolAgentLoop.

    pip install "verl==0.9.1" torch==2.13.0          # (tests/interop/verl-requirements.txt: the CPU set)
    openenv-mcp serve sql --mode sim &
    python examples/verl_tools.py http://127.0.0.1:8000

1. writes verl's tool config for the server (what ``openenv-mcp verl tools URL`` writes) and loads it with verl's
   own ``initialize_tools_from_config``: one ``OpenEnvMCPTool`` per server tool;
2. drives the tools through the create-once lifecycle: ``create(instance_id)`` opens the episode of the task,
   ``execute`` steps it, ``calc_reward`` is its total, ``release`` closes it;
3. runs rows through ``OpenEnvMCPAgentLoop`` (verl's ``ToolAgentLoop``, ``agent_name: openenv_mcp_agent``), made
   as verl's ``AgentLoopWorker`` makes it. verl's LLM side is a vLLM or SGLang server; here it is a scripted
   stand-in answering fixed text, then a tiny GPT-2 built here generating on the CPU (its weights make each token
   a whole tool call or the end of the turn), both with a byte-level tokenizer built here. Everything else is
   verl's own: the chat template rendering, the Hermes tool-call parser, the per-call create/execute/release;
4. shows bad input: a tool the server lacks, a step after the end, a server that is down;
5. uses an ``mcpServers`` file bound to one episode (``openenv-mcp verl mcp``) with fastmcp's client, as verl
   0.6-0.7's MCP tools do (their client module is in verl's source only, see docs/verl.md).

It prints one JSON report (the test reads it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


MODEL_CALLS = [
    call("list_tables"),
    call("submit_answer", sql="SELECT COUNT(*) FROM customers"),  # right on sql-001 only
    call("drop_everything"),  # no such tool: verl answers it
]


TEMPLATE = """\
{%- if messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}
{%- if tools %}
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
Call a tool as <tool_call>{"name": NAME, "arguments": {...}}</tool_call>.{% endif %}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' %}<|im_start|>user
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{{ message.content }}
{%- for call in message.tool_calls or [] %}<tool_call>{"name": "{{ call.function.name }}", \
"arguments": {{ call.function.arguments | tojson }}}</tool_call>{% endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>{{ message.content }}</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def tokenizer() -> Any:
    """A byte-level tokenizer (any text, no download) with the chat template above."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = iter(range(256, 512))
    vocab = {(chr(b) if b in kept else chr(next(shifted))): b for b in range(256)}  # GPT-2's byte-to-character map
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"], chat_template=TEMPLATE,
    )  # fmt: skip
    tok.add_tokens(MODEL_CALLS)  # the tiny model's actions, one token each
    return tok


class TinyModelServer:
    """Stands in for verl's LLM server with a real model generating on the CPU: a GPT-2 of 16 dimensions built
    here, whose weights make its next token one of MODEL_CALLS or the end of its turn, sampled at random."""

    def __init__(self, tok: Any, seed: int) -> None:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel

        torch.manual_seed(seed)
        config = GPT2Config(vocab_size=len(tok), n_embd=16, n_layer=1, n_head=2, n_positions=16384,
                            eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)  # fmt: skip
        self.model = GPT2LMHeadModel(config).eval()
        with torch.no_grad():  # the last layer norm outputs a constant vector, so the logits are one fixed row
            self.model.transformer.ln_f.weight.zero_()
            self.model.transformer.ln_f.bias.zero_()
            self.model.transformer.ln_f.bias[0] = 1.0
            column = self.model.transformer.wte.weight[:, 0]
            column.fill_(-30.0)
            for token in [*tok.convert_tokens_to_ids(MODEL_CALLS), tok.eos_token_id]:
                column[token] = 0.0
        self.tok = tok

    async def generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> Any:  # fmt: skip
        import torch
        from verl.workers.rollout.replica import TokenOutput

        prompt = torch.tensor([prompt_ids])
        with torch.no_grad():
            out = self.model.generate(
                prompt, attention_mask=torch.ones_like(prompt), do_sample=True, max_new_tokens=3, top_k=0,
                temperature=float(sampling_params.get("temperature", 1.0)), eos_token_id=self.tok.eos_token_id,
                pad_token_id=self.tok.pad_token_id,
            )  # fmt: skip
        return TokenOutput(token_ids=out[0, len(prompt_ids) :].tolist(), num_preempted=0)


class ScriptedServer:
    """Stands in for verl's LLM server client: answers each turn of a rollout with the next text of a script."""

    def __init__(self, tok: Any, script: list[str]) -> None:
        self.tok, self.script, self.turn = tok, script, 0

    async def generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> Any:  # fmt: skip
        from verl.workers.rollout.replica import TokenOutput

        text = self.script[min(self.turn, len(self.script) - 1)]
        self.turn += 1
        ids = [*self.tok.encode(text, add_special_tokens=False), self.tok.eos_token_id]
        return TokenOutput(token_ids=ids, log_probs=None, num_preempted=0)


async def lifecycle(tools: dict[str, Any]) -> dict[str, Any]:
    """create(instance_id) -> episode, execute -> step, calc_reward, release -> close."""
    listing, submit = tools["list_tables"], tools["submit_answer"]
    kwargs = {"task_id": "sql-001", "seed": 1}
    _, prompt = await listing.create(instance_id="rollout-1", create_kwargs=kwargs)
    await submit.create(instance_id="rollout-1", create_kwargs=kwargs)
    listed = await listing.execute("rollout-1", {})
    wrong = await submit.execute("rollout-1", {"sql": "DROP TABLE customers"})
    solved = await submit.execute("rollout-1", {"sql": "SELECT COUNT(*) FROM customers"})
    after = await listing.execute("rollout-1", {})
    reward = await submit.calc_reward("rollout-1")
    await listing.release("rollout-1")
    still_open = list(_open())
    await submit.release("rollout-1")
    steps = [{"text": r[0].text, "reward": r[1], "metrics": r[2]} for r in (listed, wrong, solved, after)]
    return {"prompt": prompt.text, "steps": steps, "calc_reward": reward, "open_after_first_release": still_open,
            "open_after_last_release": list(_open())}  # fmt: skip


def _open() -> list[str]:
    from openenv_mcp.training.verl import open_episodes

    return open_episodes()


async def agent_loop(url: str, tools: list[Any], rows: list[dict[str, Any]], llms: list[Any]) -> list[Any]:
    """Each row through OpenEnvMCPAgentLoop, instantiated as verl's AgentLoopWorker instantiates agent loops."""
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from openenv_mcp.training.verl import AGENT_NAME

    config = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {
            "prompt_length": 4096, "response_length": 4096, "full_determinism": False,
            "multi_turn": {"max_user_turns": 8, "max_assistant_turns": 8, "max_parallel_calls": 2,
                           "max_tool_response_length": 2048, "tool_response_truncate_side": "middle",
                           "format": "hermes"}}},
        "data": {"apply_chat_template_kwargs": {}},
    })  # fmt: skip
    results: list[Any] = []
    for row, llm in zip(rows, llms, strict=True):
        loop = hydra.utils.instantiate(
            config=_agent_loop_registry[row["agent_name"]], trainer_config=DictConfigWrap(config=config),
            server_manager=llm, tokenizer=llm.tok, processor=None, hf_model_type=None,
            dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data), tools=ToolListWrap(tools),
        )  # fmt: skip
        assert row["agent_name"] == AGENT_NAME
        try:
            extra = row["extra_info"]
            output = await loop.run({"temperature": 1.0}, raw_prompt=row["prompt"], tools_kwargs=extra["tools_kwargs"],
                                    extra_info=extra)  # fmt: skip
        except Exception as exc:  # the report shows what verl's worker would see
            results.append({"error": f"{type(exc).__name__}: {exc}"})
            continue
        text = llm.tok.decode(output.response_ids)
        fields = {k: v for k, v in output.extra_fields.items() if k.startswith("openenv_mcp") or k == "tool_rewards"}
        results.append({"reward_score": output.reward_score, "extra_fields": fields, "response": text,
                        "open": _open()})  # fmt: skip
    return results


async def mcp_path(url: str) -> dict[str, Any]:
    """The mcpServers file bound to one episode, used as verl 0.6-0.7's MCP client (source only) uses it: a fastmcp
    Client made from the config, and one MCP session per request (``async with client`` each time)."""
    from fastmcp import Client

    from openenv_mcp.client import AsyncEnvClient
    from openenv_mcp.training.verl_config import mcp_config

    async with AsyncEnvClient(url) as env:  # what `openenv-mcp verl mcp URL --task sql-001 --seed 2` does
        episode = (await env.reset(task_id="sql-001", seed=2)).episode_id
        client = Client(mcp_config(url, name="sql", episode_id=episode))
        async with client:
            listed = await client.list_tools_mcp()
        calls = []
        for name, arguments in [("list_tables", {}), ("submit_answer", {"sql": "SELECT COUNT(*) FROM customers"})]:
            async with client:
                result = await client.call_tool_mcp(name, arguments)
            calls.append({"text": result.content[0].text, "meta": result.meta})
    return {"episode_id": episode, "tools": [t.name for t in listed.tools], "calls": calls}


async def main(url: str) -> dict[str, Any]:
    from verl.tools.tool_registry import initialize_tools_from_config

    from openenv_mcp.client import AsyncEnvClient
    from openenv_mcp.client.discovery import discover
    from openenv_mcp.training.verl_config import dataset_rows, tool_config

    info = await discover(url)
    config = tool_config(info, timeout=10)
    lacking = json.loads(json.dumps(config["tools"][0]))
    lacking["tool_schema"]["function"]["name"] = "drop_everything"  # a tool config older than the server
    down = json.loads(json.dumps(config["tools"][0]))
    down["config"]["server_url"], down["config"]["timeout"] = "http://127.0.0.1:9", 2
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "tools.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        with contextlib.redirect_stdout(sys.stderr):  # verl's BaseTool prints each schema
            tools = initialize_tools_from_config(str(path))  # verl's own loader, as its AgentLoopWorker calls it
            path.write_text(yaml.safe_dump({"tools": [lacking, down]}, sort_keys=False))
            lacks, unreachable = initialize_tools_from_config(str(path))
    by_name = {tool.name: tool for tool in tools}
    report: dict[str, Any] = {
        "tools": [{"class": f"{type(t).__module__}.{type(t).__name__}", "name": t.name,
                   "schema": t.tool_schema.model_dump(exclude_unset=True, exclude_none=True)} for t in tools],
        "lifecycle": await lifecycle(by_name),
    }  # fmt: skip
    iid, _ = await lacks.create(instance_id="rollout-2", create_kwargs={"task_id": "sql-002"})
    report["lacking"] = (await lacks.execute(iid, {}))[0].text
    await lacks.release(iid)
    iid, _ = await unreachable.create(create_kwargs={"task_id": "sql-001"})
    try:
        await unreachable.execute(iid, {})
    except Exception as exc:
        report["down"] = f"{type(exc).__name__}: {exc}"
    await unreachable.release(iid)

    async with AsyncEnvClient(url) as client:
        tasks = [t.model_dump() for t in (await client.tasks(split="train")).tasks if t.id in ("sql-001", "sql-002")]
    rows = dataset_rows(info, tasks, seed=5)
    answer = call("submit_answer", sql="SELECT COUNT(*) FROM customers")
    solve = [call("list_tables"), answer, call("list_tables"), "The answer is in."]  # the third: after the end
    refused = [call("drop_everything") + call("list_tables"), "I stop here."]  # verl refuses the first itself
    tok = tokenizer()
    report["rows"] = rows
    scripted = [ScriptedServer(tok, solve), ScriptedServer(tok, refused)]
    report["rollouts"] = await agent_loop(url, tools, [rows[0], rows[1]], scripted)
    down_script = [ScriptedServer(tok, [call(unreachable.name), "stop"])]
    report["rollouts"] += await agent_loop(url, [*tools, unreachable], [rows[0]], down_script)
    unknown = json.loads(json.dumps(rows[0]))
    for kwargs in unknown["extra_info"]["tools_kwargs"].values():
        kwargs["create_kwargs"]["task_id"] = "sql-999"  # a row whose task the server does not have
    report["rollouts"] += await agent_loop(url, tools, [unknown], [ScriptedServer(tok, [call("list_tables"), "x"])])
    models = [TinyModelServer(tok, seed) for seed in range(6)]
    report["model_rollouts"] = await agent_loop(url, tools, [rows[i % 2] for i in range(6)], models)
    report["mcp"] = await mcp_path(url)
    report["open_at_end"] = _open()
    return report


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000")), default=str))
