"""`mneme keys add`: API keys of the served graphs (only their sha256 is stored)."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.common import console, fail, safe
from memory.settings import ConfigError, load_settings
from serve.apikeys import add_key


def add(
    user: str = typer.Option(..., "--user", "-u", help="The user id the key acts as."),
    file: str | None = typer.Option(
        None, "--file", help="Keys file (default: MNEME_API_KEYS_FILE)."
    ),
) -> None:
    """Create an API key for a user, store its hash, and print the key once."""
    try:
        path = Path(file) if file else load_settings().api_keys_file
        if path is None:
            raise ConfigError("no keys file: pass --file or set MNEME_API_KEYS_FILE")
        key = add_key(path, user)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write the keys file ({exc.strerror})") from None
    console.print(f"API key for [cyan]{safe(user)}[/] (shown once, only its hash is kept):")
    console.print(key, markup=False, highlight=False)
