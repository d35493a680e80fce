"""pass@k and pass^k against values worked out by hand."""

from __future__ import annotations

import pytest

from openenv_mcp.evaluation import pass_at_k, pass_hat_k, score_tasks


def test_pass_at_k_is_the_chance_one_of_k_draws_succeeds() -> None:
    assert pass_at_k(4, 2, 1) == pytest.approx(0.5)
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - 1 / 6)  # the only all-failing pair of 6
    assert pass_at_k(4, 2, 3) == 1.0  # three draws cannot all miss two failures
    assert pass_at_k(5, 0, 5) == 0.0


def test_pass_hat_k_is_the_chance_all_k_draws_succeed() -> None:
    assert pass_hat_k(4, 2, 1) == pytest.approx(0.5)
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_hat_k(4, 2, 3) == 0.0
    assert pass_hat_k(3, 3, 3) == 1.0


def test_impossible_counts_are_refused_with_the_rule() -> None:
    with pytest.raises(ValueError, match="1 <= k <= trials"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        pass_hat_k(3, 4, 1)


def test_trials_are_grouped_by_task_and_thresholded() -> None:
    scores = score_tasks([("b", 1.0), ("a", 0.4), ("a", 0.9), ("b", 0.0)], threshold=0.9)
    assert [(s.task_id, s.trials, s.successes) for s in scores] == [("a", 2, 1), ("b", 2, 1)]
    assert scores[0].mean_reward == pytest.approx(0.65)
