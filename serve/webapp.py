"""The HTTP app mounted by `langgraph dev` / LangGraph Server (`http.app` in langgraph.json).

A FastAPI app, so that its routes' schemas join the server's `/openapi.json`: the memory REST
routes of `serve/rest.py`, behind the same authentication as the graphs
(`enable_custom_route_auth`). Its lifespan says how callers are authenticated (loudly when no key is
configured: then only loopback clients are served), opens the process services when the server
starts, with the bookkeeping graph as their queue's pipeline (this lifespan is the server's
composition root), and starts the queue (whose first acts are draining the outbox and the
start-up sweep) and, with `MNEME_SLEEP_SCHEDULE`, the sleep schedule (`serve/schedule.py`). When
the stores are down at start-up it keeps trying in the background. It closes them when it
stops: queued episodes stay `pending` for the next start's sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NoReturn

from fastapi import FastAPI

from memory.services import Services, close_services, get_services, set_services
from memory.settings import get_settings
from serve.rest import router

log = logging.getLogger("mneme.server")


RETRY_OPEN_S = (1.0, 60.0)
"""First and longest wait between tries to open the stores when they were down at start-up."""


async def open_server_services() -> Services:
    """The server's services: the process settings, the bookkeeping graph as the queue's
    pipeline (the composition root gives it; nothing registers itself)."""
    from graph import telemetry
    from graph.bookkeeping import run_episode

    telemetry.configure()  # spans exported only when an OTLP endpoint is configured
    return await Services.open(get_settings(), pipeline=run_episode)


async def start(services: Services) -> asyncio.Task[None] | None:
    """Start the services' bookkeeping queue and, with `MNEME_SLEEP_SCHEDULE`, the schedule."""
    from serve.schedule import run_schedule

    services.bookkeeping.start()
    if services.settings.sleep_schedule:
        return asyncio.create_task(run_schedule(services), name="mneme-sleep")
    return None


async def open_when_up(started: list[asyncio.Task[None]]) -> None:
    """Try to open the stores until they answer (the server started while they were down),
    then start as a healthy start-up would. A run that came first opened the process default
    itself, without a pipeline (`get_services()`): that one gets the bookkeeping graph."""
    from graph.bookkeeping import run_episode

    wait, longest = RETRY_OPEN_S
    while True:
        await asyncio.sleep(wait)
        try:
            services = await get_services()  # installs the server's, unless a run's is there
        except Exception as exc:
            log.warning("mneme: the stores are still unavailable (%s); retrying in %gs", exc, wait)
            wait = min(longest, wait * 2)
            continue
        if services.bookkeeping.pipeline is None:
            services.bookkeeping.pipeline = run_episode
        schedule = await start(services)
        if schedule is not None:
            started.append(schedule)
        log.info("mneme: the stores are available; bookkeeping started")
        return


STARTUP_FAILURE = 3
"""The exit code of a server that cannot start (uvicorn's own for a failed start-up)."""


def refuse_to_start(cause: str) -> NoReturn:
    """Say in one line why the server cannot start, and stop it.

    A failed start-up under `langgraph dev` would otherwise print a traceback and leave its
    reloader waiting for file changes forever: the reloader (this process's parent, when it is
    one) is asked to stop too.
    """
    log.critical("mneme cannot start: %s", cause)
    for handler in logging.getLogger().handlers:
        handler.flush()
    print(f"mneme cannot start: {cause}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    reloader = multiprocessing.parent_process()
    if reloader is not None and reloader.pid:
        os.kill(reloader.pid, signal.SIGTERM)
    os._exit(STARTUP_FAILURE)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open long-lived clients once per server process; close them on shutdown.

    Settings that are wrong (`ConfigError`: a bad value, an unreadable keys file) or an embedder
    that cannot be there (the default model not installed) stop the server at once with the
    cause; a store that is down does not (turns wait in the outbox, runs report it, and the
    stores are tried again in the background).
    """
    from memory.embeddings.embedders import EmbedderError, build_embedder
    from memory.embeddings.install import preflight
    from memory.settings import ConfigError
    from memory.variables import unknown_variables
    from serve.auth import keyring

    for warning in unknown_variables():
        log.warning("mneme: %s", warning)
    try:
        ring = keyring()  # an unreadable keys file stops the server here, with the fix
        preflight(build_embedder(get_settings()))
    except (ConfigError, EmbedderError) as exc:
        refuse_to_start(str(exc))
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

    tasks: list[asyncio.Task[None]] = []
    try:
        services = await open_server_services()
        set_services(services)  # what the graphs' nodes and the REST routes get
        schedule = await start(services)
        if schedule is not None:
            tasks.append(schedule)
    except Exception as exc:  # the server still starts; runs report the store error
        log.error("mneme could not open its stores at start-up: %s", exc)
        tasks.append(asyncio.create_task(open_when_up(tasks), name="mneme-open"))
    try:
        yield
    finally:
        for task in reversed(tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
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
