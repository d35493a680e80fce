"""Adapters that let trainers drive our servers: each is a thin translation onto the one call path.

Every adapter imports its trainer's package lazily, so ``openenv_mcp`` never needs them installed.
"""
