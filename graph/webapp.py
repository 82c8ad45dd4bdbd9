"""The HTTP app mounted by `langgraph dev` / LangGraph Server (`http.app` in langgraph.json).

It adds no routes; its lifespan opens the process services and starts the bookkeeping queue
(whose first act is the start-up sweep) when the server starts, and drains nothing but closes
both when it stops: queued episodes stay `pending` for the next start's sweep.
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
    from memory.services import close_services, get_services
    from nodes.background import close_queue, get_queue

    try:
        await get_services()
        get_queue().start()
    except Exception as exc:  # the server still starts; runs report the store error
        log.error("mneme could not open its stores at start-up: %s", exc)
    try:
        yield
    finally:
        await close_queue()
        await close_services()


app = Starlette(lifespan=lifespan)
