"""`mneme keys add`: API keys of the served graphs (only their sha256 is stored)."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.common import checked_user, console, fail, safe
from memory.settings import ConfigError, load_settings
from serve.apikeys import add_key


def add(
    user: str = typer.Option(
        ..., "--user", "-u", callback=checked_user, help="The user id the key acts as."
    ),
    file: str | None = typer.Option(
        None,
        "--file",
        help="Keys file (default: MNEME_API_KEYS_FILE, else api-keys in the data directory, "
        "where the server looks when MNEME_API_KEYS_FILE is unset).",
    ),
) -> None:
    """Create an API key for a user, store its hash, and print the key once."""
    try:
        path = Path(file) if file else load_settings().resolved_api_keys_file
        key = add_key(path, user)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write the keys file ({exc.strerror})") from None
    console.print(
        f"API key for [cyan]{safe(user)}[/] (shown once; its hash is kept in {safe(str(path))}, "
        "read when the server starts):"
    )
    console.print(key, markup=False, highlight=False)
