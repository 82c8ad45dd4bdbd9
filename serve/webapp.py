"""The HTTP app mounted by `langgraph dev` / LangGraph Server (`http.app` in langgraph.json).

A FastAPI app, so that its routes' schemas join the server's `/openapi.json`: the memory REST
routes of `serve/rest.py`, behind the same authentication as the graphs
(`enable_custom_route_auth`). Its lifespan says how callers are authenticated (loudly when no key is
configured: then only loopback clients are served), opens the process services when the server
starts and starts their bookkeeping queue (whose first acts are draining the outbox and the
start-up sweep) and, with `MNEME_SLEEP_SCHEDULE`, the sleep schedule (`serve/schedule.py`), and
closes them when it stops: queued episodes stay `pending` for the next
start's sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from serve.rest import router

log = logging.getLogger("mneme.server")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open long-lived clients once per server process; close them on shutdown."""
    import graph.bookkeeping  # noqa: F401  (registers the pipeline the queue runs)
    from memory.services import close_services, get_services
    from memory.settings import unknown_variables
    from serve.auth import keyring
    from serve.schedule import run_schedule

    for warning in unknown_variables():
        log.warning("mneme: %s", warning)
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

    schedule: asyncio.Task[None] | None = None
    try:
        services = await get_services()
        services.bookkeeping.start()
        if services.settings.sleep_schedule:
            schedule = asyncio.create_task(run_schedule(services), name="mneme-sleep")
    except Exception as exc:  # the server still starts; runs report the store error
        log.error("mneme could not open its stores at start-up: %s", exc)
    try:
        yield
    finally:
        if schedule is not None:
            schedule.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await schedule
        await close_services()


app = FastAPI(
    title="mneme",
    summary="Long-term memory for agents: the memory REST routes",
    lifespan=lifespan,
    docs_url=None,
    redoc_url=None,
    openapi_url=None,
)
"""`langgraph dev` serves `/docs` and `/openapi.json` itself, with these routes merged in."""
# The routes are added one by one rather than with `include_router`: FastAPI 0.165 includes a
# router as one lazy `_IncludedRouter` entry, which the server's per-route auth middleware
# cannot wrap ("route ... has no app").
app.router.routes.extend(router.routes)
