"""The HTTP app mounted by `langgraph dev` / LangGraph Server (`http.app` in langgraph.json).

It adds no routes; its lifespan says how callers are authenticated (loudly when no key is
configured: then only loopback clients are served), opens the process services when the server
starts and starts their bookkeeping queue (whose first acts are draining the outbox and the
start-up sweep), and closes both when it stops: queued episodes stay `pending` for the next
start's sweep.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette

log = logging.getLogger("mneme.server")


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Open long-lived clients once per server process; close them on shutdown."""
    import graph.bookkeeping  # noqa: F401  (registers the pipeline the queue runs)
    from graph.auth import keyring
    from memory.services import close_services, get_services

    ring = keyring()  # an unreadable keys file stops the server here, with the fix
    if ring.empty:
        banner = "!" * 78
        log.warning(
            "\n%s\nmneme: NO API KEYS CONFIGURED. The server answers loopback clients only and "
            "does not\nseparate callers: any local caller can name any user_id. Set "
            "MNEME_API_KEYS_FILE\n(`mneme keys add --user U`) before exposing it.\n%s",
            banner,
            banner,
        )
    else:
        log.info(
            "mneme: %d API key(s) configured; every call is bound to its key's user",
            len(ring.users_by_hash),
        )

    try:
        services = await get_services()
        services.bookkeeping.start()
    except Exception as exc:  # the server still starts; runs report the store error
        log.error("mneme could not open its stores at start-up: %s", exc)
    try:
        yield
    finally:
        await close_services()


app = Starlette(lifespan=lifespan)
