"""What a bookkeeping stage does when it fails: log it, say so in the episode's notes, and carry
on with what it still can. A store that is down is not a stage failure: it is raised, and the
queue's bounded retry waits for the store."""

from __future__ import annotations

import logging

from memory.stores.base import StoreUnavailable

log = logging.getLogger("mneme.bookkeeping")


def stage_note(stage: str, exc: BaseException) -> str:
    """The note for a failed stage (re-raises `StoreUnavailable` and `OSError`)."""
    if isinstance(exc, StoreUnavailable | OSError):
        raise exc  # wait for the store: the retry handles it
    log.warning("bookkeeping stage %s failed; doing what it still can", stage, exc_info=exc)
    return f"{stage}: {type(exc).__name__}: {str(exc)[:200]}"
