"""`mneme pin` and `mneme unpin`: keep one turn whatever sleep would decide, or stop keeping it.

Local by default (the embedded or configured stores, with bookkeeping run before exiting, since
pinning an archived turn rebuilds its vectors); through the server at MNEME_SERVER_URL when a
running server holds the embedded stores (`cli/remote.py`), as its key's user.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import typer

from cli.common import USER_HELP, CommandError, checked_user, console, opened, run, safe
from cli.remote import through_server
from memory.settings import load_settings
from memory.stores.base import NotFound, StoreLocked

UID_HELP = "The turn's uid (as `mneme recall --json` or the API shows it)."


async def set_pin(user: str, uid: str, pinned: bool) -> dict[str, Any]:
    """Pin or unpin the user's episode `uid`; the episode as the API shows it (`MemoryItem`)."""
    from serve.api import InvalidInput, Memory

    settings = load_settings()
    try:
        async with opened(settings, bookkeeping=True) as services:
            memory = Memory(services)
            item = await (memory.pin(user, uid) if pinned else memory.unpin(user, uid))
            return item.model_dump(mode="json")
    except (NotFound, InvalidInput) as exc:
        raise CommandError(str(exc)) from None
    except StoreLocked as locked:
        method = "PUT" if pinned else "DELETE"
        path = f"/memories/{quote(uid, safe='')}/pin"
        answer: dict[str, Any] = await through_server(
            settings, locked, path, {"user": user}, method=method
        )
        return answer


def _report(item: dict[str, Any], pinned: bool, as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps(item))
        return
    what = "pinned" if pinned else "unpinned"
    console.print(f"{what} {safe(item['uid'])}: {safe(item['text'])[:120]}")


def pin(
    uid: str = typer.Argument(..., help=UID_HELP),
    user: str = typer.Option(..., "--user", callback=checked_user, help=USER_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the turn as JSON."),
) -> None:
    """Pin a turn: sleep never archives, expires or forgets it, and it does not decay (an
    archived one is restored)."""
    _report(run(lambda: set_pin(user, uid, True)), True, as_json)


def unpin(
    uid: str = typer.Argument(..., help=UID_HELP),
    user: str = typer.Option(..., "--user", callback=checked_user, help=USER_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the turn as JSON."),
) -> None:
    """Unpin a turn: an ordinary memory again."""
    _report(run(lambda: set_pin(user, uid, False)), False, as_json)
