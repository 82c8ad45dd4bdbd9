"""The agent's clock: the machine's time, unless a caller set another for its context.

The nodes of a turn read the time here (what "these days" means to retrieval, how long ago a
memory was said). `mneme eval answers` asks each question at the time the data gives it (after
the conversation's last session) with `at`; everything else runs on the machine's clock. The
write path keeps its own (`memory.schema.utcnow`): a turn is always recorded at the time it was
really written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from memory.schema import as_utc, utcnow

_fixed: ContextVar[datetime | None] = ContextVar("mneme_clock", default=None)


def now() -> datetime:
    """The current time (aware UTC): the one set for this context by `at`, else the machine's."""
    fixed = _fixed.get()
    return fixed if fixed is not None else utcnow()


@contextmanager
def at(when: datetime) -> Iterator[datetime]:
    """Make `now()` return `when` in this context (and the tasks it starts) for the block."""
    fixed = as_utc(when)
    token = _fixed.set(fixed)
    try:
        yield fixed
    finally:
        _fixed.reset(token)
