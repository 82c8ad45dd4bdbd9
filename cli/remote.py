"""Commands through a running mneme server, for when that server holds the embedded vector
index (only one process can open a Qdrant Edge directory).

`mneme recall`, `mneme facts`, `mneme pin` and `mneme unpin` call `through_server` when opening
the stores fails with `StoreLocked`: with MNEME_SERVER_URL set they call the server's REST
routes (`serve/rest.py`) with MNEME_SERVER_KEY, else they stop with a message saying how to
proceed. The only writes are the pin routes (`PUT` / `DELETE /memories/{uid}/pin`).
"""

from __future__ import annotations

from typing import Any

import httpx

from cli.common import CommandError, err
from memory.settings import Settings
from memory.stores.base import StoreLocked

TIMEOUT_S = 60.0


def holder_of(locked: StoreLocked) -> str:
    """'process 1234' or 'another process', for messages."""
    return f"process {locked.holder}" if locked.holder else "another process"


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return str(detail)[:300]


async def through_server(
    settings: Settings,
    locked: StoreLocked,
    path: str,
    params: dict[str, Any],
    *,
    method: str = "GET",
) -> Any:
    """`method` `path` of the server at MNEME_SERVER_URL (the JSON answer); a `CommandError`
    saying what to do when it is unset, unreachable or refuses."""
    url = settings.server_url
    if not url:
        raise CommandError(
            f"the embedded vector index is held by {holder_of(locked)} (a running `langgraph "
            f"dev`?). Set MNEME_SERVER_URL to that server (e.g. http://127.0.0.1:2025) and "
            f"MNEME_SERVER_KEY to your API key to read through it, or stop it"
        )
    headers = {}
    if settings.server_key is not None:
        headers["Authorization"] = f"Bearer {settings.server_key.get_secret_value()}"
    err.print(f"[dim]the stores are held by {holder_of(locked)}; asking the server at {url}[/]")
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=TIMEOUT_S) as http:
            response = await http.request(method, path, params=params)
    except httpx.HTTPError as exc:
        raise CommandError(
            f"MNEME_SERVER_URL={url} does not answer ({type(exc).__name__}); start the server "
            f"that holds the stores there, or fix the URL"
        ) from None
    if response.status_code == 401:
        raise CommandError(
            f"the server at {url} refused the key ({_detail(response)}); set MNEME_SERVER_KEY "
            f"to one of its API keys (`mneme keys add --user U`)"
        )
    if response.status_code == 403:
        raise CommandError(
            f"the server at {url} refused: {_detail(response)}; --user must be the user of "
            f"MNEME_SERVER_KEY"
        )
    if response.status_code == 404:  # the uid named is not one of this user's
        raise CommandError(_detail(response))
    if response.status_code >= 400:
        raise CommandError(
            f"the server at {url} answered {response.status_code}: {_detail(response)}"
        )
    return response.json()


def hit_as_candidate(hit: dict[str, Any]) -> dict[str, Any]:
    """A REST search hit in the shape `mneme recall` prints (`Candidate.as_dict`'s keys it
    uses)."""
    return {
        "kind": hit["kind"],
        "uid": hit["uid"],
        "content": hit["text"],
        "score": hit["score"],
        "sources": hit.get("sources", []),
        "created_at": hit["created_at"],
        "thread_id": "",
    }
