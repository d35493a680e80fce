"""Rewards beyond a plain grade function: rubrics of named components, LLM judges, and the curriculum that draws
tasks by observed success.

- ``rubrics.py``: :class:`Rubric` with criteria, gates, per-step and terminal parts.
- ``judge.py``: :class:`LLMJudge`, a component scored by a model behind an OpenAI-compatible endpoint.
- ``curriculum.py``: tasks drawn by their observed success, within a target band.
"""
