"""An Atropos environment for the SQL server, with the defaults of your own run (see docs/atropos.md).

    openenv-mcp serve sql --port 8100                      # the environment server, sim mode
    run-api                                                # Atropos' API, port 8000
    python examples/atropos_env.py serve                   # this env: registers, plays groups, sends them
    python examples/atropos_env.py evaluate --env.data_dir_to_save_evals evals

Run it with the Python of a venv holding ``openenv-mcp[atropos]``. Every default below can be
changed on the command line (``--env.group_size 16``, ``--openai.base_url ...``) or in a YAML file
(``--config run.yaml``, keys under ``env:`` and ``openai:``).
"""

from __future__ import annotations

from typing import Any

from atroposlib.envs.base import APIServerConfig  # type: ignore[import-not-found, import-untyped, unused-ignore]

from openenv_mcp.training.atropos import OpenEnvMCPEnv, OpenEnvMCPEnvConfig

MODEL = "Qwen/Qwen3-1.7B"  # the policy: served by vLLM or SGLang (OpenAI-compatible), tokenized with its tokenizer


class SqlEnv(OpenEnvMCPEnv):
    name = "openenv-sql"

    @classmethod
    def config_init(cls) -> tuple[OpenEnvMCPEnvConfig, list[Any]]:
        env = OpenEnvMCPEnvConfig(
            server_url="http://127.0.0.1:8100",
            tokenizer_name=MODEL,
            group_size=8,
            max_token_length=4096,
            temperature=1.0,
            wandb_name=cls.name,
            use_wandb=False,
            steps_per_eval=50,
        )
        return env, [APIServerConfig(model_name=MODEL, base_url="http://127.0.0.1:9001/v1", api_key="x")]


if __name__ == "__main__":
    SqlEnv.cli()
