"""What every `mneme` command shares: one console, one error-to-exit path, one progress bar, and
opening the process services for the duration of a command.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memory.embeddings.embedders import EmbedderError
from memory.services import Services, use_services
from memory.settings import ConfigError, Settings, load_settings
from memory.stores.base import StoreError
from memory.tenant import RULE, InvalidTenant, tenant_id

T = TypeVar("T")

console = Console(width=None if sys.stdout.isatty() else 120)
"""Piped or captured output keeps whole tables (rich would cut them to 80 columns)."""
err = Console(stderr=True)

USER_HELP = f"Whose memory (the person the agent remembers; `user_id` in a run's context): {RULE}."
DRAIN_TIMEOUT_S = 600.0


def checked_user(value: str | None) -> str | None:
    """A `--user` value as given when it follows the tenant rule (`memory.tenant`); a usage
    error naming the rule otherwise (never trimmed into another user)."""
    if value is None:
        return None
    try:
        return tenant_id(value, name="--user")
    except InvalidTenant as exc:
        raise typer.BadParameter(str(exc)) from None


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    r"""Text with control characters (ESC, NUL, ...) shown as `\xNN` instead of obeyed by the
    terminal; newlines and tabs stay."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def safe(text: object) -> str:
    """Stored text made safe to print: control characters shown, rich markup escaped."""
    return escape(printable(str(text)))


class CommandError(Exception):
    """A command cannot go on; the message says why and what to do (exit code 2)."""


def fail(message: str) -> typer.Exit:
    """Print `message` as the command's error and return the exit to raise."""
    err.print(f"[bold red]error:[/] {safe(message)}", soft_wrap=True)  # one line, never wrapped
    return typer.Exit(2)


def run(main: Callable[[], Coroutine[object, object, T]]) -> T:
    """Run an async command; settings, store, embedder and command errors print one line and
    exit 2."""
    try:
        return asyncio.run(main())
    except (ConfigError, StoreError, EmbedderError, CommandError) as exc:
        raise fail(str(exc)) from None


def progress_bar(*, transient: bool = False) -> Progress:
    """The progress bar every long command uses."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
    )


@asynccontextmanager
async def opened(
    settings: Settings | None = None, *, setup: bool = True, bookkeeping: bool = False
) -> AsyncIterator[Services]:
    """The process services for one command, installed for `get_services()`; closed after.

    With `bookkeeping`, the services run the bookkeeping graph (`graph.bookkeeping.run_episode`)
    on their background queue (whose start-up sweep finishes what an earlier process left
    pending), drained before the services close.
    """
    pipeline = None
    if bookkeeping:
        from graph.bookkeeping import run_episode

        pipeline = run_episode
    from graph import telemetry

    telemetry.configure()  # spans exported only when an OTLP endpoint is configured
    services = await Services.open(settings or load_settings(), setup=setup, pipeline=pipeline)
    try:
        with use_services(services):
            if bookkeeping:
                services.bookkeeping.start()
            yield services
            if bookkeeping:
                try:
                    async with asyncio.timeout(DRAIN_TIMEOUT_S):
                        await services.bookkeeping.drain()
                except TimeoutError:
                    console.print(
                        "[yellow]bookkeeping still running; the next sweep finishes it[/]"
                    )
    finally:
        await services.close()
