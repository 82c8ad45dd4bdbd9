"""`mneme mcp`: the memory tools over MCP, on stdio (default) or streamable HTTP (`--http PORT`).

Nothing is printed on stdout: on stdio it is the protocol's channel (errors go to stderr).
"""

from __future__ import annotations

import os

import typer

from cli.common import USER_HELP, checked_user, fail, run


def mcp(
    http: int | None = typer.Option(
        None, "--http", min=1, max=65535, help="Serve streamable HTTP on this port (at /mcp)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind with --http."),
    user: str | None = typer.Option(
        None,
        "--user",
        "-u",
        callback=checked_user,
        help=f"{USER_HELP} stdio only, and only without API keys; else MNEME_MCP_KEY decides.",
    ),
) -> None:
    """Serve the memory tools (remember, recall, facts, beliefs, forget, pin_memory,
    unpin_memory) over MCP, one user per connection: stdio's from MNEME_MCP_KEY (or --user without keys), HTTP's from each request's
    bearer key."""
    from memory.embeddings.embedders import EmbedderError, build_embedder
    from memory.embeddings.install import preflight
    from memory.settings import ConfigError, load_settings
    from serve.mcp import McpSetupError, serve_http, serve_stdio, stdio_user

    try:
        settings = load_settings()
        preflight(build_embedder(settings))  # the stores open lazily: fail now, not per call
        if http is not None:
            if user:
                raise McpSetupError("--user is for stdio; over HTTP each request's key decides")
            run(lambda: serve_http(settings, host, http))
        else:
            who = stdio_user(settings, os.environ.get("MNEME_MCP_KEY"), user)
            run(lambda: serve_stdio(settings, who))
    except (ConfigError, McpSetupError, EmbedderError) as exc:
        raise fail(str(exc)) from None
