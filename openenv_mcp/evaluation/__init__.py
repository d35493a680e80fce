"""Evaluation: k trials of every task of a split, scored as pass@k and pass^k (``openenv-mcp eval``).

- :mod:`~openenv_mcp.evaluation.metrics`: the estimators and per-task figures.
- :mod:`~openenv_mcp.evaluation.run`: the trials, played through the rollout runner, kept in a file
  so an interrupted run resumes without redoing what finished.
- :mod:`~openenv_mcp.evaluation.report`: the results as JSON and as one self-contained HTML page.
"""

from openenv_mcp.evaluation.metrics import TaskScore, pass_at_k, pass_hat_k, score_tasks
from openenv_mcp.evaluation.run import Evaluation, Trial, TrialLog

__all__ = ["Evaluation", "TaskScore", "Trial", "TrialLog", "pass_at_k", "pass_hat_k", "score_tasks"]
