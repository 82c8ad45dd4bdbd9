"""The errors every store raises; `memory.stores.base` re-exports them for callers.

They live in their own module so that the per-kind interfaces (`memory.stores.graph`) and the
composite in `base` can both import them without an import cycle.
"""

from __future__ import annotations


class StoreError(RuntimeError):
    """A store failed in a way the user can act on; the message says what to do."""


class StoreUnavailable(StoreError):
    """The store does not answer (down, unreachable, or locked by another process)."""


class StoreLocked(StoreUnavailable):
    """An embedded store another process has open (a running `langgraph dev`, another `mneme`);
    `holder` is that process's pid when known, else ''."""

    def __init__(self, message: str, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class StoreClosed(StoreUnavailable):
    """A store this process already closed (shutting down); a later process will reach it."""


def unavailable(exc: BaseException) -> bool:
    """True when `exc` says the store could not be reached (down, locked, closed, a network or
    disk error, or a driver error that calls itself retryable, such as a Neo4j transient error
    still failing after the store's own retries): worth retrying as it is. False when the store
    answered and refused."""
    if isinstance(exc, StoreUnavailable | OSError | TimeoutError):
        return True
    retryable = getattr(exc, "is_retryable", None)
    return bool(callable(retryable) and retryable())


class SchemaMismatch(StoreError):
    """The store holds data of another schema version or another embedder; re-index or migrate."""


class NotFound(StoreError):
    """A record named by uid does not exist for this tenant."""


def uid_taken(kind: str, uid: str, holder: str = "") -> StoreError:
    """The error for a new record whose uid another record (`holder`) already has."""
    return StoreError(
        f"{kind} uid {uid!r} is already taken by {holder or 'another ' + kind}; "
        f"give each new {kind} a fresh uid"
    )
