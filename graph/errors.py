"""What a caller of the served graphs is told when a node fails: the kind, never the internals.

Store and driver errors carry file paths, addresses and query text, which belong in the server
log, not in a run's result. `shielded(node)` passes the errors meant for callers (a bad
context, bad input, an unknown episode, a consolidation already running in another process)
through unchanged and replaces any other by a `ServiceError` naming the node and an id to find
the full error in the log.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langgraph.errors import GraphBubbleUp

from memory.sleep.leases import Busy
from memory.stores.base import NotFound
from memory.write.episodes import InvalidInput
from nodes.context import ContextError

log = logging.getLogger("mneme.server")

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

PUBLIC = (ContextError, InvalidInput, NotFound, Busy, GraphBubbleUp)
"""Errors whose messages are written for callers (and LangGraph's own control flow)."""


class ServiceError(RuntimeError):
    """A node failed for a reason that is not the caller's; the log has the details."""


def shielded(node: F) -> F:
    """`node`, raising only caller-safe errors (see the module docstring)."""

    @functools.wraps(node)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await node(*args, **kwargs)
        except PUBLIC:
            raise
        except Exception as exc:
            ref = secrets.token_hex(4)
            log.error("node %s failed [error %s]", node.__name__, ref, exc_info=True)
            raise ServiceError(
                f"{node.__name__} failed ({type(exc).__name__}); the server log has the "
                f"details under error {ref}"
            ) from None

    return wrapper  # type: ignore[return-value]
