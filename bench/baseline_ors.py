# mypy: disable-error-code="import-not-found,misc,untyped-decorator"
# (openreward is installed in .venv/ors-client only, never in the project's venv that mypy checks with)
"""Baseline D: the ORS SDK's own server (``openreward.environments.Server``) serving an environment like ours.

Runs under the ORS client venv (``.venv/ors-client``, the one tests/doors/test_ors.py makes for the reference client;
the benchmark adds uvloop and httptools to it): ``bench/servers.py`` starts it as
``.venv/ors-client/bin/python bench/baseline_ors.py --port P --tables a,b,...``.

``Trivial`` is an ``openreward.environments.Environment`` with one task in a ``train`` split and one tool,
``list_tables``, answering what ``bench/trivial.py``'s tool answers through our ORS door: the table list as a text
block of JSON (and the same list as structured content in the metadata), reward 0, not finished. The environment
is named ``trivial`` (the SDK names it after the class, lower-cased) so that one client loop drives both servers
with the same paths. It is served by the SDK's ``Server.run`` (uvicorn, no access log; with uvloop and httptools
installed, uvicorn picks them as it does for ours). The SDK logs every request at INFO through structlog; the
benchmark starts it with ``OPENREWARD_LOG_LEVEL=WARNING`` (the SDK's own setting), as ours runs without an access
log, and with ``OPENREWARD_DISABLE_UPDATE_CHECK=1`` (no network).
"""

from __future__ import annotations

import argparse
import json

from openreward.environments import Environment, Server, TextBlock, ToolOutput, tool

TABLES: list[str] = []


class Trivial(Environment):
    """One task, one tool that returns a constant list."""

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, str]]:
        return [{"id": "t0", "split": "train", "prompt": "Call list_tables."}] if split == "train" else []

    async def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=str(self.task_spec["prompt"]))]

    @tool(concurrent=True)  # grants no reward: no per-session lock (the SDK's fastest path)
    async def list_tables(self) -> ToolOutput:
        """List the tables of the database."""
        return ToolOutput(
            blocks=[TextBlock(text=json.dumps({"result": TABLES}, separators=(",", ":")))],
            metadata={"structured_content": {"result": TABLES}, "is_error": False},
            reward=0.0,
            finished=False,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tables", required=True, help="comma-separated table names to return")
    args = parser.parse_args()
    TABLES.extend(args.tables.split(","))
    Server([Trivial]).run(host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
