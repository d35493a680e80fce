"""Latency benchmark of the SQL server (sim mode) against bare FastAPI and bare MCP SDK baselines.

Run from the repository root with ``scripts/bench`` (or ``.venv/bin/python -m bench``); ``--quick`` for a smoke run.
"""
