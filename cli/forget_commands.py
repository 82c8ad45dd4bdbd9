"""`mneme forget UID`: delete one memory of the user, a turn (with what only it supports) or a
fact, such as a standing instruction listed by `mneme facts --kind instruction --json`.

The same delete as REST's `DELETE /memories/{uid}` and MCP's `forget` (`serve.api.Memory.delete`).
Local by default; through the server at MNEME_SERVER_URL when a running server holds the
embedded stores (`cli/remote.py`), as its key's user.
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


async def delete(user: str, uid: str) -> dict[str, Any]:
    """Delete the user's memory `uid`; what was removed, as the API reports it (`DeleteReport`)."""
    from serve.api import InvalidInput, Memory

    settings = load_settings()
    try:
        async with opened(settings) as services:
            return (await Memory(services).delete(user, uid)).model_dump(mode="json")
    except (NotFound, InvalidInput) as exc:
        raise CommandError(str(exc)) from None
    except StoreLocked as locked:
        path = f"/memories/{quote(uid, safe='')}"
        answer: dict[str, Any] = await through_server(
            settings, locked, path, {"user": user}, method="DELETE"
        )
        return answer


def forget(
    uid: str = typer.Argument(..., help="The memory's uid (`mneme facts --json`, `mneme recall`)."),
    user: str = typer.Option(..., "--user", callback=checked_user, help=USER_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print what was deleted as JSON."),
) -> None:
    """Delete one memory: a fact (a standing instruction, say) or a turn with what only it
    supports."""
    report = run(lambda: delete(user, uid))
    if as_json:
        console.print_json(json.dumps(report))
        return
    console.print(f"forgot {report['kind']} {safe(report['uid'])}")
