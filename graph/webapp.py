"""The HTTP app mounted by `langgraph dev` / LangGraph Server (`http.app` in langgraph.json).

It adds no routes; its lifespan opens the process services when the server starts and starts
their bookkeeping queue (whose first act is the start-up sweep), and closes both when it stops:
queued episodes stay `pending` for the next start's sweep.
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
    from memory.services import close_services, get_services

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
