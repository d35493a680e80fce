"""``openenv-mcp proxy``: the capture proxy between agent harnesses and their model (docs/harnesses.md)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``proxy`` to the ``openenv-mcp`` parser."""
    proxy = commands.add_parser(
        "proxy",
        help="serve a model to agent harnesses, recording every turn's tokens into the episode",
        description=(
            "Serve /ep/EPISODE_ID/v1/chat/completions, /v1/responses, /v1/messages and Gemini's "
            "/v1beta/models/M:streamGenerateContent in front of a llama.cpp server, recording each turn (prompt "
            "ids, completion ids, log-probabilities) into the trajectory store ($OPENENV_TRAJECTORIES)."
        ),
    )
    proxy.set_defaults(handler=_proxy)
    proxy.add_argument(
        "--upstream", required=True, help="the inference server's URL (llama-server, e.g. http://127.0.0.1:8080)"
    )
    proxy.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    proxy.add_argument("--port", type=int, default=8090, help="port to bind; 0 picks a free one (default 8090)")
    proxy.add_argument("--store", help="the trajectory store's SQLAlchemy URL (default: $OPENENV_TRAJECTORIES)")
    proxy.add_argument("--timeout", type=float, default=300.0, help="seconds the server has to answer (default 300)")
    proxy.add_argument(
        "--tool-parser",
        default="auto",
        help="how calls are read from the reply's text: auto, hermes, mistral, json, none",
    )
    proxy.add_argument(
        "--max-tokens", type=int, default=4096, help="most tokens per reply, whatever asked (default 4096)"
    )
    proxy.add_argument("--chat-template", help="a Jinja chat template file to use instead of the server's")
    proxy.add_argument(
        "--template-replies",
        action="store_true",
        help="show the model its earlier calls as the chat template renders what the harness sent back, not as it "
        "wrote them (then a reply rendered otherwise opens a new segment)",
    )
    proxy.add_argument(
        "--episode-wait",
        type=float,
        default=5.0,
        help="seconds to wait for an episode not yet in the store (default 5)",
    )


def _proxy(args: argparse.Namespace) -> int:
    from pathlib import Path

    import uvicorn

    from openenv_mcp.cli.serve import bound_socket
    from openenv_mcp.errors import ConfigError
    from openenv_mcp.proxy.engine import EngineOptions
    from openenv_mcp.proxy.server import READY_LINE, proxy_app
    from openenv_mcp.settings import Settings, load_settings

    try:
        options = EngineOptions(
            parser=args.tool_parser,
            chat_template=Path(args.chat_template).read_text() if args.chat_template else None,
            max_tokens=args.max_tokens,
            episode_wait=args.episode_wait,
            own_replies=not args.template_replies,
        )
    except (OSError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    store = args.store or load_settings(Settings).trajectories_url
    app = proxy_app(args.upstream, store=store, options=options, timeout=args.timeout)
    sock = bound_socket(args.host, args.port)
    sock.listen(2048)  # connections wait in the backlog from the ready line on, until uvicorn accepts them
    host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
    print(f"{READY_LINE}http://{host}:{sock.getsockname()[1]} (upstream {args.upstream}, store {store})", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0
