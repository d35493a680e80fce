"""The results and the report page of an evaluation whose trials failed or ended for various reasons."""

from __future__ import annotations

from openenv_mcp.evaluation import Evaluation, Trial
from openenv_mcp.evaluation.report import render_html

RUN = {
    "server": "sql", "split": "test", "k": 1, "policy": "openai", "model": "qwen2.5-coder-1.5b",
    "base_url": "http://127.0.0.1:8080/v1", "temperature": 0.2, "max_tokens": None, "max_turns": None,
    "tool_choice": "auto", "tool_parser": "auto", "reminders": 1, "seed": 0, "threshold": 1.0,
    "tasks": ["sql-024", "sql-025", "sql-026", "sql-027"],
}  # fmt: skip


def trial(task_id: str, reward: float, end_reason: str, error: str | None = None) -> Trial:
    return Trial(task_id, 0, 0, reward, 2, reward == 1.0, seconds=12.5, error=error, end_reason=end_reason,
                 env_seconds=0.25, model_seconds=12.0, turns=3, text_replies=1)  # fmt: skip


def test_the_header_counts_every_task_and_says_how_trials_ended_and_what_model_played() -> None:
    evaluation = Evaluation(
        dict(RUN),
        [
            trial("sql-024", 1.0, "done"),
            trial("sql-025", 0.0, "text_only"),
            trial("sql-026", 0.0, "context_full"),
            trial("sql-027", 0.0, "model_error", "PolicyError: The chat endpoint ... did not answer within 300 s"),
        ],
    )
    results = evaluation.as_json()["overall"]
    assert (results["tasks"], results["tasks_scored"], results["trials"], results["errors"]) == (4, 3, 3, 1)
    assert results["infra_failures"] == 1
    assert results["end_reasons"] == {"done": 1, "text_only": 1, "context_full": 1, "model_error": 1}
    assert results["seconds"] == {"wall": 50.0, "environment": 1.0, "model": 48.0}
    assert results["model"] == {"turns": 12, "text_replies": 4, "parsed_calls": 0, "refused_calls": 0}
    page = render_html(evaluation)
    for fact in (
        "<tr><th>tasks</th><td>4 (1 without a finished trial)</td></tr>",
        "<tr><th>ended</th><td>done 1, text_only 1, context_full 1, model_error 1</td></tr>",
        "<tr><th>model</th><td>qwen2.5-coder-1.5b</td></tr>",
        "<tr><th>endpoint</th><td>http://127.0.0.1:8080/v1</td></tr>",
        "<tr><th>temperature</th><td>0.2</td></tr>",
        "<tr><th>max tokens</th><td>the endpoint&#x27;s default</td></tr>",
        "<tr><th>turn cap</th><td>the step limit</td></tr>",
        "<tr><th>tool parser</th><td>auto</td></tr>",
    ):
        assert fact in page
    assert "sql-027 trial 0 (model_error, infrastructure): PolicyError" in page
    assert "ended: done 1, text_only 1, context_full 1, model_error 1" in evaluation.render()
